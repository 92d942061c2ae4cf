"""`inventory fixes`: the fix database, one record per line."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inventory.options import CatalogFile, Json
from inventory.output import OutputFormat
from oracle.catalog import FIXES_FILE


def fixes_cmd(
    fixes: Annotated[
        Path,
        typer.Option(
            "--fixes",
            metavar="FILE",
            help="The fix database to list (e.g. a draft of the next release's records).",
        ),
    ] = FIXES_FILE,
    as_json: Json = False,
    catalog: CatalogFile = None,
) -> None:
    """The fix database: each record's id (what --fix takes), its aliases, the release step it
    ships in, its kind (lowering, asset or pipeline), the constructs it touches and its title.

    Examples:
    inventory fixes
    inventory fixes --json
    inventory fixes --fixes draft.toml

    Exit codes:
    0  listed
    2  a fix database that cannot be read (one line naming the record)
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.commands.common import show
    from inventory.fix_listing import listing
    from inventory.output import Renderer
    from inventory.report.fixes_report import fixes_record, fixes_table
    from oracle.catalog import load_catalog, load_fixes

    show(
        Renderer("fixes", fixes_record, fixes_table),
        OutputFormat.choose(as_json),
        listing(load_fixes(fixes), load_catalog(), fixes),
    )
