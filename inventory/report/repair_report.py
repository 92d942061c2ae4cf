"""The renderer for `repair`: what was rewritten, and what shows the repair holds."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from inventory.repair import RepairReport


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def repair_text(r: RepairReport) -> list[str]:
    loc = r.locations
    w = r.weights["original"]
    before = "; ".join(f"{o.core} {o.describe()}" for o in r.original)
    after = "; ".join(f"{o.core} {o.describe()}" for o in r.repaired)
    return [
        f"repaired     {r.source} -> {r.out}",
        f"locations    {loc['ops']} op and {loc['block_args']} block-argument locations "
        f"rewritten with coreai-core {r.reader} ({_counts(loc['locations_before'])} -> "
        f"{_counts(loc['locations_after'])}); {loc['op_ids_kept']} coreai op ids kept",
        f"producer     {r.producer} (re-saved with coreai-core {r.stamper})",
        f"before       {before}",
        f"after        {after} (every function run on the original's seeded inputs)",
        f"weights      byte-identical: {w['fingerprint']} ({w['constants']} tensors, "
        f"{w['bytes']} bytes) in both, read with {r.weights['read_with']}",
        f"outputs      bit-identical on {r.outputs['runtime']}: {r.outputs['arrays']} array(s) "
        f"of {', '.join(r.outputs['functions'])}, seed {r.outputs['seed']}",
        f"evidence     {r.evidence}",
    ]
