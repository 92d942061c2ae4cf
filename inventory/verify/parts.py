"""The stored parts of a whole-bundle check, each measured once and read back after:

* a **build** per (bundle, form, weights): `verify-build-<bundle>-<key>/` (program.pt2, inputs,
  the torch fp32 reference);
* a **side** per (build, release): `verify-side-<bundle>-<release>-<key>/`, the program converted
  whole under one coreai-torch (its IR at both stages, with and without debug locations,
  nodes.json, the asset);
* a **comparison** per (side, side): `verify-pair-<bundle>-<a>-<b>-<key>/`, the normalised
  texts and their diffs (the regions are derived from these files on every read);
* a **run** per (program, runtime): `verify-run-<bundle>-<core>-<key>/`, the asset's output
  tensors on the seeded inputs;
* for the region runs (`inventory.verify.cuts`): a **cut** per (build, step, regions, rings):
  `verify-cut-<bundle>-<a>-<b>-<key>/` (per region its program, its captured inputs and its
  fp32 reference), a side per (cut program, release): `verify-cutside-...`, and a run per
  (cut program, its inputs, runtime): `verify-cutrun-...`; the comparisons are pairs as above.

So a chain of N releases costs N conversions, whatever the pairs compared (`verify --to 0.4.2`
and `--to 0.4.3` share the 0.4.0, 0.4.1 and 0.4.2 sides), and a release's asset runs once per
runtime. A part that failed for a reason that may not repeat (a worker that died or timed out)
is never stored; a deterministic outcome (a converter that refuses the program) is.

Every key covers what the part's files depend on, and only that, so a change elsewhere in the
code does not throw away an hour of runs: a build, the form's arguments, the target's source,
the seed, the weights' digest, the recipe's export steps and the building code; a side, its
build, the release's packages, the pipeline and the converting code (with the construct
detectors that label nodes.json); a comparison, its two sides and the comparing code; a run,
the **normalised shipped program** it runs (not the side that made it: a side converted again
with the same program reuses the run), the inputs, the runtime's packages and the running code.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from inventory.registry import Bundle
from inventory.trace.closure import closure
from inventory.trace.service import export_steps
from inventory.verify import whole
from inventory.verify.forms import Form, recipe_builder
from oracle.clients import CutWorker, ProgramWorker
from oracle.compare import normalise
from oracle.envs import Env
from oracle.infra import in_store, moved, safe_name
from oracle.store import result_store as store

HERE = Path(__file__).resolve().parent
ORACLE = HERE.parents[1] / "oracle"
# the code each kind of part depends on
BUILDING = (HERE / "build_worker.py", HERE / "forms.py")
CONVERTING = (
    ProgramWorker.script,
    ORACLE / "workers" / "probe_worker.py",
    ORACLE / "workers" / "worker_io.py",
    ORACLE / "workers" / "memory.py",
    ORACLE / "constructs",
)
COMPARING = (
    HERE / "stage_compare.py",
    ORACLE / "compare" / "normalisation.py",
    ORACLE / "executors" / "comparison.py",
)
# the drift of two runs against a reference, derived from their tensors: kept so that a read
# does not load every output again
DRIFTING = (HERE / "drift.py",)
# a run: the asset worker runs the asset on the stored inputs (whole.run only forwards them,
# with the seed, which is in the key)
RUNNING = (ORACLE / "workers" / "asset_worker.py", ORACLE / "workers" / "worker_io.py")
# a region's cut: the cut worker decomposes as the program worker does and reads node names
# and module paths as the detectors do
CUTTING = (
    CutWorker.script,
    ORACLE / "workers" / "probe_worker.py",
    ORACLE / "workers" / "worker_io.py",
    ORACLE / "workers" / "memory.py",
    ORACLE / "constructs" / "_graph.py",
)

PLACEHOLDER = "$RESULT"
Make = Callable[[Path], dict[str, Any]]


def _key(payload: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def _folder(*parts: str) -> Path:
    """A result folder named from data (a bundle's name, a release): each part a sanitised
    name, and the folder checked to lie in the store."""
    return in_store(store.results_root() / "-".join(safe_name(p) for p in parts))


@functools.cache
def code(kind: tuple[Path, ...]) -> str:
    """The digest of the code one kind of part depends on (a folder: its .py files)."""
    h = hashlib.sha256()
    for path in kind:
        for f in sorted(path.glob("*.py")) if path.is_dir() else [path]:
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:12]


def read(folder: Path) -> dict[str, Any] | None:
    """A stored part's record with absolute paths; None if absent or damaged. The store's own
    integrity check (`store.read_record`: the record's digest and every file's sha256, hashed
    again only where a file changed since it was last found intact), so an edited number in a
    record or in its tensors is measured again, never served."""
    record = store.read_record(folder)
    if record is None or not isinstance(record.get("code"), str):
        return None
    record = moved(record, {PLACEHOLDER: str(folder)})
    record["evidence"] = str(folder)
    return record


def fetched(folder: Path) -> dict[str, Any] | None:
    """A stored part (`read`): from this store, else from the remote tier when the run has one
    (`--store URL`), every file verified before this store takes it in."""
    return store.stored(folder, read)


def cached(final: Path, use_cache: bool, kind: tuple[Path, ...]) -> dict[str, Any] | None:
    """The part at `final` when it is stored by the code of `kind` (and `use_cache`)."""
    if not use_cache:
        return None
    record = fetched(final)
    return record if record is not None and record["code"] == code(kind) else None


def finished(
    final: Path,
    work: Path,
    made: dict[str, Any],
    use_cache: bool,
    keep: Callable[[dict[str, Any]], bool],
    kind: tuple[Path, ...],
) -> dict[str, Any]:
    """A part measured in `work` (a `store.building` folder of `final`): stored when
    `keep(record)` says it may repeat, and the record as it is read back."""
    record = {**made, "code": code(kind)}
    if not keep(record):
        # told now, measured again next time; its files go with the temp folder
        return {**record, "evidence": None, "stored": False}
    store.write_record(work, moved(record, {str(work): PLACEHOLDER}))
    theirs = store.install(work, final, read, replace_stored=not use_cache)
    return theirs if theirs is not None else read(final) or record


def stored(
    final: Path,
    make: Make,
    use_cache: bool,
    keep: Callable[[dict[str, Any]], bool],
    kind: tuple[Path, ...],
) -> tuple[dict[str, Any], bool]:
    """The part at `final` (read back: True), or measured now by `make(work)` and stored when
    `keep(record)` says it may repeat (False)."""
    record = cached(final, use_cache, kind)
    if record is not None:
        return record, True
    with store.building(final) as work:
        return finished(final, work, make(work), use_cache, keep, kind), False


# what the machine did, not the converter or the runtime: a full disk (seen while a run form
# was saved: "OSError: [Errno 28] No space left on device") or memory that ran out
_MACHINE = ("[Errno 28]", "No space left on device", "MemoryError", "Cannot allocate memory")


def machine_fault(record: dict[str, Any]) -> bool:
    """A failure the machine caused: it may not repeat, so it is never stored as a result."""
    return not record.get("ok") and any(m in str(record.get("error", "")) for m in _MACHINE)


def repeatable(record: dict[str, Any]) -> bool:
    """A conversion or cut that a worker's death or timeout, or the machine, cut short may not
    repeat: not stored."""
    return record.get("stage") != "worker" and not machine_fault(record)


def run_repeats(run: dict[str, Any]) -> bool:
    """A run that answered, or a runtime that refused the asset (an error it reported, or an
    abort confirmed in a fresh process: coreai-core 1.0.0b2 aborts on every 0.4.0 asset), says
    the same next time: stored. A timeout, a kill (out of memory) or a flaky abort may not
    repeat: told, never stored."""
    if machine_fault(run) or run.get("stage") == "flaky":
        return False
    if run.get("ok") or run.get("stage") != "worker":
        return True
    return "SIGABRT" in str(run.get("error", ""))


# ---- keys ---------------------------------------------------------------------------------


def build_folder(
    bundle: Bundle,
    form: Form,
    weights: Path | None,
    reference: bool,
    recipe_root: Path | None = None,
) -> Path:
    """A build's folder. A recipe's module built from `recipe_root` is keyed by its builder's
    source closure in the repository (`inventory.trace.closure`: the files it imports and their
    contents) with its arguments and export steps, not by the checkout's commit: a commit that
    touches none of those files finds the same build, and every part made from it after."""
    payload = _build_payload(bundle, form, weights, reference)
    source = source_key(bundle, form, recipe_root)
    if source is not None and form.recipe is not None:
        payload["form"]["recipe"] = {
            k: v
            for k, v in form.recipe.items()
            if k not in ("commit", "commit_source", "modified", "source")
        }
        payload["target_source"] = source
    return _folder("verify", "build", bundle.name, _key(payload))


def source_key(bundle: Bundle, form: Form, recipe_root: Path | None) -> str | None:
    """The digest of a recipe form's source closure in the checkout; None for a project
    target (its module's own digest is in the key)."""
    if form.recipe is None or recipe_root is None:
        return None
    builder = recipe_builder(bundle, recipe_root)
    return None if builder is None else closure(recipe_root, builder).digest


def legacy_build_folder(
    bundle: Bundle, form: Form, weights: Path | None, reference: bool
) -> Path | None:
    """Where a recipe's build was stored before its key was its source closure: keyed by the
    checkout's commit (and local changes) and the recipe file's digest. Read where the new
    folder holds nothing, so a check stored then is joined, not measured again; None for a
    project target, whose key did not change."""
    if form.recipe is None:
        return None
    payload = _build_payload(bundle, form, weights, reference)
    return _folder("verify", "build", bundle.name, _key(payload))


def _build_payload(
    bundle: Bundle, form: Form, weights: Path | None, reference: bool
) -> dict[str, Any]:
    return {
        "bundle": bundle.name,
        "form": {k: v for k, v in form.to_json().items() if k != "why"},
        "target_source": whole.target_source(form),
        "seed": whole.SEED,
        "weights": whole.file_digest(weights) if weights else None,
        "export": export_steps(bundle),
        "reference": reference,
        "code": code(BUILDING),
    }


# the miniature's trace: the trace's worker and detectors
TRACING = (
    HERE.parent / "trace" / "trace_worker.py",
    HERE.parent / "trace" / "detect.py",
    ORACLE / "constructs",
)


def miniature_folder(bundle: Bundle, build: Path) -> Path:
    """The distinct instances of a recipe's miniature, traced as `trace` traces the recipe: the
    build's key covers the builder's closure and arguments; the exporter's decomposition and the
    tracing code are the rest."""
    payload = {
        "build": build.name,
        "exporter": bundle.exporter.converter,
        "keep": list(bundle.pipeline.keep),
        "code": code(TRACING),
    }
    return _folder("verify", "miniature", bundle.name, _key(payload))


def _keyed(
    parts: tuple[str, ...], payload: Callable[[bool], dict[str, Any]], envs: tuple[Env, ...]
) -> Path:
    """The folder of a part keyed by `payload(False)` (environments by their pins: known
    without building them); one stored under the earlier key, `payload(True)` (their installed
    packages), is read where it is while none is stored under the new one."""
    final = _folder(*parts, _key(payload(False)))
    return store.legacy_or(final, envs, lambda: _folder(*parts, _key(payload(True))).name)


def _env_key(env: Env, legacy: bool) -> dict[str, str]:
    return store.env_identity(env) if legacy else store.key_identity(env)


def side_folder(bundle: Bundle, build: Path, env: Env) -> Path:
    def payload(legacy: bool) -> dict[str, Any]:
        return {
            "build": build.name,
            "env": _env_key(env, legacy),
            "pipeline": whole.pipeline_of(bundle),
            "code": code(CONVERTING),
        }

    return _keyed(("verify", "side", bundle.name, env.converter), payload, (env,))


def pair_folder(bundle: Bundle, old: Path, new: Path, a: str, b: str) -> Path:
    payload = {"old": old.name, "new": new.name, "code": code(COMPARING)}
    return _folder("verify", "pair", bundle.name, a, b, _key(payload))


def shipped_digest(side: dict[str, Any]) -> str:
    """The side's shipped program, normalised: what a run's outputs depend on."""
    text = Path(side["files"]["shipped"]).read_text()
    return hashlib.sha256(normalise(text).encode()).hexdigest()[:20]


def runtime_identity(runtime: Env, legacy: bool = False) -> dict[str, str]:
    """What a run depends on of the environment it runs in: the runtime it pins (the asset
    worker starts without torch; the converter beside it does not run). `legacy`: the earlier
    key's, the installed runtime and numpy."""
    if legacy:
        return {k: runtime.packages.get(k, "?") for k in ("coreai-core", "numpy")}
    return {"coreai-core": runtime.core}


def run_folder(bundle: Bundle, program: str, inputs: str, runtime: Env, kind: str = "run") -> Path:
    """One run per (program, inputs, runtime): two releases that ship the same program (sam3's
    0.4.1 and 0.4.2) share it, and so do two chains that reach one runtime through different
    releases' environments."""

    def payload(legacy: bool) -> dict[str, Any]:
        return {
            "program": program,
            "inputs": inputs,
            "seed": whole.SEED,
            "runtime": runtime_identity(runtime, legacy),
            "code": code(RUNNING),
        }

    # kind: "run" (a whole program) or "cutrun" (a region's cut), told apart in the store
    return _keyed(("verify", kind, bundle.name, runtime.core), payload, (runtime,))


def cut_folder(
    bundle: Bundle, build: Path, env: Env, step: str, requests: list[dict[str, Any]], hops: int
) -> Path:
    """The cuts of one step's regions: the build they are cut from, the environment whose
    decomposition they are cut from, the pipeline, the regions' nodes and the cutting code."""

    def payload(legacy: bool) -> dict[str, Any]:
        return {
            "build": build.name,
            "env": _env_key(env, legacy),
            "step": step,
            "pipeline": whole.pipeline_of(bundle),
            "cuts": requests,
            "hops": hops,
            "code": code(CUTTING),
        }

    return _keyed(("verify", "cut", bundle.name, *step.split("->")), payload, (env,))


def cut_side_folder(bundle: Bundle, program: str, env: Env) -> Path:
    """A cut program converted under one release: keyed by the program's digest, so the same
    cut made again (another step, another command) converts once."""

    def payload(legacy: bool) -> dict[str, Any]:
        return {
            "program": program,
            "env": _env_key(env, legacy),
            "pipeline": whole.pipeline_of(bundle),
            "code": code(CONVERTING),
        }

    return _keyed(("verify", "cutside", bundle.name, env.converter), payload, (env,))


def drift_folder(
    bundle: Bundle, old_run: str, new_run: str, reference: Path, labels: list[str]
) -> Path:
    """Two stored runs' drift against a stored reference (`<part folder>/<file>`: the part's
    key covers the reference's content)."""
    payload = {
        "old": old_run,
        "new": new_run,
        "reference": f"{reference.parent.name}/{reference.name}",
        "labels": labels,
        "code": code(DRIFTING),
    }
    return _folder("verify", "drift", bundle.name, _key(payload))
