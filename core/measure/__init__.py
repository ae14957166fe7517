"""The measure layer: what runs and times things on this machine (the runner, conditions, the
environment, probes and detection, the serving client, energy sessions, where ceilings come from)."""
