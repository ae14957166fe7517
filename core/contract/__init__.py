"""The contract at the bottom of pdx: the types plugins hand to pdx (an importer, a quantiser), checked
where pdx receives them; this package imports nothing of pdx's but its errors. The rest of the
contract keeps the import paths plugin authors already use: :mod:`pdx.backend`, :mod:`pdx.energy.meter`,
:mod:`pdx.errors`, :mod:`pdx.hookspecs`; :mod:`pdx.importer` and :mod:`pdx.synth.quantizers` re-export
the types here beside their helpers.
"""
