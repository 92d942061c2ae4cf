"""Region runs: drift measured where it starts, at each differing region's own nodes.

A step whose whole shipped programs differ has regions (`inventory.verify.regions`), each
mapped to the aten nodes it was lowered from. Each located region is cut out of the bundle's
program as a small program (`oracle/workers/cut_worker.py`: its inputs the activations that reach
it,
captured from one fp32 run of the whole graph and rounded to the program's dtype there; its
constants the bundle's own), converted under both releases of its step with the bundle's
pipeline, and compared:

* the cut **reproduces** the region when its shipped programs differ too; then both run on one
  runtime against the cut's torch fp32 reference, and the region's drift is per cut output
  (for a composite's body: one output per call site);
* a cut that does not reproduce is cut again with more rings of producers and consumers (an
  optimizer rewrite spans the ops it folds), up to the widest cut; one that never reproduces is
  reported as such, never measured as if it did;
* a region with no located node (a hoisted or folded constant) has nothing to cut: said so.

Stored parts (`inventory.verify.parts`): a cut per (build, step, regions) and, per cut program,
a side per release, a comparison and a run per runtime, so a second read measures nothing.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from inventory.verify import parts, whole
from inventory.verify.built_module import BuiltModule
from inventory.verify.compared_pair import DIFFERS, ComparedPair
from inventory.verify.converted_side import ConvertedSide
from inventory.verify.regions import Region
from inventory.verify.runtime_run import RuntimeRun
from oracle.envs import Env
from oracle.executors import Call, CutAnswer, Ship
from oracle.infra import settings

# rings of producers and consumers tried in turn until a cut reproduces its region
HOPS = (0, 2, 6)


def make_cuts(
    p: Any, env: Env, build: BuiltModule, requests: list[dict[str, Any]], step: str, hops: int
) -> dict[str, Any]:
    """The stored cuts of some of one step's regions with `hops` rings around them (cut in the
    step's newer environment: its decomposition names the nodes the regions were mapped to)."""
    folder = parts.cut_folder(p.bundle, build.folder, env, step, requests, hops)

    def make(work: Path) -> dict[str, Any]:
        p.progress(
            f"{p.bundle.name}: cutting {len(requests)} region(s) of {step} out of the "
            f"whole program ({hops} rings of neighbours)"
        )
        [answer] = p.session.calls(
            [
                Call(
                    "cut",
                    env,
                    {
                        "op": "cut",
                        "program": build.program,
                        "inputs": build.inputs_file,
                        "pipeline": _pipeline(p.bundle),
                        "cuts": requests,
                        "hops": hops,
                        "out": str(work),
                    },
                    ship=(Ship("program"), Ship("inputs")),
                    timeout=settings.seconds(whole.CONVERT_TIMEOUT),
                )
            ],
            CutAnswer.decode,
        )
        # its own seconds, per step, are in the answer
        made = {k: v for k, v in answer.wire.items() if k != "wall_seconds"}
        return {**made, "step": step, "cut_in": env.converter, "hops": hops}

    return p.part(folder, make, parts.repeatable, parts.CUTTING)


def _pipeline(bundle: Any) -> dict[str, Any]:
    return whole.pipeline_of(bundle)


def _side_folder(p: Any, env: Env, program: str) -> Path:
    return parts.cut_side_folder(p.bundle, whole.program_digest(Path(program)), env)


def _inputs_key(cut_dir: Path) -> str:
    """A cut's inputs, by content: two cuts fed the same tensors share their runs."""
    h = hashlib.sha256((cut_dir / "main.inputs.safetensors").read_bytes())
    return f"cut-{h.hexdigest()[:20]}"


def region_runs(
    p: Any,
    step: ComparedPair,
    regions: list[Region],
    build: BuiltModule,
    runtimes: list[Env],
    refused: dict[tuple[str, str], str],
) -> dict[str, Any]:
    """Every region of one step: its cut, whether the cut reproduces it, and its drift on the
    first runtime of `runtimes` that runs both sides (the chain's). A region whose cut does not
    reproduce it is cut again wider (HOPS). `refused`: (release, runtime) pairs whose cut a
    runtime already refused in this check (coreai-core 1.0.0b2 aborts on every 0.4.0 asset):
    not tried again, and said so."""
    a, b = step.old, step.new
    label = f"{a}->{b}"
    envs = {a: p.session.env(a), b: p.session.env(b)}
    out: dict[str, Any] = {
        "step": label,
        "ok": True,
        "error": None,
        "cut_in": b,
        "seconds": {"cut": 0.0, "conversions": 0.0, "runs": 0.0},
        "evidence": [],
        "regions": [],
    }
    entries: list[dict[str, Any]] = []
    pending: dict[int, Region] = {}
    for i, region in enumerate(regions):
        entry: dict[str, Any] = {
            "region": i,
            "graph": region.graph,
            "calls": region.calls,
            "nodes": len(region.nodes),
            "reproduces": None,
            "drift": None,
            "attempts": [],
        }
        if region.nodes:
            pending[i] = region
        elif region.consumers:
            # a hoisted or folded constant: cut where its value is used
            entry["cut_from"] = "the ops that use its values"
            pending[i] = region
        else:
            entry["why"] = "no located aten node, and no located op uses its values: nothing to cut"
        entries.append(entry)
    for hops in HOPS:
        if not pending:
            break
        requests = [
            {"id": f"r{i}", "nodes": sorted(r.nodes or r.consumers)} for i, r in pending.items()
        ]
        cut = make_cuts(p, envs[b], build, requests, label, hops)
        out["seconds"]["cut"] += sum((cut.get("seconds") or {}).values())
        out["evidence"].append(cut.get("evidence"))
        if not cut.get("ok"):
            out["ok"] = False
            out["error"] = f"cutting ({hops} rings): {cut.get('stage')}: {cut.get('error')}"
            break
        for c in cut.get("cuts") or []:
            i = int(c["id"][1:])
            if _tried(p, entries[i], c, envs, a, b, runtimes, out["seconds"], refused):
                pending.pop(i)
    for i in pending:
        e = entries[i]
        e["reproduces"] = False
        e["why"] = (
            "no cut reproduces the region's difference ("
            + "; ".join(f"{t['hops']} rings: {t.get('outcome')}" for t in e["attempts"])
            + "): its drift is not measured at the region"
        )
    out["regions"] = entries
    return out


