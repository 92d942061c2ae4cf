"""The oracle: what does converter B do differently from converter A to a probe, on one runtime.

Nothing here knows about bundles. Only `oracle/worker.py` imports coreai-torch / coreai-core,
and it runs inside a converter environment, never in the main process.
"""
