"""Renderers for `verify`: the JSON record, terminal lines and markdown."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text

from inventory.report.text import md_line, md_text
from inventory.summary import BundleLine, Summary, summarise
from inventory.verdict import Reexport
from inventory.verify.record import bundle_record, overall_rows, verify_record
from inventory.verify.service import BundleVerify, Verify, region_line, status
from inventory.verify.torch_check import TorchCheck

__all__ = ["bundle_record", "verify_record", "verify_markdown", "verify_summary", "verify_table"]

_STATUS_STYLE = {"consistent": "green", "inconsistent": "bold red", "inconclusive": "magenta"}


def _num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}g}"


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value / 1024:.2f} GB"


def _arg(value: Any) -> str:
    """A build argument; a nested table (a config override) only by its keys (--json has it)."""
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(
                f"{k}: {_arg(v) if isinstance(v, dict) else '...'}" for k, v in value.items()
            )
            + "}"
        )
    return repr(value)


def _form(form: dict[str, Any]) -> str:
    args = ", ".join(f"{k}={_arg(v)}" for k, v in sorted(form.get("build", {}).items()))
    who = "stand-in " if form.get("standin") else ""
    return f"{form.get('form')} ({who}{form.get('target')}({args}))"


def _drift_line(row: dict[str, Any]) -> str:
    return (
        f"{row['output']} {row['shape']}: old max abs {_num(row['maxabs_old'])} "
        f"(rel {_num(row['rel_old'])}, {row['nonfinite_old']} non-finite), new "
        f"{_num(row['maxabs_new'])} (rel {_num(row['rel_new'])}, {row['nonfinite_new']} "
        f"non-finite); |old-new| {_num(row['maxabs_old_new'])}; |ref| "
        f"{_num(row['ref_magnitude'])}"
    )


def region_run_line(g: dict[str, Any]) -> str:
    """A region's own run: where it was cut, whether the cut reproduces it, its drift."""
    run = g["region_run"]
    where = f"{g['step']} @{g['graph']}"
    if not run.get("reproduces"):
        return f"{where}: {run.get('why') or 'not measured'}"
    d = run["drift"]
    if not d:
        return f"{where}: cut reproduces ({run.get('hops')} rings); {run.get('why') or ''}"
    if run.get("cut_from", "").startswith("the ops"):
        where += " (a constant, cut where its values are used)"
    if run.get("nodes_missing"):
        where += f" ({len(run['nodes_missing'])} node(s) not in the cut's graph)"
    return (
        f"{where}: cut reproduces ({run.get('hops')} rings), {d['outputs']} output(s) on "
        f"{run['runtime']}: old max abs {_num(d['maxabs_old'])} (rel {_num(d['rel_old'])}), "
        f"new {_num(d['maxabs_new'])} (rel {_num(d['rel_new'])}), |old-new| "
        f"{_num(d['maxabs_old_new'])}, non-finite {d['nonfinite_old']}/{d['nonfinite_new']}"
    )


def unrecorded_line(u: dict[str, Any]) -> str:
    ops = ", ".join(u["coreai_ops"]) or "no op"
    kinds = ", ".join(u["constructs"]) or "no detected construct"
    mods = ", ".join(u["modules"]) or "no located module"
    have = ", ".join(u["records_of_step"]) or "none"
    moved = max((r["maxabs_old_new"] or 0.0 for r in u["drift"] or []), default=None)
    return (
        f"{u['step']} {u['stage']}: {u['regions']} region(s), {u['changed_lines']} lines "
        f"({ops}; {kinds}; modules {mods}); step drift max|old-new| {_num(moved)}"
        f"{' on ' + u['runtime'] if u['runtime'] else ''}"
        f"{_at_cuts(u)}; records of the step: {have}"
    )


def _at_cuts(u: dict[str, Any]) -> str:
    d = u.get("region_drift")
    if not d:
        return ""
    return (
        f"; at its own cuts ({u['regions_measured']} of {u['regions']} measured) "
        f"max|old-new| {_num(d['maxabs_old_new'])}, rel old {_num(d['rel_old'])}, new "
        f"{_num(d['rel_new'])}"
    )


