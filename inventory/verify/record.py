"""The JSON record of a bundle's whole-program check: what `verify --json` prints for it and
what `plan --json` embeds (one answer, one function)."""

from __future__ import annotations

from typing import Any

from inventory.verify.built_module import build_of
from inventory.verify.converted_side import sides_of as _sides
from inventory.verify.runtime_run import runs_of as _runs
from inventory.verify.service import BundleVerify, Verify, answer, status


def overall_rows(b: BundleVerify) -> list[dict[str, Any]]:
    m = (b.record.get("run") or {}).get("measurement") or {}
    o = b.overall
    if o is None:
        return []
    return list(((m.get("drift") or {}).get(o.label) or {}).get("outputs") or [])


def _run(b: BundleVerify) -> dict[str, Any] | None:
    run = b.record.get("run")
    if not run:
        return None
    m = run.get("measurement") or {}
    build = build_of(run) or build_of(b.record)
    return {
        "form": run["form"],
        "same_as_compared": run["same_as_compared"],
        "skipped": bool(run.get("skipped")),
        "estimate_seconds": run.get("estimate_seconds"),
        "budget_seconds": run.get("budget_seconds"),
        "note": run.get("note"),
        "runtime": m.get("runtime"),
        "ok": bool(m.get("ok")),
        "error": m.get("error"),
        "attempts": m.get("attempts", []),
        "seconds": {r: v.seconds for r, v in _runs(m).items()},
        "params": build.params if build is not None else None,
        "outputs": overall_rows(b),
        "evidence": {r: v.evidence for r, v in _runs(m).items()},
    }


def bundle_record(b: BundleVerify) -> dict[str, Any]:
    """A bundle's check as `verify --json` gives it, and `plan --json` (one answer)."""
    r = b.record
    build = build_of(r)
    overall = b.overall
    parts_seconds = [s.wall_seconds for s in _sides(r).values()]
    return {
        "bundle": b.bundle,
        "exporter": b.exporter,
        "exporter_assumed": b.exporter_assumed,
        "to": b.to,
        "status": status(b),
        "consistent": b.consistent,
        "answer": answer(b),
        "verdict": b.verdict.verdict if b.verdict else None,
        "reexport": b.verdict.reexport if b.verdict else None,
        "reason": b.verdict.reason if b.verdict else None,
        "cached": b.cached,
        "form": r.get("form"),
        "error": r.get("error"),
        "build": build.to_json() if build is not None else None,
        "torch": b.torch.to_json() if b.torch is not None else None,
        "releases": list(r.get("releases", [])),
        "sides": {k: v.to_json() for k, v in _sides(r).items()},
        "emitted": overall.emitted.summary() if overall is not None else None,
        "shipped": overall.shipped.summary() if overall is not None else None,
        "steps": [s.to_json() for s in b.steps],
        "regions": [r.to_json() for r in b.regions],
        "unrecorded": list(b.unrecorded),
        # a bundle that could not be built was never probed: the same fields, nothing in them
        "run": _run(b),
        "probes": b.probes.to_json(),
        "inconsistencies": list(b.inconsistencies),
        "limitations": list(b.limitations),
        "notes": list(b.notes),
        "region_runs": [
            {k: s.get(k) for k in ("step", "ok", "error", "cut_in", "seconds", "evidence")}
            for s in r.get("region_runs") or []
        ],
        "disagreements": list(b.disagreements),
        "seconds": r.get("seconds"),
        "timing": r.get("timing"),
        "conversion_seconds": sum(x for x in parts_seconds if x) or None,
        "peak_mb": max((s.peak_mb or 0 for s in _sides(r).values()), default=None) or None,
        "evidence": overall.evidence if overall is not None else None,
    }


def verify_record(v: Verify) -> dict[str, Any]:
    return {
        "to": v.to,
        "consistent": not v.inconsistent,
        "inconclusive": v.inconclusive,
        "unrecorded": v.unrecorded,
        "bundles": [bundle_record(b) for b in v.bundles],
    }
