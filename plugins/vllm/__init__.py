"""vLLM backends (offline and server), registered once their issue lands."""
