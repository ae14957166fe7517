"""A results hub: runs contributed as bundle files to a shared folder (a git repository).

A contributor writes each run as one redacted bundle named by its content id
(:mod:`pdx.api.contrib.submit`); the repository's CI checks every file
(:mod:`pdx.api.contrib.verify`) and builds the site straight from the folder
(:mod:`pdx.registry.hub_folder`, then :func:`pdx.reports.site.builder.publish`). See
docs/hub.md for the recipe.
"""
