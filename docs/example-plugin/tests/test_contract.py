"""The pdx backend contract, run against this plugin's backend: the checks every built-in passes."""

from pdx.testing import BackendContract


class TestExampleLlamaServer(BackendContract):
    backend = "example-llama-server"
