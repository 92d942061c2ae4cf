"""Renderers for `plan`: JSON (the stable record), markdown and a terminal table."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.text import Text

from inventory.coverage import coverage_cell
from inventory.plan import BundlePlan, Plan, plan_summary, setting, suggestion
from inventory.report.table_fit import Cell, Column, fitted_table
from inventory.report.text import md_code, md_line, md_text
from inventory.verdict import rank

_STYLE = {
    "required": "bold red",
    "optional": "yellow",
    "no": "green",
    "inconclusive": "bold magenta",
    "unchecked": "magenta",
    "ignored": "dim",
}


def _fixes(b: BundlePlan, level: str) -> str:
    """The records at this level, then the changes no record explains that set it."""
    return ", ".join(setting(b, level)) or "-"


def _unexplained(b: BundlePlan) -> list[str]:
    return [
        f"{b.bundle}: unexplained change in {u.step.label}: {u.probe}: re-export "
        f"{u.verdict.reexport}: {u.reason} (evidence {u.evidence})"
        for u in b.unexplained
    ]


def _loads(b: BundlePlan) -> str:
    """Per deployment runtime, what the load check found for the bundle's exporter."""
    if b.load is None:
        return "-"
    if b.load.verdict == "depends-on-exporter":
        return "depends on the exporter"
    own = b.load.findings[0]
    return ", ".join(f"{o.core} {o.outcome}" for o in own.outcomes()) or own.summary()


def _lines(p: Plan, b: BundlePlan, details: bool = True) -> list[tuple[str, str]]:
    """(text, style) lines under the table: what forces or blocks a decision, load first; each
    record answered without the bundle's own program only with `details` (else the one
    suggestion line names them all)."""
    out: list[tuple[str, str]] = []
    if b.load is not None and b.load.reexport != "no" and not b.load_explained_by:
        out.append((f"{b.bundle} (load, no record explains it): {b.load.reason}", ""))
        out += [(f"  remedy: {r}", "") for r in b.load.remedies]
    for i in b.items:
        if i.level in ("required", "inconclusive", "unchecked", "optional"):
            out.append((f"{b.bundle} {i.fix.label} ({i.level}): {i.answer.reason}", ""))
            out += [(f"  remedy: {r}", "") for r in i.answer.remedies]
        if i.ignored:
            expires = f", expires {i.ignored.expires.isoformat()}" if i.ignored.expires else ""
            out.append(
                (
                    f"{b.bundle} {i.fix.label}: ignored ({i.ignored.reason}{expires}); "
                    f"answered {i.answer.reexport} ({i.answer.verdict})",
                    "dim",
                )
            )
        if i.answer.not_checked and details:
            out.append(
                (
                    f"{b.bundle} {i.fix.label}: not checked on its own program "
                    f"({i.answer.verdict}): {i.answer.not_checked}",
                    "",
                )
            )
    out += [(line, "bold") for line in _unexplained(b)]
    out += [(line, "bold red" if "INCONSISTENT" in line else "") for line in _verified(p, b)]
    return out


def _verified(p: Plan, b: BundlePlan) -> list[str]:
    """The whole-program check (stored, or measured by --verify): its answer, each change no
    record explains, and any inconsistency, loudly."""
    from inventory.report.verify_report import torch_line, unrecorded_line
    from inventory.verify.service import answer, status

    v = b.whole
    if v is None:
        return []
    how = "measured now" if p.verify_computed or not v.cached else "stored"
    lines = [f"{b.bundle} whole program ({how}, {status(v)}): {answer(v)}"]
    lines += [f"  UNRECORDED: {unrecorded_line(u)}: {u['reexport']}" for u in v.unrecorded]
    lines += [f"  INCONSISTENT: {i}" for i in v.inconsistencies]
    lines += [f"  limitation: {i}" for i in v.limitations]
    torch = torch_line(v.torch)
    if torch is not None and torch[0] == "caveat":
        lines.append(f"  caveat: {torch[1]}")
    return lines


