"""Energy's measuring half: pdx's own meters, the power trace and a run's energy session (what a
record says is :mod:`pdx.domain.energy`; what a meter is, :mod:`pdx.contract.meter`)."""
