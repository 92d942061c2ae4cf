"""Renderers for `release-notes` and `sweep`: markdown, JSON and a terminal table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from inventory.attribution import step_line
from inventory.output import envelope
from inventory.release_notes import FixNotes, ReleaseNotes
from inventory.report.json_report import result_fields, step_json, with_alone_check
from inventory.report.text import html_text, md_code, md_line, md_text
from inventory.sweep import RegimeOutcome, Sweep
from oracle.catalog import Fix
from oracle.compare import Identity
from oracle.load_check import LoadCheck

_DIFF_LINES = 12


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:.3g}"


def outcome_json(o: RegimeOutcome) -> dict[str, Any]:
    return {
        "probe": o.regime.id,
        "label": o.result.spec.label(),
        "control": o.regime.control,
        "regime": o.result.spec.to_json(),
        **with_alone_check(result_fields(o.result), o.verdict),
        "verdict": o.verdict.verdict,
        "reason": o.verdict.reason,
    }


def _loads(check: LoadCheck) -> str:
    """`1.0.0b1 loads, 1.0.0b2 crashes (SIGABRT), ...`"""
    return ", ".join(
        f"{o.core} {o.outcome}" + (f" ({o.signal})" if o.signal else "") for o in check.outcomes
    )


def _load_json(check: LoadCheck) -> dict[str, Any]:
    return {
        "exporter": check.exporter,
        "probe": check.spec.to_json(),
        "outcomes": [
            {
                "core": o.core,
                "outcome": o.outcome,
                "error": o.error or None,
                "signal": o.signal or None,
            }
            for o in check.outcomes
        ],
        "evidence": check.evidence,
    }


def notes_record(notes: ReleaseNotes) -> dict[str, Any]:
    return {
        "from": notes.old,
        "to": notes.new,
        "runtime": "; ".join(notes.runtimes) or None,
        "fixes": [
            {
                "fix": f.fix.id,
                "kind": f.fix.kind,
                "aliases": list(f.fix.aliases),
                "title": f.fix.title,
                "upstream": f.fix.upstream,
                "constructs": list(f.fix.constructs),
                "probes": [
                    {
                        **outcome_json(o),
                        "steps": [step_json(s) for s in f.steps.get(o.regime.id, ())],
                    }
                    for o in f.outcomes
                ],
                "loads": [{"old": _load_json(a), "new": _load_json(b)} for a, b in f.loads],
                "bundles": list(f.bundles),
                "held_by": [
                    {"bundle": b, "instance": label, "count": count}
                    for b, label, count in f.held_by
                ],
                "summary": _summary_json(f),
                "draft": _draft_json(f),
                "answers": [
                    {
                        "bundle": a.bundle,
                        "verdict": a.verdict,
                        "reexport": a.reexport,
                        "reason": a.reason,
                    }
                    for a in f.answers
                ],
            }
            for f in notes.fixes
        ],
        "unexplained": [
            {
                "probe": o.regime.id,
                "step": s.label,
                "verdict": o.verdict.verdict,
                "note": s.note or None,
                "evidence": s.result.evidence,
            }
            for o, s in notes.unexplained
        ],
    }


def _draft_json(f: FixNotes) -> dict[str, Any] | None:
    """A drafted record's measurements as `inventory draft` wrote them (`[fix.draft]`)."""
    d = f.fix.draft
    if d is None:
        return None
    return {"step": d.step, "grouped_by": d.grouped_by, "conditions": list(d.conditions)}


def _drafted_line(f: FixNotes) -> list[str]:
    d = f.fix.draft
    if d is None:
        return []
    return [
        f"Drafted ({md_text(f.fix.checked)}): {md_text(d.grouped_by)}. Conditions measured "
        f"for the draft: {md_text('; '.join(d.conditions) or 'none')}.",
        "",
    ]


