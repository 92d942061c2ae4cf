"""The summary block every answering document carries: how many bundles take each level, and per
bundle its level and the finding that sets it (its top reason). Every format renders this one
block first (the terminal's summary line, the JSON `summary`, the markdown summary table), so the
formats cannot disagree on the headline."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from inventory.verdict import IGNORED, REEXPORT_ORDER, rank


@dataclass(frozen=True)
class BundleLine:
    bundle: str
    level: str  # a re-export level (required, inconclusive, optional, no), or ignored (an
    # accepted risk: its answer is in the reason)
    reason: str  # the findings that set the level ("#28 (does-not-load)"), "-" when none


@dataclass(frozen=True)
class Summary:
    bundles: tuple[BundleLine, ...]  # worst level first, then as the document lists them

    @property
    def counts(self) -> dict[str, int]:
        """Bundles per level, every re-export level present (0 included), worst first; then
        the bundles whose answer is an accepted risk, when there are any."""
        counts = {
            str(level): sum(1 for b in self.bundles if b.level == level) for level in REEXPORT_ORDER
        }
        ignored = sum(1 for b in self.bundles if b.level == IGNORED)
        return {**counts, IGNORED: ignored} if ignored else counts

    def line(self, unit: str = "bundle") -> str:
        """`1 required, 1 inconclusive, 2 optional, 1 no of 5 bundles`."""
        n = len(self.bundles)
        counts = ", ".join(f"{c} {level}" for level, c in self.counts.items())
        return f"{counts} of {n} {unit}{'' if n == 1 else 's'}"

    def to_json(self) -> dict:
        return {
            "counts": self.counts,
            "total": len(self.bundles),
            "bundles": [
                {"bundle": b.bundle, "level": b.level, "reason": b.reason} for b in self.bundles
            ],
        }


def summarise(lines: Iterable[BundleLine]) -> Summary:
    """Ordered by level (required, inconclusive, optional, no), the document's order kept within
    a level (the sort is stable)."""
    return Summary(tuple(sorted(lines, key=lambda b: rank(b.level))))
