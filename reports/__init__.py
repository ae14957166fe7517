"""HTML comparison reports and static sites rendered from the registry."""
