"""What every layer above the contract uses and a plugin author does not need: paths, files,
units, secrets, worker pools and the plugin manager."""
