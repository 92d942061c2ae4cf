"""Every region of a whole program that changes in a release step: its stage, and the record
of that step that explains it, or none (an unrecorded change, a finding of its own).

Stage, from the step's two programs at both stages:

* `lowering`: the emitted programs differ at the region's aten nodes (a lowering emits
  something else for them: the ops each side's emitted program attributes to those nodes,
  compared in order; for a composite's body, the emitted bodies of that composite);
* `optimizer`: the emitted programs are the same there and the shipped ones are not (what
  `optimize()`, or the pinned coreai-core's rewrite, makes of them).

A region with no located aten node (a constant the optimizer hoisted or folded) is `lowering`
when one of its changed lines is in one side's emitted program and not the other's (the
lowering emitted it), else `optimizer` (a line neither emitted program holds was made by the
optimizer; one both hold was kept or moved by it).

Attribution rules (data, never verdicts): a record of the region's own step explains it when

* (a) `construct`: the record names a construct a detector finds in the region's nodes (or the
  composite whose body it is), and the region's stage is `lowering` (at the optimizer stage the
  lowerings emitted the same program there, and crediting a lowering record of its step
  would blame a pipeline change on it);
* (b) `pipeline`: it is a pipeline record (a coreai-core pin) and the region's stage is
  `optimizer`;
* (c) `touches`: its `touches` lists one of the region's aten targets or Core AI ops.

Anything else is unrecorded, and is never folded into a record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inventory.verdict import ProbeVerdict, Reexport, Verdict
from inventory.verify.compared_pair import DIFFERS, IDENTICAL, ComparedPair
from inventory.verify.converted_side import ConvertedSide
from inventory.verify.regions import Located, Region, shape
from inventory.verify.step_check import StepCheck
from inventory.verify.step_region import StepRegion
from oracle.catalog import LOWERING, OPTIMIZER, Fix, between

MODULES_SHOWN = 6


def stage_of(region: Region, emitted: list[Region], texts: dict[str, Any] | None) -> str:
    if texts is None:
        # no emitted program to compare (a release whose to_coreai() optimizes and could not
        # be captured before it): the change cannot be put on the optimizer
        return LOWERING
    if region.composite:
        # a composite's body: its ops carry no aten node of their own (the call sites do), so
        # the emitted bodies of the same composite are compared
        return LOWERING if any(e.composite == region.composite for e in emitted) else OPTIMIZER
    if region.nodes:
        lowered = [
            [ln for node in sorted(region.nodes) for ln in side.get(node, [])]
            for side in (texts["by_node"]["old"], texts["by_node"]["new"])
        ]
        if any(lowered):
            # what the lowerings emitted for the region's aten nodes, side by side
            return LOWERING if lowered[0] != lowered[1] else OPTIMIZER
        # neither emitted program attributes an op to these nodes: by the emitted regions
        return LOWERING if any(region.nodes & e.nodes for e in emitted) else OPTIMIZER
    old, new = texts["emitted"]["old"], texts["emitted"]["new"]
    changed = [shape(texts["shipped"]["old"][n - 1]) for n in region.lines_old] + [
        shape(texts["shipped"]["new"][n - 1]) for n in region.lines_new
    ]
    return LOWERING if any((ln in old) != (ln in new) for ln in changed) else OPTIMIZER


def attributed(region: dict[str, Any], records: list[Fix]) -> dict[str, str]:
    """record id -> the rule that explains the region by it."""
    kinds = set(region["constructs"]) | (
        {region["composite"]} if region.get("composite") else set()
    )
    ops = set(region.get("ops", [])) | set(region.get("coreai_ops", []))
    out: dict[str, str] = {}
    for fix in records:
        hit = sorted(kinds & set(fix.constructs))
        # the kind says whether a change at the region's stage is its to explain
        if fix.record_kind.credited(region["stage"], bool(hit)):
            out[fix.id] = (
                f"construct {', '.join(hit)}"
                if region["stage"] == LOWERING and hit
                else f"{fix.kind} record, {region['stage']} stage"
            )
        elif touched := sorted(ops & set(fix.touches)):
            out[fix.id] = f"touches {', '.join(touched)}"
    return out


def step_regions(
    step: ComparedPair,
    shipped: list[Region],
    emitted: list[Region],
    texts: dict[str, Any] | None,
    fixes: list[Fix],
) -> list[StepRegion]:
    """A step's regions, each with its step, stage and records (`texts`: whole.stage_texts)."""
    label = step.label
    records = between(fixes, step.old, step.new)
    out = []
    for region in shipped:
        stage = stage_of(region, emitted, texts)
        how = attributed({**region.to_json(), "stage": stage}, records)
        out.append(StepRegion.of(region, label, stage, how, step.evidence))
    return out


