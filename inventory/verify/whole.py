"""The whole-bundle check's measured part: build the bundle module, convert it whole under the
exporter and the target, compare, locate what differs and run both on one runtime.

Everything it says comes from files kept in the result store, under
`results/verify-<bundle>-<exporter>-<target>-<key>/`: the build (program.pt2, inputs, the torch
fp32 reference), each side's IR (emitted, shipped, shipped with locations; blobs digested),
nodes.json and asset, the normalised texts and their diffs, and the runtime's output tensors.
What is derived from those files (the regions, `inventory.verify.regions`; the reconciliation)
is recomputed on every read, so only the measuring code is in the key. The key covers the form,
the seed, the weights' digest, both sides' packages and the code that builds, converts, compares
and runs, so a second run reads the stored record.
"""

from __future__ import annotations

import functools
import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from inventory.errors import InventoryError
from inventory.registry import Bundle
from inventory.trace.service import PROJECT_ROOT, export_steps
from inventory.verify import drift
from inventory.verify.forms import Form
from inventory.verify.regions import Located, Side, regions
from oracle import settings, store
from oracle.client import Pool, Worker, WorkerFailure
from oracle.envs import Env
from oracle.load_check import AssetWorker
from oracle.normalise import compare_texts, normalise
from oracle.paths import in_store, safe_name
from oracle.session import Session

PROGRAM_WORKER = Path(__file__).resolve().parents[2] / "oracle" / "program_worker.py"
SEED = 20261201
# A whole sortformer converts in about a minute per side; a run on the emulated fp16 CPU runtime
# can take far longer: neither may hang the command (INVENTORY_VERIFY_*_TIMEOUT, seconds, read
# and validated by oracle.settings when used, so the limit stated is the one applied).
CONVERT_TIMEOUT = "INVENTORY_VERIFY_CONVERT_TIMEOUT"
RUN_TIMEOUT = "INVENTORY_VERIFY_RUN_TIMEOUT"
RECORD = "result.json"
Progress = Callable[[str], None]


class VerifyError(InventoryError):
    """The whole bundle could not be built; one line for the user."""


class WeightsError(InventoryError):
    """`--weights` names a checkpoint the module cannot take; one line, exit 2."""


class ProgramWorker(Worker):
    """A long-lived `program_worker.py` in one converter environment."""

    script = PROGRAM_WORKER
    needs = ("torch", "coreai_torch", "coreai.runtime")


# The code a stored record's measurements depend on (beside the oracle's): what builds, converts,
# compares and runs. Regions and the reconciliation are derived on read, so not in the key.
MEASURING = ("whole.py", "build_worker.py", "drift.py", "forms.py")


@functools.cache
def code_digest() -> str:
    """What a stored whole-bundle record depends on beside the converters."""
    h = hashlib.sha256(store.code_digest().encode())
    here = Path(__file__).parent
    for path in [here / name for name in MEASURING] + [PROGRAM_WORKER]:
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _target_source(form: Form) -> str:
    """The target module's own source digest: a change to the module changes the program."""
    module = form.target.partition(":")[0]
    path = PROJECT_ROOT / (module.replace(".", "/") + ".py")
    return _file_digest(path)[:16] if path.is_file() else module


def result_dir(bundle: Bundle, form: Form, run: Form, old: Env, new: Env,
               weights: Path | None) -> Path:
    # what builds the module, not the words about it (a form's `why` is not in the key)
    payload = {"bundle": bundle.name,
               "form": {k: v for k, v in form.to_json().items() if k != "why"},
               "run": {k: v for k, v in run.to_json().items() if k != "why"},
               "target_source": _target_source(form), "seed": SEED,
               "weights": _file_digest(weights) if weights else None,
               "export": export_steps(bundle),
               "pipeline": {"decompositions": bundle.pipeline.decompositions,
                            "optimize": bundle.pipeline.optimize},
               "old": store.env_identity(old), "new": store.env_identity(new),
               "code": code_digest()}
    key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]
    # the bundle's name is data: sanitised, and the folder checked to lie in the store
    return in_store(store.results_root() / f"verify-{safe_name(bundle.name)}-{old.converter}-"
                                           f"{new.converter}-{key}")


def read_record(folder: Path) -> dict[str, Any] | None:
    try:
        record = json.loads((folder / RECORD).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("code") != code_digest():
        return None
    return record


# ---- build --------------------------------------------------------------------------------


def build(bundle: Bundle, form: Form, out: Path, reference: bool, weights: Path | None,
          allow_code: bool) -> dict[str, Any]:
    options = {"target": form.target, "build": form.build, "seed": SEED,
               "export": export_steps(bundle), "weights": str(weights) if weights else None,
               "reference": reference, "out": str(out), "allow_code": allow_code}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "inventory.verify.build_worker",
                           json.dumps(options)], capture_output=True, text=True,
                          cwd=PROJECT_ROOT)
    out.mkdir(parents=True, exist_ok=True)
    (out / "build.log").write_text(proc.stderr)
    if proc.returncode != 0 or not proc.stdout.strip():
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        detail = lines[-1] if lines else f"exit code {proc.returncode}"
        if proc.returncode == 2 and weights is not None:
            raise WeightsError(f"{bundle.name}: --weights {detail.removeprefix('error: ')}")
        raise VerifyError(f"{bundle.name}: building the {form.name} module failed: "
                          f"{detail.removeprefix('error: ')} (log: {out / 'build.log'})")
    answer = json.loads(proc.stdout)
    answer["wall_seconds"] = time.perf_counter() - start
    answer["form"] = form.to_json()
    return answer


# ---- convert ------------------------------------------------------------------------------


