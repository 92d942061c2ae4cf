"""A drafted record's measured columns, in words: does the change reach a shipped program,
what does it do to the values (old and new side), and under which conditions does it change a
program (which regimes of its constructs change and which do not, and the parameter that
separates them when one does). Plain functions over the step's observations."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from inventory.draft.observe import LIBRARY, REGISTRY, Change, Observed
from inventory.verdict import Verdict
from oracle.catalog import Regime

# What a probe's verdict says of its values, in the order the column lists them.
_VALUES = (
    (Verdict.VALUES_IDENTICAL, "values identical"),
    (Verdict.SHAPE_CHANGE, "shapes change"),
    (Verdict.VALUES_MOVE, "values move"),
    (Verdict.OLD_CANNOT_CONVERT, "the old side cannot convert"),
    (Verdict.NEW_CANNOT_CONVERT, "the new side cannot convert"),
    (Verdict.INCONCLUSIVE, "inconclusive"),
)
NAMES_SHOWN = 8


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def values(changes: Sequence[Change]) -> str:
    """`values move in 3 (max |old-new| 0.0117); values identical in 11`: the verdicts of the
    record's changed probes, counted, with the largest drift where values move."""
    parts = []
    for verdict, words in _VALUES:
        mine = [c for c in changes if c.outcome.verdict.verdict == verdict]
        if not mine:
            continue
        text = f"{words} in {len(mine)}"
        if verdict in (Verdict.VALUES_MOVE, Verdict.SHAPE_CHANGE):
            moves = [
                m.stats.maxabs_old_new
                for c in mine
                if (m := c.outcome.result.measurement)
                and m.ok
                and m.stats
                and m.stats.maxabs_old_new is not None
            ]
            if moves:
                text += f" (max |old-new| {_num(max(moves))})"
        parts.append(text)
    return "; ".join(parts) or "no probe changes"


def reaches(
    changes: Sequence[Change],
    constructs: Iterable[str],
    observed: Observed,
    regions: Sequence[tuple[str, dict[str, Any]]] = (),
) -> str:
    """How many of the constructs' library regimes and shipped instances change in the step
    by this record, and the whole-program regions joined to it."""
    kinds = tuple(constructs)
    lib = [r for k in kinds for r in observed.of(k, LIBRARY)]
    reg = [r for k in kinds for r in observed.of(k, REGISTRY)]
    mine = {c.regime.spec.key() for c in changes}
    n_lib = sum(1 for r in lib if r.spec.key() in mine)
    n_reg = sum(1 for r in reg if r.spec.key() in mine)
    held = sorted({b for r in reg if r.spec.key() in mine for b in _holders(r)})
    parts = []
    if kinds:
        parts = [
            f"{n_lib} of {len(lib)} library regime(s) of {', '.join(kinds)}",
            f"{n_reg} of {len(reg)} shipped instance(s)"
            + (f" ({', '.join(held)})" if held else ""),
        ]
    others = [c for c in changes if c.regime.construct not in kinds]
    if others:
        by = sorted({b for c in others if c.source == REGISTRY for b in _holders(c.regime)})
        parts.append(
            f"{len(others)} {'other ' if kinds else ''}probe(s) of "
            f"{observed.probed} ({_names(c.regime.id for c in others)})"
            + (f", shipped instances of {', '.join(by)}" if by else "")
        )
    if regions:
        bundles = sorted({b for b, _ in regions})
        parts.append(f"{len(regions)} whole-program region(s) ({', '.join(bundles)})")
    changed = bool(changes or regions)
    return f"{'yes' if changed else 'no'}: " + ("; ".join(parts) or "no probe or region")


def _holders(regime: Regime) -> list[str]:
    """The bundles a registry instance's regime is named by (`parakeet+sortformer:...`)."""
    return regime.name.split(":", 1)[0].split("+")


def _names(ids: Iterable[str]) -> str:
    names = list(dict.fromkeys(ids))
    more = f" and {len(names) - NAMES_SHOWN} more" if len(names) > NAMES_SHOWN else ""
    return ", ".join(names[:NAMES_SHOWN]) + more


def _attributes(regime: Regime) -> dict[str, str]:
    """What a regime is made of, attribute by attribute, as text (a separating attribute is
    named in these words)."""
    spec = regime.spec
    out = {
        "dtype": spec.dtype,
        "values": spec.values,
        "decompositions": spec.pipeline.decompositions,
        "optimize": str(spec.pipeline.optimize).lower(),
        "shapes": spec.pipeline.shapes,
    }
    out.update(
        {k: json.dumps(v, sort_keys=True, separators=(",", ":")) for k, v in spec.params.items()}
    )
    return out


def separating(changed: Sequence[Regime], unchanged: Sequence[Regime]) -> list[str]:
    """Attributes whose values split the regimes cleanly: every changed regime has one of some
    values, no unchanged regime has any of them (`dtype is float16; not float32, bfloat16`)."""
    if not changed or not unchanged:
        return []
    keys = sorted({k for r in (*changed, *unchanged) for k in _attributes(r)})
    out = []
    for key in keys:
        yes = {_attributes(r).get(key, "(absent)") for r in changed}
        no = {_attributes(r).get(key, "(absent)") for r in unchanged}
        if not yes & no:
            out.append(
                f"{key} is {' or '.join(sorted(yes))} where it changes, "
                f"{' or '.join(sorted(no))} where it does not"
            )
    return out


def conditions(
    changes: Sequence[Change], constructs: Iterable[str], observed: Observed, others: dict[str, str]
) -> tuple[str, ...]:
    """Per construct: the library regimes this record changes, those changed by another record
    of the step (`others`: regime id -> who), those that do not change (controls marked), and
    the attributes that separate the changing from the unchanging; then its shipped
    instances likewise."""
    mine = {c.regime.spec.key() for c in changes}
    out = []
    for kind in constructs:
        lib = observed.of(kind, LIBRARY)
        if not lib:
            continue
        yes = [r for r in lib if r.spec.key() in mine]
        elsewhere = [r for r in lib if r.id in others and r.spec.key() not in mine]
        no = [r for r in lib if r.spec.key() not in mine and r.id not in others]
        text = f"{kind}: changes in {len(yes)} of {len(lib)} library regime(s)"
        if yes:
            text += f" ({_names(r.name for r in yes)})"
        if elsewhere:
            text += "; changed by another record of the step in " + _names(
                f"{r.name} ({others[r.id]})" for r in elsewhere
            )
        text += f"; does not change in {len(no)}"
        if no:
            text += " (" + _names(f"{r.name}{' (control)' if r.control else ''}" for r in no) + ")"
        split = separating(yes, no)
        if split:
            text += "; " + "; ".join(split[:3])
        out.append(text)
        reg = observed.of(kind, REGISTRY)
        if reg:
            changed = [r for r in reg if r.spec.key() in mine]
            out.append(
                f"{kind} shipped instances: {len(changed)} of {len(reg)} change"
                + (f" ({_names(r.name for r in changed)})" if changed else "")
            )
    return tuple(out)