def stage_texts(
    pair: ComparedPair, old: ConvertedSide, new: ConvertedSide
) -> dict[str, Any] | None:
    """What telling a change's stage needs beside the regions: both sides' normalised shipped
    lines, the set of each side's emitted lines and, per aten node, the emitted lines lowered
    from it (value numbers set aside); None when the emitted programs cannot be compared."""
    shipped, emitted = pair.shipped, pair.emitted
    if shipped.identity != DIFFERS or emitted.identity not in (IDENTICAL, DIFFERS):
        return None
    assert shipped.normalised is not None and emitted.normalised is not None  # both compared
    text = {k: Path(v).read_text().splitlines() for k, v in shipped.normalised.items()}
    lines = {k: Path(v).read_text().splitlines() for k, v in emitted.normalised.items()}
    by_node: dict[str, dict[str, list[str]]] = {}
    for label, side in (("old", old), ("new", new)):
        by_node[label] = {}
        located_file = side.files.get("emitted_located")
        if not located_file:
            continue
        located = Located(Path(located_file).read_text())
        if not located.aligned(lines[label]):
            continue
        for i, line in enumerate(lines[label]):
            for node in located.identifiers(i):
                by_node[label].setdefault(node, []).append(shape(line))
    return {
        "shipped": text,
        "emitted": {k: {shape(ln) for ln in v} for k, v in lines.items()},
        "by_node": by_node,
    }


def judge_drift(
    rows: list[dict[str, Any]] | None, runtime: str | None, tolerance: float, why_not: str = ""
) -> ProbeVerdict:
    """The re-export policy applied to a whole program's drift (as `verdict.judge` applies it
    to a probe's): the worst output decides."""
    if not rows:
        return ProbeVerdict(
            Verdict.INCONCLUSIVE,
            Reexport.INCONCLUSIVE,
            f"the whole programs differ but were not run: {why_not or 'no run'}",
        )
    bad_ref = [r for r in rows if r.get("ref_nonfinite")]
    if bad_ref:
        # NaN/inf in the torch fp32 reference: no error can be measured against it
        return ProbeVerdict(
            Verdict.INCONCLUSIVE,
            Reexport.INCONCLUSIVE,
            f"the torch fp32 reference holds non-finite values in "
            f"{', '.join(r['output'] for r in bad_ref)}: nothing to measure "
            f"against ({runtime})",
        )
    if all(r["bit_identical"] for r in rows):
        return ProbeVerdict(
            Verdict.VALUES_IDENTICAL,
            Reexport.OPTIONAL,
            f"whole shipped programs differ, outputs bit-identical on {runtime}",
        )
    worst_old = worst_new = 0.0
    old_bad = new_bad = False
    for r in rows:
        old_err, new_err = r["rel_old"], r["rel_new"]
        old_bad |= r["nonfinite_old"] > 0 or old_err is None or old_err > tolerance
        new_bad |= r["nonfinite_new"] > 0 or new_err is None or new_err > tolerance
        worst_old, worst_new = max(worst_old, old_err or 0.0), max(worst_new, new_err or 0.0)
    moved = max((r["maxabs_old_new"] or 0.0) for r in rows)
    numbers = (
        f"max|old-new|={moved:.3g}, worst output's error vs torch fp32 relative to |ref|:"
        f" old {worst_old:.3g}, new {worst_new:.3g}, tolerance {tolerance:g} ({runtime})"
    )
    if old_bad and not new_bad:
        return ProbeVerdict(
            Verdict.VALUES_MOVE, Reexport.REQUIRED, f"shipped outputs wrong: {numbers}"
        )
    closer = "new" if worst_new < worst_old else "old"
    return ProbeVerdict(
        Verdict.VALUES_MOVE,
        Reexport.OPTIONAL,
        f"outputs move, {closer} side closer to torch: {numbers}",
    )


def unrecorded(
    regions: list[StepRegion],
    steps: dict[str, StepCheck],
    fixes: list[Fix],
    overall: ProbeVerdict,
) -> list[dict[str, Any]]:
    """The unrecorded regions, one entry per (step, stage, ops, constructs): where, how many,
    the step's drift, the records the step does have, and what the change does to the
    shipped bundle (`overall`: the exporter-to-target drift judged by the policy)."""
    groups: dict[tuple[Any, ...], dict[str, Any]] = {}
    for r in regions:
        if not r.unrecorded:
            continue
        key = (r.step, r.stage, r.coreai_ops, r.constructs)
        g = groups.get(key)
        if g is None:
            step = steps[r.step]
            a, b = r.step.split("->")
            g = groups[key] = {
                "step": r.step,
                "stage": r.stage,
                "regions": 0,
                "changed_lines": 0,
                "graphs": [],
                "ops": [],
                "coreai_ops": list(r.coreai_ops),
                "constructs": list(r.constructs),
                "modules": [],
                "module_count": 0,
                "drift": step.drift_rows,
                "runtime": step.runtime,
                "records_of_step": [f.id for f in between(fixes, a, b)],
                "verdict": overall.verdict,
                "reexport": overall.reexport,
                "reason": overall.reason,
                "evidence": r.evidence,
                "region_drift": None,
                "regions_measured": 0,
            }
        g["regions"] += 1
        g["changed_lines"] += r.changed_lines
        g["graphs"] += [r.graph] if r.graph not in g["graphs"] else []
        g["ops"] += [o for o in r.ops if o not in g["ops"]]
        g["modules"] += [m for m in r.modules if m not in g["modules"]]
        g["module_count"] += r.module_count
        d = r.run_drift
        if d:
            # the group's worst region, measured at its own cut (inventory.verify.cuts)
            g["regions_measured"] += 1
            worst = g["region_drift"]
            if worst is None or (d["maxabs_old_new"] or 0.0) > (worst["maxabs_old_new"] or 0.0):
                g["region_drift"] = d
    for g in groups.values():
        g["modules"] = g["modules"][:MODULES_SHOWN]
    return list(groups.values())
