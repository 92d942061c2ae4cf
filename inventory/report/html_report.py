"""The HTML report (`-f html -o report.html`): one self-contained file a team can look at.

Everything is inline (styles, SVG plots, data): it opens from disk in any browser, with no
server and no network. Built from the same document the other formats render, plus what the
evidence it cites holds (the measured tensors, the normalised programs), read from this
machine's store; a piece of evidence not found here is said so, never left out silently.

Per bundle: its level and the findings that set it, each with its reason, remedies and evidence
ids; the ignored findings with their reasons; the not-affected fixes folded; for each probe that
moved, the fp32 reference against the old and new programs' values and a side-by-side diff of
the two normalised programs; for a whole-program check, the drift per output and per region and
the module tree with the changed regions marked. Across bundles: the summary counts and the load
matrix (bundle x runtime).
"""

from __future__ import annotations

import difflib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from inventory.answer_types import unrecorded_said
from inventory.coverage import Coverage
from inventory.report import plots
from inventory.report.cyclonedx_report import upstream_ref, upstream_url
from inventory.report.document import Document
from inventory.report.evidence import evidence_dir, evidence_id, measured_tensors, normalised_ir
from inventory.report.record_facts import detours, exporter_label
from inventory.report.verify_report import torch_line, unrecorded_line
from inventory.verdict import Verdict
from inventory.verify.torch_check import TorchCheck
from inventory.version import version

LEVELS = ("required", "inconclusive", "unchecked", "optional", "no")
_FINDING_KEYS = (
    ("required", "required"),
    ("inconclusive", "inconclusive"),
    ("unchecked", "unchecked"),
    ("optional", "optional"),
)
_MAX_PROBE_VIEWS = 12  # probes drawn per report: the rest are listed with their evidence
_DIFF_LINES = 4000  # lines of a normalised program compared side by side


@dataclass
class Finding:
    fix: str
    title: str
    level: str
    verdict: str
    reason: str
    remedies: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    ignored: str | None = None
    not_checked: str | None = None

    @property
    def ref(self) -> str:
        return upstream_ref(self.fix)

    @property
    def url(self) -> str | None:
        return upstream_url(self.fix)


@dataclass(frozen=True)
class LoadCell:
    """One cell of the load matrix: its state (the cell's class: `loads`, `crashes`,
    `fails-to-load`, `depends-on-exporter`, ...) and what it says."""

    state: str
    text: str


@dataclass
class ProbeView:
    label: str
    evidence: str
    plots: list[str] = field(default_factory=list)
    diff: str | None = None
    missing: str | None = None


@dataclass
class BundleView:
    name: str
    level: str
    reason: str
    exporter: str = ""
    findings: list[Finding] = field(default_factory=list)
    ignored: list[Finding] = field(default_factory=list)
    not_affected: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    probes: list[ProbeView] = field(default_factory=list)
    drift_plots: list[str] = field(default_factory=list)
    tree: list[dict[str, Any]] = field(default_factory=list)
    # a whole-program check's steps: (step, emitted, shipped, verdict, re-export, reason)
    steps: list[tuple[str, ...]] = field(default_factory=list)
    # (step, unified diff excerpt) of emitted programs the optimizer makes the same again
    emitted_diffs: list[tuple[str, str]] = field(default_factory=list)
    # what the answer rests on: the bar's (class, percent) segments and the sentence under it
    coverage_bar: list[tuple[str, float]] = field(default_factory=list)
    coverage_line: str = ""

    def cover(self, record: dict[str, Any] | None) -> None:
        """The bundle's coverage (its JSON record) as a bar of the three classes and its
        line: the uncovered kinds by count and the command that covers them."""
        if not record:
            return
        c = Coverage.from_json(record)
        self.coverage_line = c.line(self.name)
        self.coverage_bar = [
            (css, round(100 * c.share(part), 1))
            for css, part in (
                ("probed", c.probed),
                ("whole", c.whole),
                ("not-covered", c.not_covered),
            )
            if part
        ]


@dataclass
class Report:
    command: str
    title: str
    bundles: list[BundleView]
    runtimes: list[str] = field(default_factory=list)
    loads: dict[str, dict[str, LoadCell]] = field(default_factory=dict)  # bundle -> runtime ->
    notes: list[str] = field(default_factory=list)

    @property
    def counts(self) -> dict[str, int]:
        """Bundles per level (per status for a whole-program check), most urgent first."""
        order = (*LEVELS[:4], "inconsistent", "consistent", "no")
        found = {b.level for b in self.bundles}
        return {
            level: sum(b.level == level for b in self.bundles)
            for level in (*order, *sorted(found - set(order)))
            if level in found
        }


