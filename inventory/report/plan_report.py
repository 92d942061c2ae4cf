"""Renderers for `plan`: JSON (the stable record), markdown and a terminal table."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from inventory.output import envelope
from inventory.plan import Plan, PlanItem, plan_record

_STYLE = {"required": "bold red", "optional": "yellow", "no": "green",
          "inconclusive": "bold magenta", "ignored": "dim"}


def plan_json(p: Plan) -> str:
    return envelope("plan", plan_record(p), p.warnings)


def _fixes(items: tuple[PlanItem, ...]) -> str:
    return ", ".join(f"#{i.fix.id} ({i.answer.verdict})" for i in items) or "-"


def plan_table(p: Plan) -> Group:
    since = f", changes since {p.baseline}" if p.baseline else ""
    table = Table(title=f"Re-export plan for coreai-torch {p.to}{since}", show_lines=True,
                  title_justify="left")
    for col in ("bundle", "exporter", "re-export", "forces it", "cannot tell",
                "suggests it", "not affected"):
        table.add_column(col, overflow="fold")
    for b in p.bundles:
        exporter = f"{b.exporter} (assumed)" if b.exporter_assumed else b.exporter
        table.add_row(b.bundle, exporter, Text(b.reexport, style=_STYLE[b.reexport]),
                      _fixes(b.by_level("required")), _fixes(b.by_level("inconclusive")),
                      _fixes(b.by_level("optional")), _fixes(b.by_level("no")))
    lines: list[Text] = [table]
    for b in p.bundles:
        for i in b.items:
            if i.level in ("required", "inconclusive"):
                lines.append(Text(f"{b.bundle} #{i.fix.id}: {i.answer.reason}"))
            if i.ignored:
                lines.append(Text(f"{b.bundle} #{i.fix.id}: ignored ({i.ignored.reason})",
                                  style="dim"))
    for w in p.warnings:
        lines.append(Text(f"warning: {w}", style="yellow"))
    return Group(*lines)


def plan_markdown(p: Plan) -> str:
    since = f" (changes since `{p.baseline}`)" if p.baseline else ""
    out = [f"# Re-export plan for coreai-torch {p.to}{since}", "",
           "| bundle | exporter | re-export | forces it | cannot tell | suggests it |",
           "|---|---|---|---|---|---|"]
    for b in p.bundles:
        exporter = f"{b.exporter} (assumed)" if b.exporter_assumed else b.exporter
        out.append(f"| {b.bundle} | {exporter} | **{b.reexport}** | "
                   f"{_fixes(b.by_level('required'))} | {_fixes(b.by_level('inconclusive'))} | "
                   f"{_fixes(b.by_level('optional'))} |")
    out.append("")
    for b in p.bundles:
        for i in b.items:
            if i.level in ("required", "inconclusive", "optional"):
                out.append(f"- **{b.bundle} #{i.fix.id}** ({i.answer.verdict}): "
                           f"{i.answer.reason}")
    out += [f"- warning: {w}" for w in p.warnings]
    return "\n".join(out) + "\n"
