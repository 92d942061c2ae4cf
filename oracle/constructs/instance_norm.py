"""Instance norm: a composite coreai-core declares, which a scan can count; no fix touches it.

It has no probe and no detector: no converter release changed its lowering (no fix record names
it). A scan still counts its composite call sites, so one found in a shipped bundle is reported
(as something the tracer does not detect) rather than passed over.
"""

from __future__ import annotations

from oracle.constructs._construct import Construct, ScanSignature, arrives_decomposed

CONSTRUCT = Construct(
    kind="instance_norm",
    params=(),
    build=None,
    readers=(),
    scan=ScanSignature(composite="instance_norm", fewer=arrives_decomposed("instance_norm")),
    why_incomplete="scan-only: no fix record touches instance norm, so nothing to probe or "
    "trace; a scan counts its composite",
)