def _finding(
    item: dict[str, Any], level: str, fix: str | None = None, title: str | None = None
) -> Finding:
    evidence = item.get("evidence") or []
    if isinstance(evidence, str):
        evidence = [evidence]
    ignored = item.get("ignored")
    return Finding(
        fix=str(fix if fix is not None else item.get("fix", "")),
        title=title if title is not None else item.get("title", ""),
        level=level,
        verdict=str(item.get("verdict", "")),
        reason=str(item.get("reason", "")),
        remedies=list(item.get("remedies") or []),
        evidence=[evidence_id(e) for e in evidence],
        ignored=ignored.get("reason") if isinstance(ignored, dict) else None,
        not_checked=item.get("not_checked"),
    )


def _load_row(load: dict[str, Any] | None) -> dict[str, LoadCell]:
    """Per runtime, the outcome of the bundle's own exporter's asset (the first check). For a
    bundle whose exporter is not recorded the checks are each candidate release's: a runtime
    where they differ depends on the exporter, and says what each release's asset does there."""
    if not load or not load.get("checks"):
        return {}
    checks = load["checks"] if load.get("verdict") == Verdict.DEPENDS_ON_EXPORTER else []
    checks = checks or load["checks"][:1]
    by_runtime: dict[str, list[tuple[str, str]]] = {}
    deployed: dict[str, str] = {}
    for check in checks:
        for o in check.get("outcomes", []):
            by_runtime.setdefault(o["runtime"], []).append((check["exporter"], o["outcome"]))
            deployed[o["runtime"]] = " (deployment)" if o.get("deployment") else ""
    row = {}
    for runtime, found in by_runtime.items():
        outcomes = {outcome for _, outcome in found}
        if len(outcomes) == 1:
            [outcome] = outcomes
            row[runtime] = LoadCell(outcome, outcome + deployed[runtime])
        else:
            said = ", ".join(f"{release} {outcome}" for release, outcome in found)
            row[runtime] = LoadCell(
                Verdict.DEPENDS_ON_EXPORTER,
                f"depends on the exporter{deployed[runtime]}: {said}",
            )
    return row


def _exporter(b: dict[str, Any]) -> str:
    return f"coreai-torch {exporter_label(b)}"


def _probe_view(label: str, ref: str) -> ProbeView:
    view = ProbeView(label=label, evidence=evidence_id(ref))
    folder = evidence_dir(ref)
    if folder is None:
        view.missing = f"evidence {evidence_id(ref)} is not in this machine's store"
        return view
    for name, reference, old, new in measured_tensors(folder):
        bad = [
            f"{side} {int(np.size(x) - np.isfinite(x).sum())} non-finite"
            for side, x in (("old", old), ("new", new))
            if x is not None and not np.isfinite(x).all()
        ]
        view.plots.append(
            plots.values(
                f"{label}: {name} {list(reference.shape)}"
                f"{' (' + ', '.join(bad) + ')' if bad else ''}",
                reference,
                old,
                new,
            )
        )
    ir = normalised_ir(folder)
    if ir is not None and ir[0] != ir[1]:
        old_lines = ir[0].splitlines()[:_DIFF_LINES]
        new_lines = ir[1].splitlines()[:_DIFF_LINES]
        view.diff = difflib.HtmlDiff(tabsize=2, wrapcolumn=90).make_table(
            old_lines, new_lines, "old (normalised)", "new (normalised)", context=True, numlines=3
        )
    return view  # a load check keeps neither: its outcomes are in the load matrix


def _views(findings: Iterable[Finding], budget: list[int]) -> list[ProbeView]:
    out: list[ProbeView] = []
    for f in findings:
        for ref in f.evidence:
            if budget[0] <= 0:
                return out
            view = _probe_view(f"{f.ref} {ref}", ref)
            if view.plots or view.diff or view.missing:
                budget[0] -= 1
                out.append(view)
    return out


# ---- plan -----------------------------------------------------------------------------------


