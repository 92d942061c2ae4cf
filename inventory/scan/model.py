"""What a scan finds: the result types of `inventory scan`, and its errors."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from inventory.errors import InventoryError
from oracle.store import RuntimeOutcome

DTYPE_NAMES = {
    "f16": "float16",
    "bf16": "bfloat16",
    "f32": "float32",
    "f64": "float64",
    "si8": "int8",
    "si32": "int32",
    "si64": "int64",
    "ui8": "uint8",
    "i1": "bool",
}


def dtype_name(raw: str | None) -> str:
    return DTYPE_NAMES.get(raw or "", raw or "?")


class Status(StrEnum):
    """How a registry fact compares with what a scan read."""

    AGREE = "agree"
    DISAGREE = "disagree"
    CANNOT_TELL = "cannot-tell"
    NOT_TRACED = "not-traced"
    INFO = "info"


class ScanError(InventoryError):
    """The scan cannot start (a path is missing, nothing to scan); one line for the user."""


class BundleError(InventoryError):
    """One bundle cannot be read; the message is one line naming the file and the problem."""


# ---- results -----------------------------------------------------------------------------------


@dataclass
class Composite:
    """One composite kind as the entry point uses it."""

    kind: str
    call_sites: int  # invoke ops reaching it from the entry point
    nested: int  # invocations from inside other composites' bodies, per entry-point run
    bodies: list[dict[str, Any]]  # one per distinct body: name, call sites, input types
    declared_by: str  # "composite_decl", "template_op", or "name" (no declaration: a guess)


@dataclass
class Entry:
    """One public graph (an entry point) with its invokes resolved."""

    name: str
    inputs: list[dict[str, Any]]
    outputs: list[dict[str, Any]]
    ops: dict[str, int]  # plain ops of the entry point (non-composite callees inlined)
    composites: list[Composite]
    inlined: dict[str, int]  # every op per run, composite bodies expanded per call site
    dynamic: list[str]  # inputs/outputs with a dynamic (`?`) axis
    dynamic_results: int  # ops of the entry point whose result has a dynamic axis
    unresolved: dict[str, int]  # invoke targets not in the bundle


@dataclass
class BundleScan:
    path: str
    name: str
    error: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)  # metadata.json as stored
    producer: str | None = None
    producer_core: str | None = None
    asset_version: str | None = None
    created: str | None = None
    integrity: str = ""
    reader: dict[str, Any] = field(default_factory=dict)
    attempts: list[str] = field(default_factory=list)
    core_metadata: dict[str, Any] = field(default_factory=dict)
    entries: list[Entry] = field(default_factory=list)
    composite_bodies: int = 0
    weights: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    exporter: str | None = None  # inferred from the producer stamp
    loads: list[RuntimeOutcome] = field(default_factory=list)  # per runtime tried
    # every regular file of the bundle: {path (relative), bytes, sha256}, for a bill of materials
    files: list[dict[str, Any]] = field(default_factory=list)
    # the runtimes it must load on: --runtime, else every runtime from the core its producer
    # stamp names (a 0.4.0 asset, stamped with none, from 1.0.0b1 on)
    deployment: tuple[str, ...] = ()
    deployment_source: str = ""
    # not read only because no reader's environment could be built: an answer to come, not a
    # bundle that cannot be read (exit 3, not 2)
    unbuilt: bool = False

    @property
    def not_loading(self) -> list[RuntimeOutcome]:
        """The deployment runtimes that refuse it or crash on it (a runtime not tried, or one
        with no lasting answer, is neither)."""
        return [
            o
            for o in self.loads
            if o.core in self.deployment and not o.loads and o.outcome not in ("not-run", "flaky")
        ]

    @property
    def ok(self) -> bool:
        return self.error is None

    def composite_uses(self, kind: str) -> int:
        return sum(
            c.call_sites + c.nested for e in self.entries for c in e.composites if c.kind == kind
        )

    def op_count(self, fragment: str) -> int:
        return sum(
            n for e in self.entries for op, n in e.inlined.items() if fragment in op.split(".")[-1]
        )


@dataclass
class Finding:
    subject: str
    status: Status
    traced: str
    scanned: str
    reason: str


@dataclass
class RegistryLink:
    bundle: str | None  # the registry entry, None when nothing matched
    scans: list[str]
    matched_by: dict[str, str]  # scan path -> "name", "fingerprint", "name and fingerprint"
    files_missing: list[str]
    findings: list[Finding]
    cannot_establish: list[str]


@dataclass
class ScanReport:
    scans: list[BundleScan]
    links: list[RegistryLink] | None
    registry: str | None
    warnings: list[str] = field(default_factory=list)

    @property
    def errors(self) -> list[BundleScan]:
        return [s for s in self.scans if not s.ok]

    @property
    def not_loading(self) -> list[BundleScan]:
        """The bundles a deployment runtime does not load (exit 1)."""
        return [s for s in self.scans if s.ok and s.not_loading]

    @property
    def disagreements(self) -> int:
        return sum(
            1 for link in self.links or [] for f in link.findings if f.status == Status.DISAGREE
        )
