"""The catalogs as data and their typed reads: converter releases (`converters.toml`), fix records
and their kinds (`fixes.toml`), probe regimes, value conditions, the converter's own tests
(`conformance.toml`), runtimes, and the data files' schema.
"""