def plan_report(result: dict[str, Any]) -> Report:
    budget = [_MAX_PROBE_VIEWS]
    bundles = []
    loads: dict[str, dict[str, LoadCell]] = {}
    for b in result.get("bundles", []):
        view = BundleView(name=b["bundle"], level=b["reexport"], reason="", exporter=_exporter(b))
        view.cover(b.get("coverage"))
        for key, level in _FINDING_KEYS:
            view.findings += [_finding(i, level) for i in b.get(key) or []]
        view.ignored = [_finding(i, i["ignored"].get("level", "")) for i in b.get("ignored") or []]
        view.not_affected = [_finding(i, "no") for i in b.get("not_affected") or []]
        load = b.get("load")
        if load and load.get("reexport") not in (None, "no") and not b.get("load_explained_by"):
            view.findings.insert(
                0,
                Finding(
                    fix="load",
                    title="the shipped asset on its deployment runtimes",
                    level=load["reexport"],
                    verdict=load.get("verdict", ""),
                    reason=load.get("reason", ""),
                    remedies=list(load.get("remedies") or []),
                ),
            )
        for u in b.get("unexplained") or []:
            view.findings.append(
                Finding(
                    fix="unrecorded",
                    title=f"{u['construct']} changes in {u['step']}",
                    level=u["reexport"],
                    verdict=u["verdict"],
                    reason=u["reason"],
                    evidence=[evidence_id(u["evidence"])] if u.get("evidence") else [],
                )
            )
        top = next((f for f in view.findings if f.level == view.level), None)
        view.reason = (
            f"{top.ref}: {top.reason}"
            if top
            else view.coverage_line
            if view.level == "unchecked" and view.coverage_line
            else f"none of {len(view.not_affected)} fixes changes its program"
        )
        if b.get("verify"):
            view.notes.append(f"whole program: {b['verify'].get('answer')}")
            torch = torch_line(TorchCheck.from_json(b["verify"].get("torch")))
            if torch is not None and torch[0] == "caveat":
                view.notes.append(f"whole program {torch[0]}: {torch[1]}")
            _whole_program(view, b["verify"])
        view.probes = _views(
            [f for f in view.findings if f.level in ("required", "optional")], budget
        )
        loads[view.name] = _load_row(load)
        bundles.append(view)
    runtimes = sorted({r for row in loads.values() for r in row})
    report = Report(
        "plan",
        f"Re-export plan for coreai-torch {result.get('to')}",
        _ordered(bundles),
        runtimes,
        loads,
    )
    if result.get("suggest"):
        report.notes.append(result["suggest"])
    return report


def _ordered(bundles: list[BundleView]) -> list[BundleView]:
    rank = {level: n for n, level in enumerate((*LEVELS[:4], "inconsistent", "consistent"))}
    return sorted(bundles, key=lambda b: rank.get(b.level, len(rank)))


# ---- affected ---------------------------------------------------------------------------------


def affected_report(result: dict[str, Any]) -> Report:
    budget = [_MAX_PROBE_VIEWS]
    fix, title = str(result["fix"]), result.get("title", "")
    bundles, loads = [], {}
    for b in result.get("bundles", []):
        finding = _finding(
            {**b, "evidence": [p["evidence"] for p in b.get("probes", []) if p.get("evidence")]},
            b["reexport"],
            fix,
            title,
        )
        view = BundleView(
            name=b["bundle"], level=b["reexport"], reason=b.get("reason", ""), exporter=_exporter(b)
        )
        view.cover(b.get("coverage"))
        (
            view.ignored
            if finding.ignored
            else view.findings
            if b["reexport"] != "no"
            else view.not_affected
        ).append(finding)
        view.notes += [
            f"instance: {i['count']}x {i['kind']} {i['params']}" for i in b.get("instances", [])
        ]
        # the runtime a value comes from is part of the answer, as the table's chain says it
        view.notes += detours(b)
        view.notes += [unrecorded_said(s) for s in [b.get("unrecorded_state")] if s]
        if b.get("reexport") in ("required", "optional"):
            view.probes = _views([finding], budget)
        loads[view.name] = _load_row(b.get("load"))
        bundles.append(view)
    runtimes = sorted({r for row in loads.values() for r in row})
    return Report(
        "affected",
        f"{upstream_ref(fix)}: {title} (coreai-torch {result.get('to')})",
        _ordered(bundles),
        runtimes,
        loads,
    )


# ---- verify -----------------------------------------------------------------------------------


def verify_report(result: dict[str, Any]) -> Report:
    bundles = []
    for b in result.get("bundles", []):
        view = BundleView(
            name=b["bundle"],
            level=b.get("status") or "inconclusive",
            reason=b.get("answer") or b.get("reason") or "",
            exporter=_exporter(b),
        )
        if b.get("reexport"):
            view.notes.append(f"re-export {b['reexport']}: {b.get('reason')}")
        view.notes += [f"INCONSISTENT: {i}" for i in b.get("inconsistencies") or []]
        view.notes += [f"limitation: {i}" for i in b.get("limitations") or []]
        # what the table and the markdown say of the check besides its level: each change no
        # record explains, each disagreement of region and model-level runs, each note (an
        # environment deviation, a stand-in module)
        view.notes += [f"UNRECORDED: {unrecorded_line(u)}" for u in b.get("unrecorded") or []]
        view.notes += [f"DISAGREE: {d}" for d in b.get("disagreements") or []]
        view.notes += [f"note: {n}" for n in b.get("notes") or []]
        torch = torch_line(TorchCheck.from_json(b.get("torch")))
        if torch is not None:
            view.notes.append(f"{torch[0]}: {torch[1]}")
        _whole_program(view, b)
        bundles.append(view)
    return Report(
        "verify", f"Whole-program check to coreai-torch {result.get('to')}", _ordered(bundles)
    )


