"""What a construct module declares: plain data and functions, importable without torch.

A construct module (`oracle/constructs/<kind>.py`) ends with `CONSTRUCT = Construct(...)`. Its
probe builder and detectors import torch inside their bodies, so the main process can plan probes
(parameters, labels) and a scan can read signatures without importing torch, while the same file
is the probe library inside converter environments and the detector library of a trace.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# builder(params, generator, values) -> _probe.Built; the generator is a torch.Generator. A
# construct with a `checkpoint` map also takes `tensors` ({probe tensor: numpy array}) with values
# "checkpoint": that instance's own tensors, read from the bundle's checkpoint.
Builder = Callable[..., Any]
# detector(node, sizes) -> _graph.Found | None; node is a torch.fx.Node, sizes a _graph.Sizes
Detector = Callable[[Any, Any], Any]
Label = Callable[[dict[str, Any], str], str]


@dataclass(frozen=True)
class Reader:
    """A detector and the aten (or coreai) overloads it reads."""

    ops: tuple[str, ...]
    detect: Detector


@dataclass(frozen=True)
class ScanSeen:
    """What a scan saw of one registry entry's bundle besides a construct's own count: the
    inputs a construct's `ScanSignature.fewer` reasons from. Plain values, so the construct
    modules need no import of the inventory (the oracle never imports it)."""

    # the recipe runs coreai-core's optimize() before saving
    optimized: bool
    # the decomposition table the recipe exports with ("coreai": coreai-torch's own)
    decompositions: str
    # some scanned file carries a producer stamp (coreai-core 1.0.0b2 and later write one)
    stamped: bool
    # op_count(fragment): plain ops whose name contains `fragment`, over every scanned file
    op_count: Callable[[str], int]


# fewer(seen) -> why a scan can count fewer of a construct than the trace recorded; empty: the
# missing ones are a real disagreement between the bundle and its trace.
Fewer = Callable[[ScanSeen], list[str]]


@dataclass(frozen=True)
class ScanSignature:
    """What a scan of a shipped bundle counts for this construct: call sites of a composite
    declaration, or plain ops whose name contains one of `ops`. With neither, `unseen` says why
    a scan cannot see the construct. `fewer` is what the construct knows about how a lowering
    or the pipeline can hide instances from that count (kept here, beside the count it
    explains, so a new construct brings its own reasoning)."""

    composite: str | None = None
    ops: tuple[str, ...] = ()
    unseen: str = ""
    fewer: Fewer | None = None

    @property
    def visible(self) -> bool:
        return bool(self.composite or self.ops)


@dataclass(frozen=True)
class Construct:
    kind: str
    # No list of fix records here: a record names its constructs in oracle/catalog/fixes.toml, the
    # one
    # place that link is written (a second copy here would have to be kept in sync by hand).
    # The instance parameters its probe takes (a trace may record more, e.g. module paths).
    params: tuple[str, ...]
    build: Builder | None
    readers: tuple[Reader, ...]
    scan: ScanSignature
    # Parameters that do not separate traced instances: a group takes its first member's values
    # (graph order) and lists the distinct values of the first one as `shapes_seen`.
    representative: tuple[str, ...] = ()
    label: Label | None = None
    # Why it has no probe or no detector, when it has none (a scan-only kind).
    why_incomplete: str = ""
    # The probe tensors `--weights` reads from a checkpoint for each traced module: probe tensor
    # name -> oracle.infra.checkpoint.TensorSource (a suffix under the instance's module or its
    # producer's). Empty: the construct's probe cannot take real tensors.
    checkpoint: dict[str, Any] = field(default_factory=dict)
    # Probe parameters that choose input values, not the graph (e.g. atan2's `pairs`): a trace
    # cannot read them, so no traced instance carries them; only a regime sets them.
    value_params: tuple[str, ...] = ()

    @property
    def has_probe(self) -> bool:
        return self.build is not None

    @property
    def detected(self) -> bool:
        return bool(self.readers)


def arrives_decomposed(kind: str) -> Fewer:
    """The `fewer` of a composite that a pipeline exporting with other decompositions than
    coreai-torch's own turns into plain ops (no call site left to count)."""

    def fewer(seen: ScanSeen) -> list[str]:
        if seen.decompositions == "coreai":
            return []
        return [
            f"the pipeline decomposes with {seen.decompositions} decompositions: a {kind} "
            f"arrives as plain ops"
        ]

    return fewer


DTYPE_SHORT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16"}


def dims(value: Any) -> str:
    """A shape or size list as `AxBxC`."""
    if isinstance(value, list | tuple):
        return "x".join(str(v) for v in value)
    return str(value)


def generic_label(kind: str, params: dict[str, Any], short: str) -> str:
    shown = " ".join(f"{k}={dims(v)}" for k, v in sorted(params.items()))
    return f"{kind} {shown} {short}"
