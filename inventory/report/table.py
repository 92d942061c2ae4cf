"""The terminal rendering of `affected`: one row per bundle, then the reason chains."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from inventory.affected import AffectedReport, BundleAnswer
from inventory.report.text import md_cell
from oracle.constructs import label

_STYLE = {"required": "bold red", "optional": "yellow", "no": "green",
          "inconclusive": "bold magenta"}


def _instances(b: BundleAnswer) -> str:
    if not b.instances:
        return "none traced"
    return "\n".join(f"{i.count}x {label(i.kind, i.params, i.dtype)}" for i in b.instances)


def _found(b: BundleAnswer) -> str:
    """One line per probe: what the shipped-stage comparison found."""
    if not b.probes:
        return "nothing converted"
    lines = []
    for p in b.probes:
        r = p.result
        if r is None:
            lines.append(p.verdict.verdict)
            continue
        found = f"shipped {r.shipped}"
        if r.outputs != "not-run":
            found += f", outputs {r.outputs}"
        lines.append(found + (" (stored)" if r.cached else ""))
    return "\n".join(lines)


def affected_table(report: AffectedReport) -> Group:
    fix = report.fix
    title = (f"Fix #{fix.id} {fix.title} (ships in coreai-torch {fix.ships_in}); "
             f"comparing each bundle's exporter with {report.to}")
    table = Table(title=title, show_lines=True, title_justify="left")
    for col, ratio in (("bundle", 1), ("exporter", 1), ("instances traced", 4),
                       ("probe per instance", 2), ("re-export", 1), ("reason", 3)):
        table.add_column(col, overflow="fold", ratio=ratio)
    for b in report.bundles:
        exporter = b.exporter if b.exporter_recorded != "unknown" else f"{b.exporter} (assumed)"
        level = Text(b.reexport, style=_STYLE.get(b.reexport, ""))
        if b.bundle in report.ignored:
            level = Text(f"{b.reexport} (ignored: {report.ignored[b.bundle].reason})",
                         style="dim")
        table.add_row(b.bundle, exporter, _instances(b), _found(b), level, b.reason)
    details = [Text("")]
    for b in report.bundles:
        details.append(Text(f"{b.bundle}: {b.verdict}", style="bold"))
        for step in b.chain:
            details.append(Text(f"  - {step}"))
        for p in b.probes:
            if p.result is not None:
                details.append(Text(f"  evidence: {p.result.evidence}", style="dim"))
    runtimes = "; ".join(report.runtimes) or "none needed"
    details.append(Text(f"measured on: {runtimes}"))
    return Group(table, *details)


def affected_markdown(report: AffectedReport) -> str:
    fix = report.fix
    out = [f"# Fix #{fix.id} {fix.title}", "",
           f"Ships in coreai-torch {fix.ships_in}; each bundle's exporter compared with "
           f"{report.to}. Measured on: {'; '.join(report.runtimes) or 'no run needed'}.", "",
           "| bundle | exporter | instances | verdict | re-export | reason |",
           "|---|---|---|---|---|---|"]
    for b in report.bundles:
        exporter = b.exporter if b.exporter_recorded != "unknown" else f"{b.exporter} (assumed)"
        inst = "; ".join(f"{i.count}x {i.kind}" for i in b.instances) or "none traced"
        out.append(f"| {b.bundle} | {exporter} | {inst} | {b.verdict} | **{b.reexport}** | "
                   f"{md_cell(b.reason)} |")
    out.append("")
    for b in report.bundles:
        for p in b.probes:
            if p.result is not None:
                out.append(f"- {b.bundle}: `{p.spec.label()}` → {p.verdict.verdict}; evidence "
                           f"`{p.result.evidence}`")
    return "\n".join(out) + "\n"
