"""The domain layer: pure functions over records and catalogs (statistics, ceilings, models,
hardware figures, serving analysis, synthetic models). Nothing here measures, stores or shows."""
