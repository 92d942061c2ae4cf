"""The modules allowed to import coreai: the layering test holds the tree to them, and the
error-root test imports every other module without a converter."""

from __future__ import annotations

# Code that runs inside a converter environment (or, for the trace worker, a subprocess that
# borrows the converter's get_decomp_table()): the only places coreai may be imported.
COREAI_ALLOWED = {
    "oracle.workers.probe_worker": "the in-environment probe worker",
    "oracle.workers.scan_worker": "the in-environment bundle reader",
    "oracle.workers.asset_worker": "the in-environment asset loader and location rewriter",
    "oracle.workers.program_worker": (
        "the in-environment whole-program converter (inventory verify)"
    ),
    "oracle.workers.location_worker": (
        "the in-environment debug-location reader (scripts/conformance)"
    ),
    "oracle.workers.warm_up": "a new environment's warm-up (its bytecode), run in env",
    "oracle.constructs.quantize": "the probe of coreai-torch's own quantize ops (built in env)",
    "inventory.trace.trace_worker": "the trace subprocess: get_decomp_table() only",
}
