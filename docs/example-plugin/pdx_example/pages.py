"""A page for published sites: how many runs each backend has, linked from every page's navigation."""


def backends_page(site):
    counts: dict[str, int] = {}
    for run in site.listed:
        counts[run["backend"]] = counts.get(run["backend"], 0) + 1
    rows = [{"backend": backend, "runs": n} for backend, n in sorted(counts.items())]
    site.page("backends.html", "example_backends.html", "Runs by backend", {"backends": rows}, rows=rows)
