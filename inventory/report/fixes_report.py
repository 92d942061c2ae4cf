"""The renderings of `fixes`: the fix database, one row per record."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from inventory.fix_listing import FixListing


def fixes_record(listing: FixListing) -> dict[str, Any]:
    return {
        "source": listing.source,
        "fixes": [
            {
                "id": f.id,
                "aliases": list(f.aliases),
                "title": f.title,
                "kind": f.kind,
                "ships_in": f.ships_in,
                "step": f.step,
                "constructs": list(f.constructs),
                "upstream": f.upstream or None,
            }
            for f in listing.fixes
        ],
    }


def fixes_table(listing: FixListing) -> Table:
    table = Table(
        box=None,
        pad_edge=False,
        title_justify="left",
        title=f"{len(listing.fixes)} records in {listing.source} "
        "(inventory affected --fix ID answers one)",
    )
    for name in ("id", "aliases", "step", "kind", "constructs", "title"):
        table.add_column(name, overflow="fold")
    for f in listing.fixes:
        table.add_row(f.id, ", ".join(f.aliases), f.step, f.kind, ", ".join(f.constructs), f.title)
    return table
