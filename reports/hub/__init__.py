"""A site straight from a results folder (``pdx publish --bundles``) and the hub's own pages."""
