"""`plan --verify auto`: the whole-program check measured for exactly the bundles whose coverage is
incomplete (ops no probe and no stored check covers) or whose answer would otherwise be
`unchecked` (a pipeline record only the asset probe answered), where `verify` can build them; a
bundle it cannot build keeps its answer (an unchecked one stays `unchecked`), and one line says
why. (`affected --verify auto` decides per pipeline record: `inventory.kind_answers`.)"""

from __future__ import annotations

from pathlib import Path

from inventory.plan import Plan
from inventory.registry import Bundle
from inventory.verdict import Reexport
from inventory.verify.service import unbuildable
from oracle.catalog import Catalog


def wanted(answer: Plan, bundles: list[Bundle]) -> list[Bundle]:
    """The bundles of `answer` that a whole-program check would complete: some op not covered
    over their steps, or a level of `unchecked`."""
    by_name = {p.bundle: p for p in answer.bundles}
    return [
        b
        for b in bundles
        if (p := by_name.get(b.name)) is not None
        and (p.uncovered or p.reexport == Reexport.UNCHECKED)
    ]


def buildable(
    bundles: list[Bundle],
    to: str,
    catalog: Catalog,
    full: bool = False,
    recipe_root: Path | None = None,
    allow_code: bool = False,
) -> tuple[list[Bundle], list[str]]:
    """The bundles `verify` can build whole for `to`, and one line for each it cannot."""
    can: list[Bundle] = []
    lines: list[str] = []
    for bundle in bundles:
        why = unbuildable(bundle, to, catalog, full, recipe_root, allow_code)
        if why is None:
            can.append(bundle)
        else:
            lines.append(not_built_line(bundle.name, why))
    return can, lines


def not_built_line(bundle: str, why: str) -> str:
    return f"{bundle}: not checked whole: --verify auto cannot build its whole program ({why})"