class _Concerned:
    """The sentence naming the bundles a record's notes concern, as its kind concerns them."""

    def __init__(self, notes: FixNotes) -> None:
        self.bundles = notes.bundles

    def holders(self, record: Fix) -> str:
        return (
            f"Shipped bundles holding {md_text(' or '.join(record.constructs))}: "
            f"{md_text(', '.join(self.bundles) or 'none')}."
        )

    def exported_before(self, record: Fix) -> str:
        return (
            f"A change of the {md_text(record.kind)}: it concerns every bundle exported before "
            f"{md_text(record.ships_in)} "
            f"({md_text(', '.join(self.bundles) or 'none in the registry')})."
        )


def bundle_answers(f: FixNotes) -> str:
    """Each concerned bundle's own answer for the record, as `affected --fix` gives it: the
    library's probe cases above are not the bundle's instances, and their changes are not its."""
    return "; ".join(f"{a.bundle} re-export {a.reexport} ({a.verdict})" for a in f.answers)


def answers_line(f: FixNotes) -> str:
    """The line every format gives each record with concerned bundles."""
    return (
        f"{f.fix.label} for the shipped bundles (`inventory affected --fix {f.fix.id}`): "
        f"{bundle_answers(f)}"
    )


def _summary_json(f: FixNotes) -> dict[str, Any] | None:
    if not f.fix.record_kind.compares_programs:
        return None
    s = f.summary()
    out = {
        "reaches_graph": s.reaches_graph,
        "changed": list(s.changed),
        "values_move": list(s.values_move),
        "max_abs_move": s.max_abs_move,
        "old_cannot_convert": list(s.old_cannot_convert),
        "new_cannot_convert": list(s.new_cannot_convert),
        "alone_wrong": list(s.alone_wrong),
    }
    if s.attributed_elsewhere:  # only where bisection moved a change to another record
        out["attributed_elsewhere"] = dict(s.attributed_elsewhere)
    return out


def _summary_lines(f: FixNotes) -> list[str]:
    """The four questions a release manager asks of a fix, answered in one line each."""
    s = f.summary()
    n = len(f.outcomes)
    moved = (
        f"yes, in {len(s.values_move)} library probe case(s), max |old-new| "
        f"{_num(s.max_abs_move)} "
        f"({', '.join(md_code(r) for r in s.values_move)})"
        if s.values_move
        else "no"
    )
    held: dict[str, list[str]] = {}
    for bundle, label, count in f.held_by:
        held.setdefault(bundle, []).append(f"{md_code(label)} ×{count}")
    elsewhere = (
        [
            "- Changed in this step by another pull request's commit (bisected): "
            + "; ".join(f"{md_code(r)} by {md_text(c)}" for r, c in s.attributed_elsewhere.items())
            + "."
        ]
        if s.attributed_elsewhere
        else []
    )
    return elsewhere + [
        f"- Reaches a graph: {'yes' if s.reaches_graph else 'no'} ({len(s.changed)} of {n} "
        f"library probe case(s) change their shipped program).",
        f"- Values move: {moved}.",
        f"- Old converter cannot convert: "
        f"{', '.join(md_code(r) for r in s.old_cannot_convert) or 'none'}; new cannot: "
        f"{', '.join(md_code(r) for r in s.new_cannot_convert) or 'none'}.",
        "- Converts on one side only, and wrong against torch fp32: "
        f"{', '.join(md_code(r) for r in s.alone_wrong) or 'none'}.",
        "- Shipped bundles holding it: "
        + ("; ".join(f"{md_text(b)} ({', '.join(xs)})" for b, xs in held.items()) or "none")
        + ".",
    ]


def notes_json(notes: ReleaseNotes) -> str:
    return envelope("release-notes", notes_record(notes))


