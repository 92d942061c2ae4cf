"""One release step of a bundle's whole-program check: what its two releases' programs do, how
many regions differ, the records of the step and the step's level. Built once, with its level,
by `inventory.verify.service`; `to_json` is its one JSON form (`verify --json`'s `steps`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory.verdict import Reexport, Verdict


@dataclass(frozen=True)
class StepCheck:
    step: str  # "old->new"
    old: str
    new: str
    # each stage's comparison as the chain stored it, without its normalised texts
    emitted: dict[str, Any] | None
    shipped: dict[str, Any] | None
    regions: int
    unrecorded_regions: int
    records: tuple[str, ...]  # the ids of the records that ship in the step
    runtime: str | None  # the model-level run's, when it measured this step
    drift: tuple[dict[str, Any], ...] | None  # the model-level run's rows, one per output
    evidence: str | None
    verdict: Verdict
    reexport: Reexport
    reason: str
    drift_source: str | None  # the model-level run, the region cuts, or None: nothing measured

    @property
    def shipped_identity(self) -> str | None:
        return (self.shipped or {}).get("identity")

    @property
    def drift_rows(self) -> list[dict[str, Any]] | None:
        return list(self.drift) if self.drift is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "from": self.old,
            "to": self.new,
            "emitted": self.emitted,
            "shipped": self.shipped,
            "regions": self.regions,
            "unrecorded_regions": self.unrecorded_regions,
            "records": list(self.records),
            "runtime": self.runtime,
            "drift": self.drift_rows,
            "evidence": self.evidence,
            "verdict": self.verdict,
            "reexport": self.reexport,
            "reason": self.reason,
            "drift_source": self.drift_source,
        }
