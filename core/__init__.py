"""pdx: prefill and decode, measured apart, on any engine."""

from pdx.contract.hookspecs import hookimpl

__version__ = "0.1.0"

__all__ = ["__version__", "hookimpl"]
