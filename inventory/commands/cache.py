"""`inventory cache prune`: the store of probe results, tidied."""

from __future__ import annotations

from typing import Annotated

import typer

from inventory.options import check_number
from inventory.terminal import out


def cache_prune(
    older_than: Annotated[float | None, typer.Option(
        "--older-than", help="Also remove results older than this many days.")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Remove every stored result.")] = False,
    failures: Annotated[bool, typer.Option(
        "--failures", help="Also remove results that record a failure (a side could not "
                           "convert, a measurement or a runtime could not run).")] = False,
) -> None:
    """Remove interrupted, damaged and outdated results from the store (environments stay);
    a temp folder a running run holds is never touched."""
    from oracle.cache import prune

    # a negative age would make every result "older than" it and empty the store
    check_number("--older-than", older_than, 0, inclusive=True)
    pruned = prune(older_than, everything, failures)
    for line in pruned.removed:
        out.print(f"removed {line}", highlight=False, markup=False)
    for name in pruned.in_use:
        out.print(f"kept {name}: in use by a running run", highlight=False, markup=False)
    # a live run's folder is kept too, and counted so
    out.print(f"{len(pruned.removed)} removed, {pruned.kept + len(pruned.in_use)} kept")