def _whole_program(view: BundleView, b: dict[str, Any]) -> None:
    """Drift per output and per region, and the module tree with the changed regions."""
    steps = [s for s in b.get("steps") or [] if isinstance(s, dict)]
    rows = [
        {**r, "step": s.get("step")}
        for s in steps
        for r in s.get("drift") or []
        if isinstance(r, dict)
    ]
    if rows:
        view.drift_plots.append(
            plots.drift_bars(
                f"{view.name}: max |difference| per output (model-level run, on "
                f"{(b.get('run') or {}).get('runtime')})",
                [f"{r.get('step', '')} {r['output']}" for r in rows],
                {
                    "|old - fp32|": [r.get("maxabs_old") for r in rows],
                    "|new - fp32|": [r.get("maxabs_new") for r in rows],
                    "|old - new|": [r.get("maxabs_old_new") for r in rows],
                },
            )
        )
    regions = [g for g in b.get("regions") or [] if isinstance(g, dict)]
    measured = [g for g in regions if ((g.get("region_run") or {}).get("drift"))]
    if measured:
        view.drift_plots.append(
            plots.drift_bars(
                f"{view.name}: max |difference| per changed region (at its own cut)",
                [
                    f"{g.get('step')} @{g.get('graph')} {', '.join(g.get('modules') or [])[:40]}"
                    for g in measured
                ],
                {
                    "|old - fp32|": [g["region_run"]["drift"].get("maxabs_old") for g in measured],
                    "|new - fp32|": [g["region_run"]["drift"].get("maxabs_new") for g in measured],
                    "|old - new|": [
                        g["region_run"]["drift"].get("maxabs_old_new") for g in measured
                    ],
                },
            )
        )
    view.tree = module_tree(regions)
    for s in steps:
        emitted, shipped = s.get("emitted") or {}, s.get("shipped") or {}
        view.steps.append(
            (
                str(s.get("step")),
                _identity(emitted),
                _identity(shipped),
                str(s.get("verdict") or "-"),
                str(s.get("reexport") or "-"),
                str(s.get("reason") or ""),
            )
        )
        if emitted.get("identity") == "differs" and shipped.get("identity") == "identical":
            excerpt = _diff_excerpt(emitted.get("diff"))
            if excerpt:
                view.emitted_diffs.append((str(s.get("step")), excerpt))
    for s in steps:  # the shipped programs of each step that changes them, side by side
        if (s.get("shipped") or {}).get("identity") == "differs" and s.get("evidence"):
            view.probes.append(_probe_view(f"{s['step']} whole program", s["evidence"]))


def _identity(side: dict[str, Any]) -> str:
    identity = str(side.get("identity") or "-")
    lines = side.get("changed_lines")
    return f"{identity} ({lines} lines)" if identity == "differs" and lines else identity


_EXCERPT_LINES = 120


def _diff_excerpt(path: str | None) -> str:
    """The first lines of a stored unified diff (the whole file is in the evidence folder)."""
    if not path or not Path(path).is_file():
        return ""
    with open(path, encoding="utf-8", errors="replace") as handle:
        lines = [line.rstrip("\n") for line in itertools.islice(handle, _EXCERPT_LINES + 1)]
    more = len(lines) > _EXCERPT_LINES
    return "\n".join(lines[:_EXCERPT_LINES]) + ("\n..." if more else "")


def module_tree(regions: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The modules the changed regions lie in, as a tree of dotted names, each node marked with
    the regions (step, stage) that change inside it."""
    root: dict[str, Any] = {"children": {}}
    for g in regions:
        mark = f"{g.get('step')} {g.get('stage')}"
        for module in g.get("modules") or ["(no located module)"]:
            node = root
            for part in module.split("."):
                node = node["children"].setdefault(part, {"children": {}, "marks": set()})
            node["marks"].add(mark)

    def flat(node: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"name": name, "marks": sorted(child["marks"]), "children": flat(child)}
            for name, child in sorted(node["children"].items())
        ]

    return flat(root)


BUILDERS = {"plan": plan_report, "affected": affected_report, "verify": verify_report}


def render_html(command: str, result: dict[str, Any], warnings: Iterable[str] = ()) -> str:
    """The self-contained page of one answer; the run's warnings among its summary's notes (a
    warning the page dropped would make it a different answer)."""
    import jinja2

    report = BUILDERS[command](result)
    report.notes += [f"warning: {w}" for w in warnings]
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("inventory.report", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template("report.html.j2").render(r=report, levels=LEVELS, version=version())


def write(document: Document[Any]) -> str:
    """The `-f html` writer (inventory/output.py): the page of the command's document."""
    return render_html(document.command, document.record(), document.warnings)