def _changes_table(p: Plan) -> Group:
    """Since a baseline: one line if nothing changed, else each change with both sides."""
    head = Text(f"Re-export plan for coreai-torch {p.to}, changes since {p.baseline}", style="bold")
    if not p.changes:
        compared = sum(len(b.items) for b in p.bundles)
        return Group(head, Text(f"no change since the baseline ({compared} answers compared)"))
    columns = [
        Column("bundle", 0, no_wrap=True),
        Column("record", 0, no_wrap=True),
        Column("baseline", 0, no_wrap=True),
        Column("now", 0, no_wrap=True),
        Column("reason now", 1),
    ]
    rows: list[dict[str, Cell]]
    rows = [
        {
            "bundle": c.bundle,
            "record": c.item.fix.label,
            "baseline": c.before or "absent",
            "now": Text(c.now, style=_STYLE[c.now]),
            "reason now": c.item.answer.reason,
        }
        for c in sorted(p.changes, key=lambda c: rank(c.now))
    ]
    n = len(p.changes)
    return Group(
        head,
        Text(f"{n} answer{'' if n == 1 else 's'} changed since the baseline"),
        fitted_table(columns, rows),
    )


def plan_table(p: Plan, details: bool = False) -> Group:
    """Summary line first; one row per bundle, worst level first, with the findings that set
    its level; the not-affected records folded to a count (`details`: listed). Since a
    baseline: only what changed."""
    if p.baseline is not None:
        return _changes_table(p)
    summary = plan_summary(p)
    since = f", changes since {p.baseline}" if p.baseline else ""
    head = Text(f"Re-export plan for coreai-torch {p.to}{since}\n", style="bold")
    head.append(summary.line())
    order = {line.bundle: n for n, line in enumerate(summary.bundles)}
    bundles = sorted(p.bundles, key=lambda b: order[b.bundle])
    columns = [
        Column("bundle", 0, no_wrap=True),
        Column("re-export", 0, no_wrap=True),
        Column("set by", 0),
        Column("not affected", 1),
        Column("exporter", 2, no_wrap=True),
        Column("loads (deployment runtimes)", 3),
        Column("coverage", 2),
    ]
    rows: list[dict[str, Cell]]
    rows = [
        {
            "bundle": b.bundle,
            "re-export": Text(b.reexport, style=_STYLE[b.reexport]),
            "set by": _fixes(b, b.reexport) if b.reexport != "no" else "-",
            "not affected": _not_affected(b, details),
            "exporter": f"{b.exporter} (assumed)" if b.exporter_assumed else b.exporter,
            "loads (deployment runtimes)": _loads(b),
            "coverage": coverage_cell(b.coverage),
        }
        for b in bundles
    ]
    lines: list[RenderableType] = [head, fitted_table(columns, rows)]
    others = [
        (b.bundle, level, _fixes(b, level))
        for b in bundles
        for level in ("inconclusive", "unchecked", "optional")
        if rank(level) > rank(b.reexport) and _fixes(b, level) != "-"
    ]
    lines += [Text(f"{bundle} also {level}: {cells}") for bundle, level, cells in others]
    lines += [Text(b.coverage.line(b.bundle)) for b in bundles if b.coverage is not None]
    deployments = sorted({b.load.deployment.describe() for b in p.bundles if b.load})
    lines += [Text(f"deployment runtimes: {d}") for d in deployments]
    for b in bundles:
        lines += [Text(text, style=style) for text, style in _lines(p, b, details)]
    if (line := suggestion(p)) is not None:
        lines.append(Text(line, style="yellow"))
    for w in p.warnings:
        lines.append(Text(f"warning: {w}", style="yellow"))
    # the answer again where a terminal's last screen shows it, after the reasons
    lines.append(
        Text(
            "answer: "
            + ", ".join(f"{b.bundle} {b.level}" for b in summary.bundles)
            + f" ({summary.line()})",
            style="bold",
        )
    )
    return Group(*lines)


def _not_affected(b: BundlePlan, details: bool) -> str:
    """The records answered `no` for the bundle: a count, or (details) each with its verdict."""
    items = b.by_level("no")
    if details:
        return ", ".join(f"{i.fix.label} ({i.answer.verdict})" for i in items) or "-"
    return f"{len(items)} record{'' if len(items) == 1 else 's'}" if items else "-"


