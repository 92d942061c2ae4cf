"""`inventory cache list | du | prune`: what the store holds, what it takes, and tidying it."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from inventory.errors import UsageError
from inventory.options import Json, check_number
from inventory.output import OutputFormat
from inventory.terminal import err, out


def cache_list(as_json: Json = False) -> None:
    """What the store holds: its results by kind (probe comparisons, load checks, whole-bundle
    check parts, repair runs, temp folders) and by age.

    Examples:
    inventory cache list
    inventory cache list --json

    Exit codes:
    0  listed (an empty store is said so)
    2  a configuration error (INVENTORY_CACHE, INVENTORY_STORE)
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.commands.common import show
    from inventory.output import Renderer
    from inventory.report.cache_report import list_record, list_table
    from oracle.store import listing

    show(Renderer("cache list", list_record, list_table), OutputFormat.choose(as_json), listing())


def cache_du(as_json: Json = False) -> None:
    """What the store takes on disk: results by kind, each environment, logs, runs and temp
    folders (disk usage as `du` counts it: a hard-linked file once, symbolic links not
    followed).

    Examples:
    inventory cache du
    inventory cache du --json

    Exit codes:
    0  sizes printed
    2  a configuration error (INVENTORY_CACHE, INVENTORY_STORE)
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.commands.common import show
    from inventory.output import Renderer
    from inventory.report.cache_report import du_record, du_table
    from oracle.store import disk_usage

    show(Renderer("cache du", du_record, du_table), OutputFormat.choose(as_json), disk_usage())


def cache_prune(
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than", metavar="DAYS", help="Also remove results older than this many days."
        ),
    ] = None,
    everything: Annotated[
        bool,
        typer.Option(
            "--all",
            help="Remove every stored result: the evidence every earlier answer cites. "
            "Asks first on a terminal; elsewhere needs --yes.",
        ),
    ] = False,
    failures: Annotated[
        bool,
        typer.Option(
            "--failures",
            help="Also remove results that record a failure (a side could not "
            "convert, a measurement or a runtime could not run).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would be removed, and remove nothing.")
    ] = False,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="With --all: remove without asking.")
    ] = False,
) -> None:
    """Remove interrupted, damaged and outdated results from the store (environments stay);
    a temp folder a running run holds is never touched.

    Examples:
    inventory cache prune --dry-run
    inventory cache prune --older-than 30 --failures
    inventory cache prune --all --yes

    Exit codes:
    0  pruned (or, with --dry-run, listed), or --all not confirmed
    2  usage error: --all without --yes where no terminal can ask (nothing
       removed), or a store that cannot be written
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from oracle.store import listing, prune

    # a negative age would make every result "older than" it and empty the store
    check_number("--older-than", older_than, 0, inclusive=True)
    if everything and not dry_run and not yes:
        results = listing()
        count = sum(1 for e in results.entries if e.kind != "temp")
        what = (
            f"remove every stored result ({count}) in {results.results}: the evidence "
            "every earlier answer cites"
        )
        if not sys.stdin.isatty():
            raise UsageError(
                f"cache prune --all would {what}; pass --yes to confirm (nothing removed)"
            )
        if not typer.confirm(f"{what[0].upper()}{what[1:]}?", default=False, err=True):
            err.print("nothing removed", highlight=False)
            return
    pruned = prune(older_than, everything, failures, dry_run=dry_run)
    verb = "would remove" if dry_run else "removed"
    for line in pruned.removed:
        out.print(f"{verb} {line}", highlight=False, markup=False, soft_wrap=True)
    for name in pruned.in_use:
        out.print(
            f"kept {name}: in use by a running run", highlight=False, markup=False, soft_wrap=True
        )
    # a live run's folder is kept too, and counted so
    counts = f"{len(pruned.removed)} {verb}, {pruned.kept + len(pruned.in_use)} kept"
    out.print(f"{counts} (dry run: nothing removed)" if dry_run else counts)
