"""The contract at the bottom of pdx: the record's types (:mod:`pdx.contract.record`), and the types
plugins hand to pdx (an importer, a quantiser, a chart, a page, a server backend's request records),
checked where pdx receives them; this package imports nothing of pdx's but its errors. The rest of the contract
keeps the import paths plugin authors already use: :mod:`pdx.contract.backend`, :mod:`pdx.contract.meter`,
:mod:`pdx.contract.errors`, :mod:`pdx.contract.hookspecs` (which imports only the contract);
:mod:`pdx.registry.importers.kit`,
:mod:`pdx.domain.synth.quantizers` and :mod:`pdx.domain.serving.records` re-export the types here beside their
helpers, and :mod:`pdx.reports.chartset` and :mod:`pdx.reports.pageset` (the chart and page types'
first import paths) re-export them.
"""