def torch_line(torch: TorchCheck | None) -> tuple[str, str] | None:
    """The torch the whole program was built on, against the recipe's: a caveat when they
    differ (the program compared is not the one the recipe exported)."""
    if torch is None:
        return None
    built, recipe = torch.built, torch.recipe
    if recipe is None:
        return ("torch", f"built on torch {built}; the registry records no torch for the recipe")
    if torch.same:
        return ("torch", f"built on torch {built}, the recipe's ({recipe})")
    return (
        "caveat",
        f"built and exported on torch {built}, not on the recipe's torch {recipe} (its "
        "source: the registry's exporter table): the programs compared are not the ones the "
        "recipe exported; "
        + (
            f"measured: {torch.sensitivity}"
            if torch.sensitivity
            else "their sensitivity to torch is not measured (scripts/torch-sensitivity)"
        ),
    )


def bundle_lines(b: BundleVerify) -> list[tuple[str, str]]:
    """(label, text) lines for one bundle."""
    rec = bundle_record(b)
    lines = [
        (
            "bundle",
            f"{b.bundle}: coreai-torch {b.exporter}"
            f"{' (assumed)' if b.exporter_assumed else ''} -> {b.to}: "
            f"{rec['status']}",
        ),
        ("answer", rec["answer"]),
    ]
    if rec["reexport"]:
        lines.append(("re-export", f"{rec['reexport']} ({rec['verdict']}: {rec['reason']})"))
    if rec["form"]:
        lines.append(("form", _form(rec["form"])))
    if rec["build"]:
        bd = rec["build"]
        lines.append(
            (
                "build",
                f"{bd['params']:,} parameters, torch {bd['torch']}, "
                f"{_num(bd['seconds'])} s, peak {_mb(bd['peak_mb'])}",
            )
        )
    torch = torch_line(b.torch)
    if torch is not None:
        lines.append(torch)
    for name, side in rec["sides"].items():
        state = "converted" if side["ok"] else f"failed: {side.get('error')}"
        lines.append(
            (
                name,
                f"coreai-torch {side['converter']}: {state} in "
                f"{_num(side['seconds'])} s, peak {_mb(side['peak_mb'])}",
            )
        )
    for step in rec["steps"]:
        e, sh = step.get("emitted") or {}, step.get("shipped") or {}
        n = f" ({sh['changed_lines']} lines)" if sh.get("changed_lines") else ""
        lines.append(
            (
                "step",
                f"{step['step']}: emitted {e.get('identity')}, shipped "
                f"{sh.get('identity')}{n}"
                f", {step['regions']} region(s), {step['unrecorded_regions']} "
                f"unrecorded; records {', '.join(step['records']) or 'none'}; "
                f"level {step['reexport']} ({step['verdict']}, "
                f"{step['drift_source'] or 'nothing to measure'})",
            )
        )
    for stage in ("emitted", "shipped"):
        if rec.get(stage):
            st = rec[stage]
            extra = f" ({st['changed_lines']} lines)" if st.get("changed_lines") else ""
            lines.append((stage, f"{b.exporter} -> {b.to}: {st['identity']}{extra}"))
    run = rec["run"]
    if run:
        lines.append(
            (
                "run form",
                f"{_form(run['form'])}"
                f"{'' if run['same_as_compared'] else ' (not the compared form)'}"
                f", {run['params']:,} parameters"
                if run.get("params")
                else _form(run["form"]),
            )
        )
        if run["ok"]:
            first: dict[str | None, str] = {}
            parts_ = []
            for release, secs in (run["seconds"] or {}).items():
                shared = first.setdefault(run["evidence"].get(release), release)
                parts_.append(
                    f"{release} {secs:.0f} s"
                    if shared == release
                    else f"{release}: {shared}'s run (the same program)"
                )
            took = ", ".join(parts_)
            lines.append(
                ("runtime", f"{run['runtime']} (every program of the chain, one runtime; {took})")
            )
            lines += [("not run on", a) for a in run["attempts"]]
            lines += [("drift", _drift_line(row)) for row in run["outputs"]]
        else:
            lines.append(
                (
                    "runtime",
                    f"inconclusive: {run.get('error')}; {'; '.join(run.get('attempts', []))}",
                )
            )
    if len(rec["regions"]) > 1:
        lines += [("region", region_line(g)) for g in rec["regions"]]
    lines += [("region run", region_run_line(g)) for g in rec["regions"] if g.get("region_run")]
    lines += [("DISAGREE", d) for d in rec["disagreements"]]
    lines += [("UNRECORDED", unrecorded_line(u)) for u in rec["unrecorded"]]
    p = rec["probes"]
    if p:
        changed = (
            ", ".join(
                f"{c['probe']} in {c['step']} ({c['verdict']}, "
                f"{', '.join('#' + i for i in c['explained_by']) or 'no record'})"
                for c in p["changed"]
            )
            or "none change"
        )
        lines.append(("probes", f"{p['probed']} probed: {changed}"))
    lines += [("INCONSISTENT", i) for i in rec["inconsistencies"]]
    lines += [("limitation", i) for i in rec["limitations"]]
    lines += [("note", n) for n in rec["notes"]]
    t = rec.get("timing") or {}
    split = ", ".join(f"{k.replace('_', ' ')} {_num(v)} s" for k, v in t.items() if v)
    lines.append(
        (
            "cost",
            f"{_num(rec['seconds'])} s ({split or 'nothing measured'}), peak "
            f"{_mb(rec['peak_mb'])} per process"
            f"{' (stored: read back now)' if rec['cached'] else ''}",
        )
    )
    lines.append(("evidence", str(rec["evidence"])))
    return lines


