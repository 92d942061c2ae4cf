"""`--verify auto`: the whole-program check measured for exactly the bundles whose answer would
otherwise be `unchecked` (a pipeline record only the asset probe answered, or a "no" with ops no
check covers), where `verify` can build them; a bundle it cannot build stays `unchecked`, and
one line says why."""

from __future__ import annotations

from pathlib import Path

from inventory.registry import Bundle
from inventory.verify.service import unbuildable
from oracle.catalog import Catalog


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
    return f"{bundle}: stays unchecked: --verify auto cannot build its whole program ({why})"
