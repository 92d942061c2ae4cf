"""Recipe tracing: build a bundle's module the way its recipe does, export it, read the graph."""