def _convert(pool: Pool, env: Env, program: str, bundle: Bundle, out: Path) -> dict[str, Any]:
    pipeline = {"decompositions": bundle.pipeline.decompositions,
                "optimize": bundle.pipeline.optimize}
    start = time.perf_counter()
    try:
        answer = pool.worker(env).call({"op": "convert_program", "program": program,
                                        "pipeline": pipeline, "out": str(out)},
                                       timeout=settings.seconds(CONVERT_TIMEOUT))
    except WorkerFailure as exc:
        answer = {"ok": False, "stage": "worker", "error": str(exc)}
    answer.update({"converter": env.converter, "packages": store.env_identity(env),
                   "wall_seconds": time.perf_counter() - start})
    return answer


def convert_both(session: Session, old: Env, new: Env, program: str, bundle: Bundle,
                 work: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    pool = session.pool_of(ProgramWorker, "program")
    with ThreadPoolExecutor(max_workers=2) as ex:  # the two sides convert in parallel
        f_old = ex.submit(_convert, pool, old, program, bundle, work / f"old-{old.converter}")
        f_new = ex.submit(_convert, pool, new, program, bundle, work / f"new-{new.converter}")
        return f_old.result(), f_new.result()


def _stage(old: dict[str, Any], new: dict[str, Any], stage: str, work: Path,
           prefix: str) -> dict[str, Any]:
    if not old.get("ok") or not new.get("ok"):
        return {"identity": "cannot-convert"}
    if stage == "emitted" and old["emitted_is_optimized"] != new["emitted_is_optimized"]:
        # 0.4.3's to_coreai() returns the optimized program: no emitted counterpart to compare
        return {"identity": "not-comparable"}
    a, b = Path(old["files"][stage]).read_text(), Path(new["files"][stage]).read_text()
    (work / f"{prefix}{stage}.old.normalised.mlir").write_text(normalise(a))
    (work / f"{prefix}{stage}.new.normalised.mlir").write_text(normalise(b))
    result = compare_texts(a, b, f"{stage} coreai-torch {old['converter']}",
                           f"{stage} coreai-torch {new['converter']}")
    if result.identical:
        return {"identity": "identical", "changed_lines": 0}
    (work / f"{prefix}{stage}.diff").write_text(result.diff)
    return {"identity": "differs", "changed_lines": result.changed_lines,
            "diff": str(work / f"{prefix}{stage}.diff")}


def _side(answer: dict[str, Any], normalised: str) -> Side:
    located = Located(Path(answer["files"]["located"]).read_text())
    nodes = json.loads(Path(answer["files"]["nodes"]).read_text())
    return Side(Path(normalised).read_text().splitlines(), located, nodes)


def compared(old: dict[str, Any], new: dict[str, Any], work: Path, prefix: str = ""
             ) -> dict[str, Any]:
    out = {"emitted": _stage(old, new, "emitted", work, prefix),
           "shipped": _stage(old, new, "shipped", work, prefix)}
    if out["shipped"]["identity"] == "differs":
        out["shipped"]["normalised"] = {
            side: str(work / f"{prefix}shipped.{side}.normalised.mlir") for side in ("old", "new")}
    return out


def located_regions(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The regions in which a record's whole shipped programs differ, from its stored files."""
    shipped = record.get("shipped", {})
    if shipped.get("identity") != "differs":
        return []
    sides = record["sides"]
    found = regions(_side(sides["old"], shipped["normalised"]["old"]),
                    _side(sides["new"], shipped["normalised"]["new"]))
    return [r.to_json() for r in found]


# ---- run ------------------------------------------------------------------------------------


def _runtimes(old: Env, new: Env) -> list[Env]:
    """One runtime runs both assets: the target's, else the exporter's (as the probes do)."""
    return [new] if new.core == old.core else [new, old]


def run_both(session: Session, old_env: Env, new_env: Env, assets: dict[str, str],
             build_dir: Path, reference: Path, work: Path, labels: list[str],
             progress: Progress) -> dict[str, Any]:
    pool = session.pool_of(AssetWorker, "asset")
    attempts: list[str] = []
    for env in _runtimes(old_env, new_env):
        outputs: dict[str, str] = {}
        names: list[str] = []
        seconds: dict[str, float] = {}
        failed = ""
        for side, asset in assets.items():
            limit = settings.seconds(RUN_TIMEOUT)
            progress(f"running the {side} program on {env.runtime} (timeout {limit:g} s)")
            target = work / f"run-{env.core}-{side}"
            start = time.perf_counter()
            try:
                answer = pool.worker(env).call(
                    {"op": "run", "asset": asset, "out": str(target), "seed": SEED,
                     "execute": True, "inputs": str(build_dir)}, timeout=limit)
            except WorkerFailure as exc:
                answer = {"ok": False, "stage": "worker", "error": str(exc)}
            seconds[side] = time.perf_counter() - start
            if not answer.get("ok"):
                failed = f"{side}: {answer.get('stage', '?')}: {answer.get('error', '?')}"
                break
            outputs[side] = answer["functions"][0]["outputs_file"]
            names = answer["functions"][0]["outputs"]
        if failed:
            attempts.append(f"{env.runtime}: {failed}")
            continue
        per_output = drift.per_output(Path(outputs["old"]), Path(outputs["new"]), reference,
                                      names, labels)
        return {"ok": True, "runtime": env.runtime, "attempts": attempts, "seconds": seconds,
                "outputs": per_output, "files": {"old": outputs["old"], "new": outputs["new"],
                                                 "reference": str(reference)}}
    return {"ok": False, "runtime": None, "attempts": attempts,
            "error": "no runtime could run both programs"}