def _changes_markdown(p: Plan) -> str:
    out = [
        f"# Re-export plan for coreai-torch {md_text(p.to)}, changes since {md_code(p.baseline)}",
        "",
    ]
    if not p.changes:
        return "\n".join(out + ["No change since the baseline."]) + "\n"
    out += ["| bundle | record | baseline | now | reason now |", "|---|---|---|---|---|"]
    out += [
        f"| {md_text(c.bundle)} | {md_text(c.item.fix.label)} | {c.before or 'absent'} | "
        f"**{c.now}** | {md_text(c.item.answer.reason)} |"
        for c in sorted(p.changes, key=lambda c: rank(c.now))
    ]
    return "\n".join(out) + "\n"


def plan_markdown(p: Plan) -> str:
    if p.baseline is not None:
        return _changes_markdown(p)
    summary = plan_summary(p)
    out = [
        f"# Re-export plan for coreai-torch {md_text(p.to)}",
        "",
        f"**{summary.line()}**",
        "",
        "| bundle | re-export | set by |",
        "|---|---|---|",
    ]
    out += [
        f"| {md_text(b.bundle)} | **{b.level}** | {md_text(b.reason)} |" for b in summary.bundles
    ]
    out.append("")
    deployments = sorted({b.load.deployment.describe() for b in p.bundles if b.load})
    out += [f"Deployment runtimes: {md_text(d)}." for d in deployments] + [""]
    out += [
        "| bundle | exporter | re-export | loads | forces it | cannot tell | not checked "
        "| suggests it | coverage |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for b in p.bundles:
        exporter = f"{b.exporter} (assumed)" if b.exporter_assumed else b.exporter
        out.append(
            f"| {md_text(b.bundle)} | {md_text(exporter)} | **{b.reexport}** | "
            f"{md_text(_loads(b))} | {md_text(_fixes(b, 'required'))} | "
            f"{md_text(_fixes(b, 'inconclusive'))} | {md_text(_fixes(b, 'unchecked'))} | "
            f"{md_text(_fixes(b, 'optional'))} | {md_text(coverage_cell(b.coverage))} |"
        )
    out.append("")
    out += [f"- {md_text(b.coverage.line(b.bundle))}" for b in p.bundles if b.coverage is not None]
    out += ["", "<details><summary>Each finding: reasons, caveats, remedies</summary>", ""]
    for b in p.bundles:
        name = md_line(b.bundle)
        if b.load is not None and b.load.reexport != "no" and not b.load_explained_by:
            out.append(f"- **{name} (load)** ({b.load.verdict}): {md_text(b.load.reason)}")
        for i in b.items:
            label = md_text(i.fix.label)
            if i.level in ("required", "inconclusive", "unchecked", "optional"):
                out.append(f"- **{name} {label}** ({i.answer.verdict}): {md_text(i.answer.reason)}")
                out += [f"  - remedy: {md_text(r)}" for r in i.answer.remedies]
            if i.ignored:
                expires = f", expires {i.ignored.expires.isoformat()}" if i.ignored.expires else ""
                out.append(
                    f"- {name} {label}: ignored ({md_text(i.ignored.reason)}{expires}); "
                    f"answered {i.answer.reexport} ({i.answer.verdict}): "
                    f"{md_text(i.answer.reason)}"
                )
            if i.answer.not_checked:
                out.append(
                    f"- {name} {label}: not checked on its own program "
                    f"({i.answer.verdict}): {md_text(i.answer.not_checked)}"
                )
    if (line := suggestion(p)) is not None:
        out.append(f"- {md_line(line)}")
    out += [f"- warning: {md_text(w)}" for w in p.warnings]
    out += [
        f"- {md_line(b.bundle)}: not affected: {md_text(_not_affected(b, details=True))}"
        for b in p.bundles
        if b.by_level("no")
    ]
    out += ["", "</details>"]
    checks = [line for b in p.bundles for line in _verified(p, b)]
    if checks:
        out += ["", "## Whole-program checks", ""] + [f"- {_indented(c)}" for c in checks]
    unexplained = [line for b in p.bundles for line in _unexplained(b)]
    if unexplained:
        out += ["", "## Changes no fix record explains", ""]
        out += [f"- {md_line(u)}" for u in unexplained]
    return "\n".join(out) + "\n"


def _indented(line: str) -> str:
    """A line of `_verified` as markdown: its leading indent (a sub-line of a check) kept."""
    body = line.lstrip(" ")
    return line[: len(line) - len(body)] + md_line(body)
