"""One renderer per output format; each takes a service's plain result and returns text."""
