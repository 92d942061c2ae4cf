"""The renderings of `repair`: what was rewritten, and what shows the repair holds. One list of
findings (`_lines`) is what every format says: the table prints it, the markdown lists it, the
JSON holds the typed report whole."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from rich.console import Group
from rich.text import Text

if TYPE_CHECKING:
    from inventory.repair import RepairReport


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def _lines(r: RepairReport) -> list[tuple[str, str]]:
    loc = r.locations
    w = r.weights.original
    before = "; ".join(f"{o.core} {o.describe()}" for o in r.original)
    after = "; ".join(f"{o.core} {o.describe()}" for o in r.repaired)
    return [
        ("repaired", f"{r.source} -> {r.out}"),
        (
            "locations",
            f"{loc.ops} op and {loc.block_args} block-argument locations "
            f"rewritten with coreai-core {r.reader} "
            f"({_counts(loc.locations_before)} -> {_counts(loc.locations_after)}); "
            f"{loc.op_ids_kept} coreai op ids kept",
        ),
        ("producer", f"{r.producer} (re-saved with coreai-core {r.stamper})"),
        ("before", before),
        ("after", f"{after} (every function run on the original's seeded inputs)"),
        (
            "weights",
            f"byte-identical: {w.fingerprint} ({w.constants} tensors, {w.bytes} bytes) "
            f"in both, read with {r.weights.read_with}",
        ),
        (
            "outputs",
            f"bit-identical on {r.outputs.runtime}: {r.outputs.arrays} array(s) of "
            f"{', '.join(r.outputs.functions)}, seed {r.outputs.seed}",
        ),
        ("evidence", r.evidence),
    ]


def repair_text(r: RepairReport) -> list[str]:
    return [f"{label:<12} {text}" for label, text in _lines(r)]


def repair_table(r: RepairReport) -> Group:
    return Group(*(Text(line) for line in repair_text(r)))


def repair_markdown(r: RepairReport) -> str:
    from inventory.report.text import md_text

    rows = "\n".join(f"- **{label}**: {md_text(text)}" for label, text in _lines(r))
    return f"## inventory repair\n\n{rows}\n"


def repair_record(r: RepairReport) -> dict[str, Any]:
    return asdict(r)
