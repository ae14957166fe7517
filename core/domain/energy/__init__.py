"""Energy per token, per phase: meters (``pdx_register_meters``) read around every timed
repetition, the idle power before the run, and each test's joules per token, watts and cost.

- :mod:`pdx.contract.meter`: what a meter and a meter source are (the plugin contract);
- :mod:`pdx.measure.energy.zeus_meters`: pdx's own, over Zeus (NVML, AMD SMI, RAPL, Apple SoC);
- :mod:`pdx.measure.energy.trace`: the power trace a run's windows are read from;
- :mod:`pdx.measure.energy.session`: a run's measurement (idle, lengthening, per-test records);
- :mod:`pdx.domain.energy.figures`: what a stored record says (J/token, W, tokens/J, cost).
"""
