"""Engine plugins shipped with pdx; each registers through the `pdx` entry-point group."""
