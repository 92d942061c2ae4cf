"""The renderings of `envs discover`: the releases on the package index the catalog lacks."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from oracle.envs import Discovery, Found


def _found_json(f: Found) -> dict[str, Any]:
    d = f.derived
    return {
        "release": d.version,
        "core": d.core,
        "torch": d.torch or None,
        "requires": list(d.requires),
        "bounded": list(d.others),
        "wheel": f.wheel,
        "sha256": f.sha256,
        "listed_by": f.where,
        "recorded": f.record or None,
        "problem": d.problem or None,
    }


def discovery_record(d: Discovery) -> dict[str, Any]:
    return {
        "sources": d.sources,
        "found": [_found_json(f) for f in d.found],
        "in_catalog": list(d.known),
        "problems": list(d.problems),
    }


def discovery_table(d: Discovery) -> Group:
    lines: list[Any] = [Text(f"coreai-torch on {d.sources}")]
    if not d.found:
        lines.append(
            Text(
                f"no release the catalog lacks (on the sources and in the catalog: "
                f"{', '.join(d.known) or 'none'})"
            )
        )
        return Group(*lines)
    table = Table(
        box=None,
        pad_edge=False,
        title_justify="left",
        title=f"{len(d.found)} release(s) the catalog lacks (in it: "
        f"{', '.join(d.known) or 'none'})",
    )
    for name in ("release", "coreai-core", "torch", "also requires", "from", "recorded"):
        table.add_column(name, overflow="fold")
    for f in d.found:
        x = f.derived
        table.add_row(
            x.version,
            x.core or f"cannot be derived: {x.problem}",
            x.torch or "-",
            ", ".join(x.others) or "-",
            f"{f.wheel} ({f.where})",
            f.record or "not recorded",
        )
    return Group(*lines, table)
