"""The oracle: what does converter B do differently from converter A to a probe, on one runtime.

Nothing here knows about the registry of shipped bundles. Its parts are sub-packages by concept
(`catalog`, `envs`, `workers`, `clients`, `store`, `executors`, `compare`, `constructs`, and
`infra`, the shared infrastructure), with the error root, the session and the load check at the
top; docs/architecture.md tables who may import whom, and tests/project/test_layering.py holds it.
Only code that runs inside a converter environment (`oracle/workers/`, and the probe builder of
coreai-torch's own ops, `oracle/constructs/quantize.py`) imports coreai-torch / coreai-core,
never the main process.
"""