def _tried(
    p: Any,
    entry: dict[str, Any],
    c: dict[str, Any],
    envs: dict[str, Env],
    a: str,
    b: str,
    runtimes: list[Env],
    seconds: dict[str, float],
    refused: dict[tuple[str, str], str],
) -> bool:
    """One cut of a region converted under both releases and, if it reproduces the region,
    measured: True when it reproduced."""
    # the region's nodes that the newer release's decomposition does not name: the cut holds
    # the rest, and the answer says so
    entry["found"] = c.get("found")
    entry["missing"] = c.get("missing", [])
    entry["reaches_outputs"] = c.get("reaches_outputs", [])
    attempt: dict[str, Any] = {"hops": c["hops"], "nodes": c.get("cut_nodes")}
    entry["attempts"].append(attempt)
    if not c.get("ok"):
        attempt["outcome"] = f"cannot cut: {c.get('error')}"
        return False
    program = c["files"]["program"]
    old, new = p.conversions(
        [(_side_folder(p, envs[r], program), envs[r], program) for r in (a, b)], "a cut"
    )
    seconds["conversions"] += sum(s.wall_seconds or 0.0 for s in (old, new))
    if not old.ok or not new.ok:
        bad = [f"{r} ({s.failure})" for r, s in ((a, old), (b, new)) if not s.ok]
        attempt["outcome"] = f"the cut does not convert under {'; '.join(bad)}"
        return False
    shipped = p.pair({a: old, b: new}, a, b).shipped
    attempt["shipped"] = {"identity": shipped.identity, "changed_lines": shipped.changed_lines}
    attempt["evidence"] = {a: old.evidence, b: new.evidence}
    if shipped.identity != DIFFERS:
        attempt["outcome"] = "does not reproduce: the cut's shipped programs are identical"
        return False
    attempt["outcome"] = "reproduces"
    entry.update(reproduces=True, hops=c["hops"], inputs=c.get("inputs"))
    entry.update(_measured(p, old, new, Path(program).parent, a, b, runtimes, c, seconds, refused))
    return True


def _measured(
    p: Any,
    old: ConvertedSide,
    new: ConvertedSide,
    cut_dir: Path,
    a: str,
    b: str,
    runtimes: list[Env],
    cut: dict[str, Any],
    seconds: dict[str, float],
    refused: dict[tuple[str, str], str],
) -> dict[str, Any]:
    tried: list[str] = []
    inputs_key = _inputs_key(cut_dir)
    for runtime in runtimes:
        known = next(
            (
                f"{r}: {refused[(r, runtime.runtime)]}"
                for r in (a, b)
                if (r, runtime.runtime) in refused
            ),
            None,
        )
        if known:
            tried.append(f"{runtime.runtime}: not tried, it refused an earlier {known}")
            continue
        runs: dict[str, RuntimeRun] = {}
        for release, side in ((a, old), (b, new)):  # the older asset first
            runs[release] = p.run(
                side, f"the {release} cut", runtime, cut_dir, inputs_key, kind="cutrun"
            )
            if not runs[release].ok:
                break
        seconds["runs"] += sum(r.seconds or 0.0 for r in runs.values())
        if all(r.ok for r in runs.values()) and len(runs) == 2:
            rows = p.drift(
                runs[a], runs[b], cut_dir / "reference.safetensors", list(cut.get("outputs") or [])
            )
            return {
                "runtime": runtime.runtime,
                "drift": rows,
                "run_evidence": {r: v.evidence for r, v in runs.items()},
                "runtime_attempts": tried,
            }
        release, failed = next((r, v) for r, v in runs.items() if not v.ok)
        why = failed.failure
        if "SIGABRT" in why or failed.stage != "worker":
            refused[(release, runtime.runtime)] = f"cut ({why})"
        tried.append(f"{runtime.runtime}: {release}: {why}")
    return {
        "runtime": None,
        "drift": None,
        "runtime_attempts": tried,
        "why": "no runtime of the chain runs both sides of the cut",
    }


def summary(rows: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """A region's drift in one row: the worst of its outputs (call sites)."""
    if not rows:
        return None

    def worst(key: str) -> float | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return max(values) if values else None

    return {
        "outputs": len(rows),
        "maxabs_old": worst("maxabs_old"),
        "maxabs_new": worst("maxabs_new"),
        "rel_old": worst("rel_old"),
        "rel_new": worst("rel_new"),
        "maxabs_old_new": worst("maxabs_old_new"),
        "nonfinite_old": sum(r["nonfinite_old"] for r in rows),
        "nonfinite_new": sum(r["nonfinite_new"] for r in rows),
        "bit_identical": all(r["bit_identical"] for r in rows),
    }
