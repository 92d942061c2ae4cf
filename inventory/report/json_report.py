"""JSON for `affected`: stable field names inside a versioned envelope."""

from __future__ import annotations

from typing import Any

from inventory.answer_types import AffectedReport, BundleAnswer, ProbeAnswer
from inventory.attribution import Step
from inventory.load_answers import load_answer_record
from inventory.registry import Instance
from inventory.verdict import ProbeVerdict
from oracle.compare import ProbeResult


def _instance(i: Instance) -> dict[str, Any]:
    return {
        "kind": i.kind,
        "params": i.params,
        "count": i.count,
        "dtype": i.dtype,
        "modules": list(i.modules),
        "source": i.source,
    }


def result_fields(r: ProbeResult) -> dict[str, Any]:
    """What one probe comparison found, with its numbers and evidence (shared by all commands)."""
    m = r.measurement
    s = m.stats if m and m.ok else None
    return {
        "emitted": r.emitted,
        "shipped": r.shipped,
        "outputs": r.outputs,
        "maxabs_old_new": s.maxabs_old_new if s else None,
        "maxabs_old_ref": s.maxabs_old_ref if s else None,
        "maxabs_new_ref": s.maxabs_new_ref if s else None,
        "ref_magnitude": s.ref_magnitude if s else None,
        "shapes_old": s.shapes_old if s else [],
        "shapes_new": s.shapes_new if s else [],
        "shapes_ref": s.shapes_ref if s else [],
        "runtime": m.runtime if m and m.ok else None,
        "runtime_attempts": m.attempts if m else [],
        "old": {
            "converter": r.old.converter,
            "packages": r.old.packages,
            "error": r.old.error or None,
        },
        "new": {
            "converter": r.new.converter,
            "packages": r.new.packages,
            "error": r.new.error or None,
        },
        "cached": r.cached,
        "evidence": r.evidence,
        "alone": _alone(r),
    }


def _alone(r: ProbeResult) -> dict[str, Any] | None:
    """The one side that converts, run against torch fp32 (null when both or neither convert)."""
    a = r.alone
    if a is None:
        return None
    s = a.stats
    return {
        "side": a.side,
        "runtime": a.runtime if a.ok else None,
        "error": a.error or None,
        "maxabs_ref": s.maxabs_ref if s else None,
        "ref_magnitude": s.ref_magnitude if s else None,
        "nonfinite": s.nonfinite if s else None,
        "shapes": s.shapes if s else [],
        "shapes_ref": s.shapes_ref if s else [],
    }


def with_alone_check(found: dict[str, Any], verdict: ProbeVerdict) -> dict[str, Any]:
    """The verdict's reading of the one converting side (right or wrong under the policy)."""
    if found.get("alone") is not None:
        found["alone"]["check"] = verdict.alone
    return found


def _probe(p: ProbeAnswer) -> dict[str, Any]:
    found = (
        with_alone_check(result_fields(p.result), p.verdict)
        if p.result
        else {"emitted": "not-run", "shipped": "not-run", "outputs": "not-run"}
    )
    return {
        "probe": p.spec.label(),
        "spec": p.spec.to_json(),
        **found,
        "verdict": p.verdict.verdict,
        "reexport": p.verdict.reexport,
        "reason": p.verdict.reason,
        "module": p.module or None,
        "steps": [step_json(s) for s in p.steps],
        "elsewhere": {
            "verdict": p.elsewhere.verdict,
            "reexport": p.elsewhere.reexport,
            "reason": p.elsewhere.reason,
        }
        if p.elsewhere
        else None,
    }


def step_json(s: Step) -> dict[str, Any]:
    """One release step's comparison of a probe whose program changes across the range."""
    return {
        "from": s.old,
        "to": s.new,
        "emitted": s.result.emitted,
        "shipped": s.result.shipped,
        "outputs": s.result.outputs,
        "changed": s.changed,
        "explained_by": list(s.explained_by),
        "unexplained": s.unexplained,
        "note": s.note or None,
        "evidence": s.result.evidence,
    }


def _bundle(b: BundleAnswer, report: AffectedReport) -> dict[str, Any]:
    ignored = report.ignored.get(b.bundle)
    return {
        "bundle": b.bundle,
        "exporter": b.exporter,
        "exporter_recorded": b.exporter_recorded,
        "exporter_source": b.exporter_source,
        "instances": [_instance(i) for i in b.instances],
        "probes": [_probe(p) for p in b.probes],
        "verdict": b.verdict,
        "reexport": b.reexport,
        "reason": b.reason,
        "chain": list(b.chain),
        "runtime": "; ".join(b.runtimes) if b.runtimes else None,
        "deployment": b.deployment.to_json() if b.deployment else None,
        "load": load_answer_record(b.load),
        "remedies": list(b.remedies),
        "conditions": [
            {
                "construct": f.instance.kind,
                "condition": f.condition.name,
                "when": f.condition.when,
                "trained": {
                    "verdict": f.trained.verdict.verdict,
                    "reexport": f.trained.verdict.reexport,
                    "evidence": f.trained.result.evidence if f.trained.result else None,
                },
                "if_met": {
                    "verdict": f.adversarial.verdict.verdict,
                    "reexport": f.adversarial.verdict.reexport,
                    "reason": f.adversarial.verdict.reason,
                    "evidence": f.adversarial.result.evidence if f.adversarial.result else None,
                },
                "checked": {
                    "holds": f.check.holds,
                    "detail": f.check.detail,
                    "weights": f.check.weights,
                }
                if f.check
                else None,
            }
            for f in b.conditions
        ],
        "ignored": {
            "reason": ignored.reason,
            "expires": ignored.expires.isoformat() if ignored.expires else None,
        }
        if ignored
        else None,
        "unrecorded": [
            {
                "probe": u.spec.label(),
                "construct": u.spec.construct,
                "step": u.step.label,
                "verdict": u.outcome.verdict.verdict,
                "reexport": u.outcome.verdict.reexport,
                "reason": u.outcome.verdict.reason,
                "note": u.step.note or None,
                "evidence": u.step.result.evidence,
            }
            for u in b.unrecorded
        ],
        "unrecorded_state": b.unrecorded_state or None,
        "whole_program": b.whole_program,
        "not_checked": b.not_checked or None,
        "coverage": b.coverage.to_json() if b.coverage is not None else None,
    }


def affected_record(report: AffectedReport) -> dict[str, Any]:
    return {
        "fix": report.fix.id,
        "kind": report.fix.kind,
        "title": report.fix.title,
        "ships_in": report.fix.ships_in,
        "to": report.to,
        "runtime": "; ".join(report.runtimes) or None,
        "reexport": report.reexport,
        "bundles": [_bundle(b, report) for b in report.bundles],
    }
