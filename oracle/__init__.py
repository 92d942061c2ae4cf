"""The oracle: what does converter B do differently from converter A to a probe, on one runtime.

Nothing here knows about the registry of shipped bundles. Only the in-environment scripts
(`oracle/workers/probe_worker.py` for probes, `oracle/workers/scan_worker.py`, which parses a
converted asset with
coreai-core's own bindings) import coreai-torch / coreai-core, and they run inside a converter
environment, never in the main process.
"""
