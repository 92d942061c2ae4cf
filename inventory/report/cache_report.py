"""The renderings of `cache list` (the store by kind and age) and `cache du` (its sizes)."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from oracle.store import AGES, DiskUsage, Listing, Usage


def size(n: int) -> str:
    """Bytes in decimal units, as the rest of the project states sizes (1.1 GB)."""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} B"


def age(days: float) -> str:
    if days < 1 / 24:
        return f"{days * 1440:.0f} min"
    if days < 1:
        return f"{days * 24:.0f} h"
    return f"{days:.0f} d"


def list_record(listing: Listing) -> dict[str, Any]:
    return {
        "results": listing.results,
        "ages": [
            {"name": name, "below_days": None if high == float("inf") else high}
            for name, high in AGES
        ],
        "kinds": [
            {
                "kind": k.kind,
                "label": k.label,
                "count": k.count,
                "ages": list(k.ages),
                "newest_days": k.newest_days,
                "oldest_days": k.oldest_days,
            }
            for k in listing.kinds()
        ],
        "entries": [
            {"name": e.name, "kind": e.kind, "part": e.part or None, "age_days": e.age_days}
            for e in listing.entries
        ],
    }


def list_table(listing: Listing) -> Group:
    kinds = listing.kinds()
    if not kinds:
        return Group(Text(f"no stored results in {listing.results}"))
    table = Table(
        box=None,
        pad_edge=False,
        title_justify="left",
        title=f"stored results in {listing.results}, by kind and age",
    )
    table.add_column("kind")
    table.add_column("results", justify="right")
    for name, _ in AGES:
        table.add_column(name, justify="right")
    table.add_column("newest", justify="right")
    table.add_column("oldest", justify="right")
    for k in kinds:
        table.add_row(
            k.label, str(k.count), *(str(n) for n in k.ages), age(k.newest_days), age(k.oldest_days)
        )
    return Group(
        table,
        Text(
            "sizes: inventory cache du; what prune would remove: inventory cache prune --dry-run",
            style="dim",
        ),
    )


def _usage(u: Usage) -> dict[str, Any]:
    return {
        "name": u.name,
        "path": u.path or None,
        "bytes": u.bytes,
        "count": u.count,
        "note": u.note or None,
        "items": [_usage(i) for i in u.items],
    }


def du_record(usage: DiskUsage) -> dict[str, Any]:
    return {
        "store": usage.store,
        "cache": usage.cache,
        "total_bytes": usage.total,
        "parts": [_usage(p) for p in usage.parts],
    }


def du_table(usage: DiskUsage) -> Table:
    table = Table(box=None, pad_edge=False, show_header=False)
    table.add_column("part")
    table.add_column("size", justify="right")
    table.add_column("where", style="dim")
    for part in usage.parts:
        counted = f" ({part.count})" if part.count else ""
        table.add_row(Text(f"{part.name}{counted}", style="bold"), size(part.bytes), part.path)
        for item in part.items:
            counted = f" ({item.count})" if item.count else ""
            table.add_row(f"  {item.name}{counted}", size(item.bytes), item.note)
    table.add_row(Text("total", style="bold"), size(usage.total), "")
    return table
