"""A plugin whose engine is missing: importing it fails."""

import pdx_no_such_engine  # noqa: F401
