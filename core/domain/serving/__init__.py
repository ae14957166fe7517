"""Serving benchmarks shared by every OpenAI-compatible server: the streaming
client (one selector loop, kernel receive timestamps), load shapes, request
records, latency and goodput figures, scenarios, and the base of the server
backends (managed or ``--url``)."""
