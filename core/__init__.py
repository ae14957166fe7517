"""pdx: prefill and decode, measured apart, on any engine."""

from pdx.contract import moved
from pdx.contract.hookspecs import hookimpl

moved.install()  # pdx 0.1's import paths (pdx.backend, pdx.errors, ...) still load

__version__ = "0.1.0"

__all__ = ["__version__", "hookimpl"]
