"""The renderings of `draft`: the drafted records (the fix database itself when it is not
written to a file), its notes, and with --against the comparison with the curated records."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from inventory.draft.against import Comparison, Score
from inventory.draft.records import Drafted
from inventory.draft.service import Draft, text
from oracle.infra import portable


def _score(s: Score) -> dict[str, Any]:
    return {
        "precision": s.precision,
        "recall": s.recall,
        "drafted": sorted(set(s.drafted)),
        "curated": sorted(set(s.curated)),
        "found": list(s.found),
        "extra": list(s.extra),
        "missing": list(s.missing),
    }


def _against(c: Comparison) -> dict[str, Any]:
    return {
        "source": portable(c.source),
        "records": [
            {
                "status": d.status,
                "drafted": d.drafted,
                "curated": d.curated,
                "step": d.step,
                "details": list(d.details),
            }
            for d in c.diffs
        ],
        "prs": _score(c.prs),
        "pr_constructs": _score(c.pairs),
        "step_constructs": _score(c.constructs),
    }


def _record(r: Drafted) -> dict[str, Any]:
    """The `[[fix]]` table, its kind always said (after `ships_in`, as the table would): the
    table leaves out the default, lowering, which a reader of the JSON should not need to know."""
    out: dict[str, Any] = {}
    for key, value in portable(r.table()).items():
        out[key] = value
        if key == "ships_in":
            out["kind"] = r.kind
    return out


def draft_record(d: Draft) -> dict[str, Any]:
    return {
        "from": d.old,
        "to": d.new,
        "repo": d.repo or None,
        "output": d.output,
        "base": portable(d.base_source),
        "base_records": [t["id"] for t in d.base],
        "steps": [
            {
                "step": s.observed.label,
                "history": s.observed.history,
                "probed": s.observed.probed,
                "changed": len(s.observed.changes),
                "regions": len(s.observed.regions),
                "checked_bundles": list(s.observed.checked),
                "records": [_record(r) for r in s.records],
                "notes": [portable(n) for n in s.notes],
            }
            for s in d.steps
        ],
        "against": _against(d.against) if d.against is not None else None,
        "toml": text(d),
    }


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _score_line(name: str, s: Score) -> Text:
    return Text(
        f"{name}: precision {_ratio(s.precision)} ({len(s.found)} of "
        f"{len(set(s.drafted))} drafted), recall {_ratio(s.recall)} ({len(s.found)} of "
        f"{len(set(s.curated))} curated)"
        + (f"; only drafted: {', '.join(s.extra)}" if s.extra else "")
        + (f"; only curated: {', '.join(s.missing)}" if s.missing else "")
    )


def comparison_table(c: Comparison) -> RenderableType:
    table = Table(
        box=None,
        pad_edge=False,
        title_justify="left",
        title=f"the draft against {portable(c.source)}: "
        f"{len(c.differences)} of {len(c.diffs)} record(s) differ",
    )
    for name in ("step", "curated", "drafted", "status", "what differs"):
        table.add_column(name, overflow="fold")
    for d in c.diffs:
        table.add_row(
            d.step, d.curated or "-", d.drafted or "-", d.status, "\n".join(d.details) or "-"
        )
    return Group(
        table,
        _score_line("pull requests", c.prs),
        _score_line("(pull request, construct) pairs", c.pairs),
        _score_line("(step, construct) pairs", c.constructs),
    )


def draft_table(d: Draft) -> RenderableType:
    parts: list[RenderableType] = []
    if d.output is not None:
        parts.append(
            Text(
                f"draft written to {d.output}: {len(d.records)} drafted record(s), "
                f"{len(d.base)} kept from {portable(d.base_source)}"
            )
        )
    for s in d.steps:
        how = (
            f"bisected over {s.observed.repo}"
            if s.observed.history
            else "no history was available: grouped by construct and stage"
        )
        table = Table(
            box=None,
            pad_edge=False,
            title_justify="left",
            title=f"{s.observed.label}: {len(s.observed.changes)} of "
            f"{s.observed.probed} probes change, {len(s.observed.regions)} "
            f"whole-program region(s); {how}",
        )
        for name in ("id", "kind", "constructs", "stage", "reaches", "values", "title"):
            table.add_column(name, overflow="fold")
        for r in s.records:
            table.add_row(
                r.id, r.kind, ", ".join(r.constructs) or "-", r.stage, r.reaches, r.values, r.title
            )
        parts.append(table)
        parts += [Text(f"note: {n}") for n in s.notes]
    if d.against is not None:
        parts.append(comparison_table(d.against))
    return Group(*parts)