def verify_table(v: Verify) -> Group:
    parts: list[Text] = []
    for b in v.bundles:
        style = _STATUS_STYLE[status(b)]
        for label, text in bundle_lines(b):
            line = Text(
                f"{label:<13}",
                style=style if label in ("bundle", "INCONSISTENT", "UNRECORDED") else "bold",
            )
            line.append(text)
            parts.append(line)
        parts.append(Text(""))
    return Group(*parts)


def verify_markdown(v: Verify) -> str:
    out = [f"# inventory verify --to {md_text(v.to)}", ""]
    for b in v.bundles:
        rec = bundle_record(b)
        out += [f"## {md_text(b.bundle)}: {rec['status']}", "", md_line(rec["answer"]), ""]
        # the bundle line's own facts beside its heading's: the exporter (assumed or not) and the
        # release it is checked against, as the terminal's first line says them
        checked = f"coreai-torch {b.exporter}{' (assumed)' if b.exporter_assumed else ''} -> {b.to}"
        out += ["| | |", "|---|---|", f"| exporter | {md_text(checked)} |"]
        out += [
            f"| {label} | {md_text(text)} |"
            for label, text in bundle_lines(b)[2:]
            if label != "drift"
        ]
        out.append("")
        rows = overall_rows(b)
        if rows:
            out += [
                "| output | shape | old max abs (rel) | new max abs (rel) | non-finite "
                "old/new | max abs old-new |",
                "|---|---|---|---|---|---|",
            ]
            out += [
                f"| {md_text(r['output'])} | {md_text(r['shape'])} | {_num(r['maxabs_old'])} "
                f"({_num(r['rel_old'])}) | {_num(r['maxabs_new'])} ({_num(r['rel_new'])})"
                f" | {r['nonfinite_old']}/{r['nonfinite_new']} | "
                f"{_num(r['maxabs_old_new'])} |"
                for r in rows
            ]
            out.append("")
    return "\n".join(out)


def verify_summary(v: Verify) -> Summary:
    """Per bundle: the level of its whole program (inconclusive when it could not be measured
    or disagrees with the probes) and what the check found."""

    def line(b: BundleVerify) -> BundleLine:
        level = b.verdict.reexport if b.verdict is not None else Reexport.INCONCLUSIVE
        if not b.consistent:
            level = Reexport.INCONCLUSIVE
        found = b.verdict.verdict if b.verdict is not None else "not measured"
        unrecorded = f", {len(b.unrecorded)} unrecorded change(s)" if b.unrecorded else ""
        return BundleLine(b.bundle, level, f"{status(b)}: {found}{unrecorded}")

    return summarise(line(b) for b in v.bundles)
