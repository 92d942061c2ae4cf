"""Renderers for `plan`: JSON (the stable record), markdown and a terminal table."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from inventory.plan import BundlePlan, Plan, PlanItem, suggestion

_STYLE = {"required": "bold red", "optional": "yellow", "no": "green",
          "inconclusive": "bold magenta", "ignored": "dim"}


def _steps(i: PlanItem) -> str:
    """The release steps the item's probes change in, when the range has more than one."""
    steps = sorted({s.label for p in i.answer.probes if len(p.steps) > 1 for s in p.changed_in})
    return f", changes in {' '.join(steps)}" if steps else ""


def _fixes(b: BundlePlan, level: str) -> str:
    """The records at this level, then the changes no record explains that set it."""
    cells = [f"{i.fix.label} ({i.answer.verdict}{_steps(i)})" for i in b.by_level(level)]
    cells += [f"unrecorded {u.construct} ({u.verdict.verdict}, changes in {u.step.label})"
              for u in b.unexplained if u.verdict.reexport == level]
    return ", ".join(cells) or "-"


def _unexplained(b: BundlePlan) -> list[str]:
    return [f"{b.bundle}: unexplained change in {u.step.label}: {u.probe}: re-export "
            f"{u.verdict.reexport}: {u.reason} (evidence {u.evidence})"
            for u in b.unexplained]


def _loads(b: BundlePlan) -> str:
    """Per deployment runtime, what the load check found for the bundle's exporter."""
    if b.load is None:
        return "-"
    if b.load.verdict == "depends-on-exporter":
        return "depends on the exporter"
    own = b.load.findings[0]
    return ", ".join(f"{o.core} {o.outcome}" for o in own.outcomes()) or own.summary()


def _lines(p: Plan, b: BundlePlan) -> list[tuple[str, str]]:
    """(text, style) lines under the table: what forces or blocks a decision, load first."""
    out: list[tuple[str, str]] = []
    if b.load is not None and b.load.reexport != "no" and not b.load_explained_by:
        out.append((f"{b.bundle} (load, no record explains it): {b.load.reason}", ""))
        out += [(f"  remedy: {r}", "") for r in b.load.remedies]
    for i in b.items:
        if i.level in ("required", "inconclusive"):
            out.append((f"{b.bundle} {i.fix.label}: {i.answer.reason}", ""))
            out += [(f"  remedy: {r}", "") for r in i.answer.remedies]
        if i.ignored:
            out.append((f"{b.bundle} {i.fix.label}: ignored ({i.ignored.reason})", "dim"))
        if i.answer.not_checked:
            out.append((f"{b.bundle} {i.fix.label}: not checked on its own program "
                        f"({i.answer.verdict}): {i.answer.not_checked}", ""))
    out += [(line, "bold") for line in _unexplained(b)]
    out += [(line, "bold red" if "INCONSISTENT" in line else "") for line in _verified(p, b)]
    return out


def _verified(p: Plan, b: BundlePlan) -> list[str]:
    """The whole-program check (stored, or measured by --verify): its answer, each change no
    record explains, and any inconsistency, loudly."""
    from inventory.report.verify_report import unrecorded_line
    from inventory.verify.service import answer, status

    v = b.whole
    if v is None:
        return []
    how = "measured now" if p.verify_computed else "stored"
    lines = [f"{b.bundle} whole program ({how}, {status(v)}): {answer(v)}"]
    lines += [f"  UNRECORDED: {unrecorded_line(u)}: {u['reexport']}" for u in v.unrecorded]
    lines += [f"  INCONSISTENT: {i}" for i in v.inconsistencies]
    lines += [f"  limitation: {i}" for i in v.limitations]
    return lines


def plan_table(p: Plan) -> Group:
    since = f", changes since {p.baseline}" if p.baseline else ""
    table = Table(title=f"Re-export plan for coreai-torch {p.to}{since}", show_lines=True,
                  title_justify="left")
    for col in ("bundle", "exporter", "re-export", "loads (deployment runtimes)", "forces it",
                "cannot tell", "suggests it", "not affected"):
        table.add_column(col, overflow="fold")
    for b in p.bundles:
        exporter = f"{b.exporter} (assumed)" if b.exporter_assumed else b.exporter
        table.add_row(b.bundle, exporter, Text(b.reexport, style=_STYLE[b.reexport]),
                      _loads(b), _fixes(b, "required"), _fixes(b, "inconclusive"),
                      _fixes(b, "optional"), _fixes(b, "no"))
    lines: list[Text] = [table]
    deployments = sorted({b.load.deployment.describe() for b in p.bundles if b.load})
    lines += [Text(f"deployment runtimes: {d}") for d in deployments]
    for b in p.bundles:
        lines += [Text(text, style=style) for text, style in _lines(p, b)]
    if (line := suggestion(p)) is not None:
        lines.append(Text(line, style="yellow"))
    for w in p.warnings:
        lines.append(Text(f"warning: {w}", style="yellow"))
    return Group(*lines)


def plan_markdown(p: Plan) -> str:
    since = f" (changes since `{p.baseline}`)" if p.baseline else ""
    out = [f"# Re-export plan for coreai-torch {p.to}{since}", ""]
    deployments = sorted({b.load.deployment.describe() for b in p.bundles if b.load})
    out += [f"Deployment runtimes: {d}." for d in deployments] + [""]
    out += ["| bundle | exporter | re-export | loads | forces it | cannot tell | suggests it |",
            "|---|---|---|---|---|---|---|"]
    for b in p.bundles:
        exporter = f"{b.exporter} (assumed)" if b.exporter_assumed else b.exporter
        out.append(f"| {b.bundle} | {exporter} | **{b.reexport}** | {_loads(b)} | "
                   f"{_fixes(b, 'required')} | {_fixes(b, 'inconclusive')} | "
                   f"{_fixes(b, 'optional')} |")
    out.append("")
    for b in p.bundles:
        if b.load is not None and b.load.reexport != "no" and not b.load_explained_by:
            out.append(f"- **{b.bundle} (load)** ({b.load.verdict}): {b.load.reason}")
        for i in b.items:
            if i.level in ("required", "inconclusive", "optional"):
                out.append(f"- **{b.bundle} {i.fix.label}** ({i.answer.verdict}): "
                           f"{i.answer.reason}")
                out += [f"  - remedy: {r}" for r in i.answer.remedies]
            if i.answer.not_checked:
                out.append(f"- {b.bundle} {i.fix.label}: not checked on its own program "
                           f"({i.answer.verdict}): {i.answer.not_checked}")
    if (line := suggestion(p)) is not None:
        out.append(f"- {line}")
    out += [f"- warning: {w}" for w in p.warnings]
    checks = [line for b in p.bundles for line in _verified(p, b)]
    if checks:
        out += ["", "## Whole-program checks", ""] + [f"- {c}" for c in checks]
    unexplained = [line for b in p.bundles for line in _unexplained(b)]
    if unexplained:
        out += ["", "## Changes no fix record explains", ""] + [f"- {u}" for u in unexplained]
    return "\n".join(out) + "\n"
