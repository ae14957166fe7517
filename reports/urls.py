"""The one allow-list for links that come from stored data (a bundle, an import): only plain web
links (http, https) become an ``href``; anything else (``javascript:``, ``data:``, a relative path a
bundle chose) is shown as text or not at all."""

from __future__ import annotations


def web_url(url: object) -> str | None:
    """``url`` where it is an http(s) link, else None."""
    if not isinstance(url, str):
        return None
    url = url.strip()
    return url if url.lower().startswith(("https://", "http://")) and url.isprintable() else None
