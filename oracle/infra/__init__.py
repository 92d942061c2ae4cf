"""Shared infrastructure both the oracle and the inventory use: the settings read from the
environment, where the store and caches lie, bounded input files and TOML reads, atomic writes,
scratch folders, progress callbacks, file digests and evidence that names no machine.
"""
