"""A plugin with a typo: pdx_register_backend (no s) is no hook of pdx's."""

from pdx import hookimpl


@hookimpl
def pdx_register_backend(register):
    raise AssertionError("never called")
