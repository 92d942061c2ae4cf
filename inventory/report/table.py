"""The renderings of `affected`: the terminal's (one row per bundle in a table that fits the
width, then each bundle's reason and chain) and the markdown."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text

from inventory.answer_types import AffectedReport, BundleAnswer, unrecorded_said
from inventory.coverage import coverage_cell
from inventory.report.table_fit import Cell, Column, fitted_table
from inventory.report.text import md_code, md_line, md_text
from inventory.summary import BundleLine, Summary, summarise
from inventory.verdict import IGNORED
from oracle.constructs import label

_STYLE = {
    "required": "bold red",
    "optional": "yellow",
    "no": "green",
    "inconclusive": "bold magenta",
    "unchecked": "magenta",
}


def _exporter(b: BundleAnswer) -> str:
    if b.exporter_recorded != "unknown":
        return b.exporter
    return "unknown" if b.exporter == "unknown" else f"{b.exporter} (assumed)"


def load_outcomes(b: BundleAnswer) -> str:
    """One line per release checked: `0.4.0 asset: b1 loads, b2 crashes, b3 crashes`."""
    assert b.load is not None
    return "\n".join(
        f"{f.release} asset: " + ", ".join(f"{o.core} {o.outcome}" for o in f.outcomes())
        for f in b.load.findings
    )


def _instances(b: BundleAnswer) -> str:
    if b.load is not None:
        return "not traced: a load check"
    if not b.instances:
        return "none traced"
    return "\n".join(f"{i.count}x {label(i.kind, i.params, i.dtype)}" for i in b.instances)


def _found(b: BundleAnswer) -> str:
    """One line per probe: what the shipped-stage comparison found."""
    if b.load is not None:
        return load_outcomes(b)
    if not b.probes:
        return "nothing converted"
    lines: list[str] = []
    for p in b.probes:
        r = p.result
        if r is None:
            lines.append(p.verdict.verdict)
            continue
        found = f"shipped {r.shipped}"
        if r.outputs != "not-run":
            found += f", outputs {r.outputs}"
        lines.append(found + (" (stored)" if r.cached else ""))
    # Probes of one instance measured module by module (--weights) repeat: count them.
    counted = {line: lines.count(line) for line in lines}
    return "\n".join(f"{n}x {line}" if n > 1 else line for line, n in counted.items())


def affected_summary(report: AffectedReport) -> Summary:
    """Per bundle its level and what set it: the verdict, or the accepted risk and its reason."""

    def line(b: BundleAnswer) -> BundleLine:
        if b.bundle in report.ignored:
            return BundleLine(
                b.bundle,
                IGNORED,
                f"{report.fix.label} ignored "
                f"({report.ignored[b.bundle].reason}); answered {b.reexport} "
                f"({b.verdict})",
            )
        return BundleLine(b.bundle, b.reexport, f"{report.fix.label} ({b.verdict})")

    return summarise(line(b) for b in report.bundles)


def _columns() -> list[Column]:
    """The answer (bundle, level) always; at a narrow width the exporter goes first (the
    details under the table say it), then what each probe found (its line there too), then the
    instances."""
    return [
        Column("bundle", 0, no_wrap=True),
        Column("re-export", 0, no_wrap=True),
        Column("instances traced", 1),
        Column("probe per instance / load check", 2),
        Column("exporter", 3),
        Column("coverage", 2),
    ]


def _level(report: AffectedReport, b: BundleAnswer) -> Text:
    if b.bundle in report.ignored:
        return Text(f"{b.reexport} (ignored)", style="dim")
    return Text(b.reexport, style=_STYLE.get(b.reexport, ""))


def _details(report: AffectedReport, b: BundleAnswer) -> list[Text]:
    """Under the table, per bundle: its verdict, the level and the reason that set it (whole:
    a table cell would wrap it word by word), then the reason chain (remedies, changes no
    record explains and what was not checked are steps of it) and the evidence."""
    level = f"re-export {b.reexport}"
    if b.bundle in report.ignored:
        level += f", ignored ({report.ignored[b.bundle].reason})"
    out = [Text(f"{b.bundle}: {b.verdict}", style="bold"), Text(f"  {level}: {b.reason}")]
    out += [Text(f"  - {step}") for step in b.chain]
    if b.unrecorded_state:
        out.append(Text(f"  {unrecorded_said(b.unrecorded_state)}"))
    if b.coverage is not None:
        out.append(Text(f"  {b.coverage.line(b.bundle)}"))
    for p in b.probes:
        if p.result is not None:
            whose = f" ({p.module})" if p.module else ""
            # a path split over two lines cannot be copied: kept whole, past the width if need be
            out.append(
                Text(
                    f"  evidence{whose}: {p.result.evidence}",
                    style="dim",
                    no_wrap=True,
                    overflow="ignore",
                )
            )
    return out


def affected_table(report: AffectedReport) -> Group:
    """Summary line first; one row per bundle, worst level first, in a table that fits the
    terminal (a narrow one leaves out columns and says which); each bundle's reason and chain
    under it."""
    fix = report.fix
    title = Text(
        f"Fix {fix.label} {fix.title} (ships in coreai-torch {fix.ships_in}); "
        f"comparing each bundle's exporter with {report.to}"
    )
    summary = affected_summary(report)
    order = {line.bundle: n for n, line in enumerate(summary.bundles)}
    bundles = sorted(report.bundles, key=lambda b: order[b.bundle])  # worst level first
    rows: list[dict[str, Cell]]
    rows = [
        {
            "bundle": b.bundle,
            "re-export": _level(report, b),
            "instances traced": _instances(b),
            "probe per instance / load check": _found(b),
            "exporter": _exporter(b),
            "coverage": coverage_cell(b.coverage),
        }
        for b in bundles
    ]
    details = [Text("")]
    for b in bundles:
        details += _details(report, b)
    runtimes = "; ".join(report.runtimes) or "none needed"
    details.append(Text(f"measured on: {runtimes}"))
    for deployment in sorted({b.deployment.describe() for b in report.bundles if b.deployment}):
        details.append(Text(f"deployment runtimes: {deployment}"))
    head = Text(f"{fix.label}: {summary.line()}", style="bold")
    return Group(head, title, fitted_table(_columns(), rows, lines=True), *details)


def affected_markdown(report: AffectedReport) -> str:
    fix = report.fix
    summary = affected_summary(report)
    out = [
        f"# Fix {md_text(fix.label)} {md_text(fix.title)}",
        "",
        f"Ships in coreai-torch {md_text(fix.ships_in)}; each bundle's exporter compared with "
        f"{md_text(report.to)}. Measured on: "
        f"{md_text('; '.join(report.runtimes) or 'no run needed')}.",
        *[
            f"Deployment runtimes: {md_text(d)}."
            for d in sorted({b.deployment.describe() for b in report.bundles if b.deployment})
        ],
        "",
        # the summary block first, as every format gives it (an accepted risk's reason in it)
        f"**{summary.line()}**",
        "",
        "| bundle | level | set by |",
        "|---|---|---|",
        *[
            f"| {md_text(s.bundle)} | **{s.level}** | {md_text(s.reason)} |"
            for s in summary.bundles
        ],
        "",
        "| bundle | exporter | instances | verdict | re-export | reason | coverage |",
        "|---|---|---|---|---|---|---|",
    ]
    for b in report.bundles:
        exporter = _exporter(b)
        inst = (
            "; ".join(f"{i.count}x {label(i.kind, i.params, i.dtype)}" for i in b.instances)
            or "none traced"
        )
        out.append(
            f"| {md_text(b.bundle)} | {md_text(exporter)} | {md_text(inst)} | {b.verdict} | "
            f"**{b.reexport}** | {md_text(b.reason)} | {md_text(coverage_cell(b.coverage))} |"
        )
    out.append("")
    for b in report.bundles:
        name = md_line(b.bundle)
        out += [f"- {name}: remedy: {md_text(r)}" for r in b.remedies]
        if b.unrecorded_line:
            out.append(f"- {name}: {md_text(b.unrecorded_line)}")
        if b.unrecorded_state:
            out.append(f"- {name}: {md_text(unrecorded_said(b.unrecorded_state))}")
        if b.coverage is not None:
            out.append(f"- {md_text(b.coverage.line(b.bundle))}")
        out += [f"- {name}: {md_text(line)}" for line in b.detours]
        if b.load is not None:
            out += [
                f"- {name}: load check of a {md_text(f.release)} asset: {md_text(f.summary())}; "
                f"evidence {md_code(f.check.evidence)}"
                for f in b.load.findings
            ]
        for p in b.probes:
            if p.result is not None:
                whose = f" with {md_text(p.module)}'s own tensors" if p.module else ""
                out.append(
                    f"- {name}: {md_code(p.spec.label())}{whose} → {p.verdict.verdict}; "
                    f"evidence {md_code(p.result.evidence)}"
                )
    return "\n".join(out) + "\n"
