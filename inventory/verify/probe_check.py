"""The probes of a bundle's traced instances against its whole program: per release step, how
many were probed, which change (with the records that explain each) and which fail under both
releases; and their sum over the steps, the bundle's. Built once by
`inventory.verify.service.reconcile_step`; `to_json` is its one JSON form (`verify --json`'s
`probes`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory.verdict import Verdict


@dataclass(frozen=True)
class ProbeChange:
    probe: str  # the regime's id
    construct: str
    verdict: Verdict
    explained_by: tuple[str, ...]
    step: str

    def to_json(self) -> dict[str, Any]:
        return {
            "probe": self.probe,
            "construct": self.construct,
            "verdict": self.verdict,
            "explained_by": list(self.explained_by),
            "step": self.step,
        }


@dataclass(frozen=True)
class ProbeCheck:
    probed: int = 0
    changed: tuple[ProbeChange, ...] = ()
    failing_both: tuple[str, ...] = ()  # the regimes' ids

    @classmethod
    def over(cls, steps: list[ProbeCheck]) -> ProbeCheck:
        """The bundle's: every step's probes; a regime failing in several steps once."""
        return cls(
            sum(s.probed for s in steps),
            tuple(c for s in steps for c in s.changed),
            tuple(sorted({i for s in steps for i in s.failing_both})),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "probed": self.probed,
            "changed": [c.to_json() for c in self.changed],
            "failing_both": list(self.failing_both),
        }