def sweep_record(sw: Sweep) -> dict[str, Any]:
    return {
        "from": sw.old,
        "to": sw.new,
        "source": sw.source,
        "probed": sw.probed,
        "unchanged": sw.unchanged,
        "changed": [
            {
                **outcome_json(f.outcome),
                "explained_by": list(f.explained_by),
                "steps": [step_json(s) for s in f.steps],
            }
            for f in sw.changed
        ],
        "unexplained": [f.outcome.regime.id for f in sw.unexplained],
        "failing_both": [
            {"probe": o.regime.id, "error": o.result.old.error, "evidence": o.result.evidence}
            for o in sw.failing_both
        ],
    }


def sweep_json(sw: Sweep) -> str:
    return envelope("sweep", sweep_record(sw))


def _excerpt(evidence: str) -> str:
    diff = Path(evidence) / "shipped.diff"
    if not diff.exists():
        return ""
    lines = diff.read_text().splitlines()
    shown = lines[:_DIFF_LINES]
    more = f"\n... {len(lines) - _DIFF_LINES} more lines" if len(lines) > _DIFF_LINES else ""
    return "\n".join(shown) + more


def _finding(o: RegimeOutcome) -> str:
    """A probe's finding as a markdown table cell."""
    r = o.result
    if r.shipped == Identity.IDENTICAL:
        return "same shipped program"
    if r.shipped.endswith("cannot-convert"):
        side = r.old if r.shipped.startswith("old") else r.new
        return f"{r.shipped}: {md_code(side.error, cell=True)}"
    return md_text(o.verdict.reason)


def _headline(notes: ReleaseNotes) -> list[str]:
    """The summary table first: per record, how many of the library's probe cases it has, how
    many of them change their own shipped program and their verdicts; then each shipped
    bundle's own answer (`affected`), which those counts are not."""
    out = [
        "| record | library probe cases | of them, changing their shipped program | verdicts | "
        "shipped bundles' own answer (`affected`) |",
        "|---|---|---|---|---|",
    ]
    for f in notes.fixes:
        answers = md_text(bundle_answers(f)) or "no bundle concerned"
        if f.loads:
            out.append(
                f"| {md_text(f.fix.label)} | {len(f.loads)} asset probe(s) | load check | "
                + "; ".join(
                    md_text(f"{a.exporter}: {_loads(a)}, {b.exporter}: {_loads(b)}")
                    for a, b in f.loads
                )
                + f" | {answers} |"
            )
            continue
        changed = sum(1 for o in f.outcomes if o.result.shipped != Identity.IDENTICAL)
        verdicts: dict[str, int] = {}
        for o in f.outcomes:
            verdicts[o.verdict.verdict] = verdicts.get(o.verdict.verdict, 0) + 1
        counted = ", ".join(f"{n} {v}" for v, n in verdicts.items()) or "no probe yet"
        out.append(
            f"| {md_text(f.fix.label)} | {len(f.outcomes)} | {changed} | {counted} | {answers} |"
        )
    unexplained = len(notes.unexplained)
    return out + ["", f"Changes no fix record explains: {unexplained}.", ""]


