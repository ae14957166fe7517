"""Serving benchmarks' measuring half: the streaming client, load shapes driven over HTTP, managed
servers and the server backends (the arithmetic is :mod:`pdx.domain.serving`)."""
