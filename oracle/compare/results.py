"""What a comparison found: plain result types, shared by the comparison and the result store
(neither imports the other for them), with their JSON form.

Statuses are str-valued enums: they print and serialise as the same strings as before.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from oracle.compare.spec import Pipeline, ProbeSpec
from oracle.compare.stats import OutputStats, SideStats


class Identity(StrEnum):
    """One stage (emitted or shipped) of a probe under two converters."""

    IDENTICAL = "identical"
    DIFFERS = "differs"
    # emitted stage only: 0.4.3's to_coreai() already returns the optimized program
    NOT_COMPARABLE = "not-comparable"
    OLD_CANNOT_CONVERT = "old-cannot-convert"
    NEW_CANNOT_CONVERT = "new-cannot-convert"
    BOTH_CANNOT_CONVERT = "both-cannot-convert"


class Outputs(StrEnum):
    """Whether both shipped programs' outputs were run, and compared equal bit for bit."""

    BIT_IDENTICAL = "bit-identical"
    DIFFER = "differ"
    NOT_RUN = "not-run"


@dataclass(frozen=True)
class Side:
    converter: str
    packages: dict[str, str]
    ok: bool
    stage: str = ""  # where it failed: export, convert, optimize, save, worker
    error: str = ""
    files: dict[str, str] = field(default_factory=dict)
    digest: str = ""
    emitted_is_optimized: bool = False


@dataclass(frozen=True)
class Measurement:
    runtime: str
    attempts: list[str]  # runtimes tried before this one, and why they were left
    ok: bool
    error: str = ""
    stats: OutputStats | None = None
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Alone:
    """The one side that converts, run by itself against the torch fp32 reference on its own
    runtime: when the other side cannot convert, there is no pair to compare, yet whether the
    program that does exist is right is still a finding (a fix that converts, but wrong)."""

    side: str  # "old" or "new"
    runtime: str
    ok: bool
    error: str = ""
    stats: SideStats | None = None
    files: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ProbeResult:
    spec: ProbeSpec
    old: Side
    new: Side
    emitted: Identity
    shipped: Identity
    measurement: Measurement | None
    evidence: str
    cached: bool = False
    alone: Alone | None = None  # set when exactly one side converts

    @property
    def outputs(self) -> Outputs:
        m = self.measurement
        if m is None or not m.ok or m.stats is None:
            return Outputs.NOT_RUN
        return Outputs.BIT_IDENTICAL if m.stats.bit_identical else Outputs.DIFFER


def to_json(result: ProbeResult) -> dict[str, Any]:
    data = asdict(result)
    data["spec"] = result.spec.to_json()
    data["outputs"] = result.outputs
    return data


def from_json(data: dict[str, Any]) -> ProbeResult:
    s = data["spec"]
    spec = ProbeSpec(
        s["construct"],
        s["params"],
        s["dtype"],
        Pipeline(**s["pipeline"]),
        s["values"],
        s["seed"],
        s.get("tensors", {}),
        s.get("checkpoint", ""),
    )
    m = data.get("measurement")
    measurement = None
    if m is not None:
        stats = OutputStats(**m["stats"]) if m.get("stats") else None
        measurement = Measurement(
            m["runtime"], m["attempts"], m["ok"], m.get("error", ""), stats, m.get("files", {})
        )
    a = data.get("alone")
    alone = None
    if a is not None:
        alone = Alone(
            a["side"],
            a["runtime"],
            a["ok"],
            a.get("error", ""),
            SideStats(**a["stats"]) if a.get("stats") else None,
            a.get("files", {}),
        )
    return ProbeResult(
        spec,
        Side(**data["old"]),
        Side(**data["new"]),
        Identity(data["emitted"]),
        Identity(data["shipped"]),
        measurement,
        data["evidence"],
        data.get("cached", False),
        alone,
    )