def notes_markdown(notes: ReleaseNotes, details: bool = False) -> str:
    """For a release page: the summary table first, then each record's probes. The shipped IR
    diff of each changing probe is named by its evidence folder; `details` also quotes an
    excerpt of each (the size of a page grows with them: 115 KB for 0.4.1 -> 0.4.2)."""
    out = [
        f"# coreai-torch {md_text(notes.old)} → {md_text(notes.new)}: what changes in converted "
        "programs",
        "",
    ]
    out += _headline(notes)
    out.append(
        f"Measured on: {md_text('; '.join(notes.runtimes) or 'no run needed')}. Every row comes "
        "from a conversion under both releases; evidence folders hold the IR, the "
        "normalised diff and the tensors."
    )
    out.append("")
    for f in notes.fixes:
        alias = f" (also #{', #'.join(f.fix.aliases)})" if f.fix.aliases else ""
        out.append(f"## {md_text(f.fix.label)}{md_text(alias)} {md_text(f.fix.title)}")
        out.append("")
        held = f.fix.record_kind.concerned(_Concerned(f), f.fix)
        out.append(f"Upstream: {md_text(f.fix.upstream or 'not public')}. {held}")
        out.append("")
        if f.answers:
            out += [f"{md_line(answers_line(f))}.", ""]
        out += _drafted_line(f)
        if f.loads:
            out.append("| asset probe | old asset on each runtime | new asset on each runtime |")
            out.append("|---|---|---|")
            out += [
                f"| {md_text(a.spec.dtype)} | {md_text(_loads(a))} | {md_text(_loads(b))} |"
                for a, b in f.loads
            ]
            errors = sorted(
                {o.error for a, b in f.loads for o in (*a.outcomes, *b.outcomes) if o.error}
            )
            out += [""] + [f"- {md_code(e)}" for e in errors] + [""]
            continue
        if not f.outcomes:
            out.append("_No probe in the library for this construct yet._")
            out.append("")
            continue
        if f.fix.record_kind.names_constructs:
            out += _summary_lines(f) + [""]
        out.append(
            "| library probe case | emitted | shipped | outputs | max abs old-new | verdict | "
            "finding |"
        )
        out.append("|---|---|---|---|---|---|---|")
        for o in f.outcomes:
            r = o.result
            s = r.measurement.stats if r.measurement and r.measurement.ok else None
            control = " (control)" if o.regime.control else ""
            out.append(
                f"| {md_code(o.regime.name, cell=True)}{control} | {r.emitted} | {r.shipped} | "
                f"{r.outputs} | {_num(s.maxabs_old_new) if s else '-'} | {o.verdict.verdict} | "
                f"{_finding(o)} |"
            )
        out.append("")
        diffs = [o for o in f.outcomes if (Path(o.result.evidence) / "shipped.diff").exists()]
        if diffs and not details:
            out += [
                "<details><summary>Shipped IR diffs (evidence folders; --details quotes "
                "them)</summary>",
                "",
            ]
            out += [
                f"- {md_code(o.regime.name)}: {md_code(f'{o.result.evidence}/shipped.diff')}"
                for o in diffs
            ]
            out += ["", "</details>", ""]
        for o in f.outcomes if details else ():
            excerpt = _excerpt(o.result.evidence)
            if excerpt:
                out.append(
                    f"<details><summary>{html_text(o.regime.name)}: shipped IR diff "
                    f"(<code>{html_text(o.result.evidence)}</code>)</summary>"
                )
                out.append("")
                out.append("```diff")
                out.append(excerpt)
                out.append("```")
                out.append("</details>")
                out.append("")
    if notes.unexplained:
        out += ["## Changes no fix record explains", ""]
        out += [
            f"- {md_code(o.regime.id)} changes in {md_text(s.label)} ({o.verdict.verdict}); no "
            f"record of {md_text(s.label)} names {md_text(o.regime.construct)}"
            + (f" ({md_text(s.note)})" if s.note else "")
            + f": {md_code(s.result.evidence)}"
            for o, s in notes.unexplained
        ] + [""]
    return "\n".join(out) + "\n"


def notes_table(notes: ReleaseNotes) -> Group:
    table = Table(
        title=f"coreai-torch {notes.old} → {notes.new}", show_lines=False, title_justify="left"
    )
    # the library's probe cases of each record, not the shipped bundles (their own answer is
    # the line under the table)
    for col in ("fix", "library probe case", "emitted", "shipped", "outputs", "verdict"):
        table.add_column(col, overflow="fold")
    for f in notes.fixes:
        for a, b in f.loads:
            table.add_row(
                f.fix.label,
                f"asset probe {a.spec.dtype}: load check",
                "",
                "",
                "",
                f"{a.exporter}: {_loads(a)}; {b.exporter}: {_loads(b)}",
            )
        if not f.outcomes and not f.loads:
            table.add_row(f.fix.label, "(no probe)", "", "", "", "")
        for o in f.outcomes:
            table.add_row(
                f.fix.label,
                o.regime.name,
                o.result.emitted,
                o.result.shipped,
                o.result.outputs,
                o.verdict.verdict,
            )
    lines: list = [table]
    # which shipped bundles each record concerns, as the markdown says it (a finding the
    # terminal dropped would make it a different answer)
    for f in notes.fixes:
        if f.held_by:
            lines.append(
                Text(
                    f"{f.fix.label} held by: "
                    + "; ".join(f"{b} {label} x{count}" for b, label, count in f.held_by)
                )
            )
        elif f.bundles:
            lines.append(Text(f"{f.fix.label} concerns: {', '.join(f.bundles)}"))
        if f.answers:
            lines.append(Text(answers_line(f)))
    for o, s in notes.unexplained:
        lines.append(
            Text(
                f"unexplained: {o.regime.id} changes in {s.label} "
                f"({o.verdict.verdict}); no record of {s.label} names "
                f"{o.regime.construct}" + (f" ({s.note})" if s.note else ""),
                style="bold red",
            )
        )
    runtimes = "; ".join(notes.runtimes) or "no run needed"
    return Group(*lines, Text(f"measured on: {runtimes}"))


def sweep_table(sw: Sweep) -> Group:
    what = "shipped instances" if sw.source == "registry" else "probes"
    table = Table(
        title=f"sweep coreai-torch {sw.old} → {sw.new}: {len(sw.changed)} of "
        f"{sw.probed} {what} change the shipped program",
        title_justify="left",
    )
    for col in ("probe", "shipped", "outputs", "verdict", "explained by"):
        table.add_column(col, overflow="fold")
    for f in sw.changed:
        o = f.outcome
        explained = ", ".join(f"#{i}" if i.isdigit() else i for i in f.explained_by)
        if f.steps:
            explained = step_line(f.steps).removeprefix("changes in ")
        cell = (
            Text("no fix record", style="bold red")
            if f.unexplained and not f.steps
            else Text(explained, style="bold red" if f.unexplained else "")
        )
        table.add_row(o.regime.id, o.result.shipped, o.result.outputs, o.verdict.verdict, cell)
    lines: list = [table]
    if sw.failing_both:
        lines.append(
            Text(
                f"{len(sw.failing_both)} probe(s) fail the same way under both "
                "releases (a standing limitation, not a change):"
            )
        )
        lines += [Text(f"  {o.regime.id}: {o.result.old.error}") for o in sw.failing_both]
    return Group(*lines)


def sweep_markdown(sw: Sweep) -> str:
    """For a ticket: each probe whose shipped program changes, with its verdict and the records
    that explain it (none: said loudly), then the probes failing the same way on both sides."""
    what = "shipped instances" if sw.source == "registry" else "probes"
    out = [
        f"# Sweep of coreai-torch {md_text(sw.old)} → {md_text(sw.new)}",
        "",
        f"**{len(sw.changed)} of {sw.probed} {what} change the shipped program; "
        f"{len(sw.unexplained)} explained by no fix record**",
        "",
        "| probe | shipped | outputs | verdict | explained by |",
        "|---|---|---|---|---|",
    ]
    for f in sw.changed:
        o = f.outcome
        explained = ", ".join(f"#{i}" if i.isdigit() else i for i in f.explained_by)
        if f.steps:
            explained = step_line(f.steps).removeprefix("changes in ")
        explained = md_text(explained)
        if f.unexplained and not f.steps:
            explained = "**no fix record**"
        out.append(
            f"| {md_code(o.regime.id, cell=True)} | {o.result.shipped} | {o.result.outputs} | "
            f"{o.verdict.verdict} | {explained} |"
        )
    if sw.failing_both:
        out += [
            "",
            f"{len(sw.failing_both)} probe(s) fail the same way under both releases (a "
            "standing limitation, not a change):",
            "",
        ]
        out += [f"- {md_code(o.regime.id)}: {md_text(o.result.old.error)}" for o in sw.failing_both]
    return "\n".join(out) + "\n"
