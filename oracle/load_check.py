"""The load check: does an asset a converter release writes load and run on each runtime?

Question 2 of a re-export decision (DESIGN.md, "Two questions, not one"). The exporter converts
the asset probe (`asset_probe.py`: nested modules, shaped like the bundle: its dtype and
pipeline) and saves the asset the way a recipe does; then each runtime loads it and runs every
function on seeded inputs, each in a contained subprocess (`asset_worker.py`). The outcome per
runtime is `loads`, `fails-to-load` (with the first error line the runtime printed) or `crashes`
(with the signal, and the first error line); `not-run` when the check itself could not get that
far (the exporter could not convert the probe, no environment for the runtime).

A runtime that dies or does not answer is a claim about the world, so it is confirmed before it
is believed: the run is tried again in a fresh process (`confirm/` beside the first attempt's
files). Only a death that repeats is `crashes` (or `fails-to-load` at stage `worker`); one that
does not repeat, or an abort after the runtime wrote its outputs, is `flaky` with both attempts'
evidence: no answer about the asset, inconclusive, and a check holding one is never stored
(coreai-core 1.0.0b1 once aborted, exit 134 after writing its outputs, on an asset that loaded
cleanly in the next 20 runs).

A check is stored like every other result: built in a (locked) temp folder and renamed into
place, with a sha256 of every file and of its own record in `result.json`, keyed by the spec, the
exporter's and each runtime's exact packages and this code. Nothing in it is a reason for the tool
to stop: a crash is an outcome. An environment that cannot run a worker is not an outcome: it is
raised (`EnvironmentFault`) and nothing is stored; a check with a runtime whose environment could
not be built is answered but not stored either.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import shutil
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oracle import store
from oracle.client import EnvironmentFault, Pool, Worker, WorkerFailure, Workers
from oracle.envs import Env
from oracle.paths import cache_root, in_store, safe_name
from oracle.releases import EnvError
from oracle.runtimes import runtime_label
from oracle.spec import Pipeline, ProbeSpec
from oracle.store import results_root
from oracle.worker_clients import AssetWorker

if TYPE_CHECKING:
    from oracle.session import Session

_CODE_FILES = ("asset_worker.py", "asset_probe.py", "worker.py", "worker_io.py", "probes.py",
               "load_check.py")
OUTCOMES = ("loads", "fails-to-load", "crashes", "flaky", "not-run")
CONFIRM = "confirm"  # the folder of the second attempt, beside the first's files


@functools.cache
def code_digest() -> str:
    """Checks depend on this code as much as on the converter and the runtimes: key on it."""
    h = hashlib.sha256()
    for name in _CODE_FILES:
        h.update((Path(__file__).parent / name).read_bytes())
    return h.hexdigest()[:12]


def asset_workers(session: Session) -> Pool:
    return session.pool_of(AssetWorker, "asset-worker")


@dataclass(frozen=True)
class RuntimeOutcome:
    core: str
    outcome: str  # loads | fails-to-load | crashes | flaky | not-run
    stage: str = ""  # where it stopped: load, function, run, inputs, worker, environment
    error: str = ""  # the first error line the runtime printed, or the exception
    signal: str = ""  # crashes: the signal that killed the process
    files: dict[str, str] = field(default_factory=dict)  # log, inputs, outputs

    @property
    def runtime(self) -> str:
        return runtime_label(self.core)

    @property
    def loads(self) -> bool:
        return self.outcome == "loads"

    @property
    def died(self) -> bool:
        """The runtime's process died or did not answer: a claim to confirm (`run_on`)."""
        return self.outcome == "crashes" or (self.outcome == "fails-to-load"
                                             and self.stage == "worker")

    def describe(self) -> str:
        """One line: `crashes (SIGABRT): error: expected AICode versioned location, ...`."""
        if self.outcome == "loads":
            return "loads"
        head = f"{self.outcome} ({self.signal})" if self.signal else self.outcome
        return f"{head}: {self.error}" if self.error else head


@dataclass(frozen=True)
class LoadCheck:
    spec: ProbeSpec
    exporter: str  # the coreai-torch release that wrote the asset
    exporter_packages: dict[str, str]
    converted: bool
    convert_error: str
    outcomes: tuple[RuntimeOutcome, ...]
    evidence: str
    cached: bool = False

    def on(self, core: str) -> RuntimeOutcome | None:
        return next((o for o in self.outcomes if o.core == core), None)


# ---- the first error line ---------------------------------------------------------------------

_LIST = re.compile(r"\[[^\[\]]*\]")


def abbreviate(line: str, limit: int = 240) -> str:
    """Lists inside an MLIR location printed as `[...]`, as the issue tracker quotes them."""
    previous = None
    while previous != line:  # innermost lists first, then the lists that held them
        previous, line = line, _LIST.sub("\0", line)
    line = line.replace("\0", "[...]")
    return line if len(line) <= limit else line[: limit - 3] + "..."


def first_error(text: str) -> str:
    """The first `error:` line a runtime printed (from `error:` on, lists abbreviated); else the
    last line of an uncaught native exception."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for ln in lines:
        at = ln.find("error:")
        if at >= 0 and (at == 0 or ln[at - 2: at] == ": "):
            return abbreviate(ln[at:])
    for ln in lines:
        if ln.startswith(("terminate called", "LLVM ERROR", "what():")):
            return abbreviate(ln)
    return ""


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


# ---- running an asset on runtimes -------------------------------------------------------------


def run_on(asset: Path, core: str, session: Session, out: Path, execute: bool = True,
           seed: int = 0, inputs: Path | None = None) -> RuntimeOutcome:
    """Load (and with `execute`, run) `asset` on one runtime, contained; never raises for what
    the runtime does. A death or a timeout is tried again in a fresh process: `crashes` only
    when it repeats, else `flaky` (so is an abort after the outputs were written)."""
    try:
        env = session.env_for_core(core)
    except EnvError as exc:
        return RuntimeOutcome(core, "not-run", "environment", str(exc))
    first = _attempt(asset, core, env, session, out, execute, seed, inputs)
    if not first.died:
        return first
    again = out / CONFIRM
    second = _attempt(asset, core, env, session, again, execute, seed, inputs)
    files = {**first.files, **{f"{CONFIRM}.{k}": v for k, v in second.files.items()}}
    # a death after the runtime wrote its outputs: it ran, whatever ended it
    wrote = [o for o, a in ((out, first), (again, second))
             if a.died and any(o.glob("*.outputs.safetensors"))]
    if second.died and (second.outcome, second.signal) == (first.outcome, first.signal) \
            and not wrote:
        return replace(first, files=files)
    why = (f"{first.describe()} on the first attempt, after writing its outputs" if wrote else
           f"{first.describe()} on the first attempt, {second.describe()} on the second, in a "
           "fresh process")
    return RuntimeOutcome(core, "flaky", first.stage, f"{why}: no lasting answer",
                          first.signal, files)


def _attempt(asset: Path, core: str, env: Env, session: Session, out: Path, execute: bool,
             seed: int, inputs: Path | None) -> RuntimeOutcome:
    out.mkdir(parents=True, exist_ok=True)
    log = out / "run.log"
    request = {"op": "run", "asset": str(asset), "out": str(out), "seed": seed,
               "execute": execute, "inputs": str(inputs) if inputs else None}
    worker = asset_workers(session).worker(env)
    try:
        answer = worker.call(request)
    except WorkerFailure as exc:
        _not_the_environment(worker)
        text = str(exc)
        died = re.search(r"died of (\w+)", text)
        error = first_error(_read(log))
        if died:
            return RuntimeOutcome(core, "crashes", "load", error, died.group(1),
                                  {"log": str(log)})
        return RuntimeOutcome(core, "fails-to-load", "worker", error or text.split(" (log:")[0],
                              files={"log": str(log)})
    files = {"log": str(log)}
    for fn in answer.get("functions", []):
        for key in ("inputs_file", "outputs_file"):
            if key in fn:
                files[f"{fn['name']}.{key.split('_')[0]}"] = fn[key]
    if answer.get("ok"):
        return RuntimeOutcome(core, "loads", "run" if execute else "load", files=files)
    _not_the_environment(worker)
    stage = str(answer.get("stage", "?"))
    if stage == "inputs":  # the asset loaded; this check cannot feed it
        return RuntimeOutcome(core, "not-run", stage, str(answer.get("error", "")), files=files)
    error = first_error(_read(log)) or str(answer.get("error", ""))
    return RuntimeOutcome(core, "fails-to-load", stage, error, files=files)


def _not_the_environment(worker: Worker | Workers) -> None:
    """After a failure: raise if the environment cannot run the worker at all (then it is not
    the asset's outcome, and nothing is stored)."""
    fault = worker.environment_fault()
    if fault is not None:
        raise EnvironmentFault(fault)


# ---- the stored check -------------------------------------------------------------------------


def _identity(env: Env, keep: tuple[str, ...]) -> dict[str, str]:
    return {k: env.packages.get(k, "?") for k in keep}


def _key(spec: ProbeSpec, exporter: Env, runtime_ids: dict[str, dict[str, str]]) -> str:
    payload = {"spec": spec.to_json(),
               "exporter": _identity(exporter, ("coreai-torch", "coreai-core", "torch", "numpy")),
               "runtimes": runtime_ids, "code": code_digest()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def _to_json(check: LoadCheck, root: Path) -> dict[str, Any]:
    def rel(path: str) -> str:
        p = Path(path)
        return str(p.relative_to(root)) if p.is_absolute() and p.is_relative_to(root) else path

    data = asdict(check)
    data["spec"] = check.spec.to_json()
    data["outcomes"] = [{**asdict(o), "files": {k: rel(v) for k, v in o.files.items()}}
                        for o in check.outcomes]
    data["evidence"] = "."
    return data


def _from_json(data: dict[str, Any], root: Path, cached: bool) -> LoadCheck:
    s = data["spec"]
    spec = ProbeSpec(s["construct"], s["params"], s["dtype"], Pipeline(**s["pipeline"]),
                     s["values"], s["seed"])
    outcomes = tuple(RuntimeOutcome(o["core"], o["outcome"], o["stage"], o["error"],
                                    o["signal"], {k: str(root / v) for k, v in o["files"].items()})
                     for o in data["outcomes"])
    return LoadCheck(spec, data["exporter"], data["exporter_packages"], data["converted"],
                     data["convert_error"], outcomes, str(root), cached)


def load_stored(folder: Path) -> LoadCheck | None:
    """A stored check, or None if absent, unreadable or damaged (then it is made again)."""
    data = store.read_record(folder)
    if data is None:
        return None
    try:
        return _from_json(data, folder, cached=True)
    except store.SHAPE_ERRORS:
        return None


def failed(check: LoadCheck) -> bool:
    """The check could not get as far as an outcome on every runtime (the exporter could not
    write the asset, a runtime could not be tried): recorded, so `cache prune --failures` can
    drop it."""
    return not check.converted or any(o.outcome == "not-run" for o in check.outcomes)


def check_dir(spec: ProbeSpec, exporter: Env, runtime_ids: dict[str, dict[str, str]]) -> Path:
    key = _key(spec, exporter, runtime_ids)
    return in_store(results_root() /
                    f"load-{safe_name(exporter.converter)}-{safe_name(spec.dtype)}-{key}")


def load_check(spec: ProbeSpec, exporter: Env, cores: list[str], session: Session,
               use_cache: bool = True) -> LoadCheck:
    """The asset `exporter` writes for `spec`, loaded and run on each runtime of `cores`."""
    runtime_ids: dict[str, dict[str, str]] = {}
    for core in cores:
        try:
            runtime_ids[core] = _identity(session.env_for_core(core), ("coreai-core", "numpy"))
        except EnvError as exc:
            runtime_ids[core] = {"unavailable": str(exc)}
    final = check_dir(spec, exporter, runtime_ids)
    if use_cache:
        stored = store.stored(final, load_stored)  # here, else the remote tier's
        if stored is not None:
            return stored
    with store.building(final) as work:
        check = _make(spec, exporter, cores, session, work)
        if any(o.stage == "environment" or o.outcome == "flaky" for o in check.outcomes):
            # A runtime's environment could not be built, or a runtime gave no lasting answer
            # (flaky): answered, never stored (the next run checks afresh); its evidence is the
            # temp folder's, so it is kept under logs/ for the answer to point at.
            return _unstored(check, work)
        store.write_record(work, {**_to_json(check, work), "key": final.name,
                                  "code": code_digest(), "failed": failed(check)})
        return _publish(work, final, replace_stored=not use_cache)


def _make(spec: ProbeSpec, exporter: Env, cores: list[str], session: Session,
          work: Path) -> LoadCheck:
    packages = _identity(exporter, ("coreai-torch", "coreai-core", "torch", "numpy"))
    export = work / f"export-{exporter.converter}"
    try:
        # The session's probe workers convert (a scan session's are readers: never asked).
        answer = session.pool_of(Worker, "worker").worker(exporter).call(
            {"op": "convert", "spec": spec.to_json(), "out": str(export)})
    except WorkerFailure as exc:
        answer = {"ok": False, "stage": "worker", "error": str(exc)}
    if not answer.get("ok"):
        _not_the_environment(session.pool_of(Worker, "worker").worker(exporter))
        why = f"coreai-torch {exporter.converter} could not write the asset " \
              f"({answer.get('stage')}: {answer.get('error')})"
        outcomes = tuple(RuntimeOutcome(c, "not-run", "export", why) for c in cores)
        return LoadCheck(spec, exporter.converter, packages, False, why, outcomes, str(work))
    asset = Path(answer["files"]["asset"])
    outcomes = tuple(run_on(asset, core, session, work / f"run-{core}") for core in cores)
    return LoadCheck(spec, exporter.converter, packages, True, "", outcomes, str(work))


def _unstored(check: LoadCheck, work: Path) -> LoadCheck:
    """A check that is answered but not stored: its files moved out of the temp folder to
    `logs/load-checks/`, the outcomes pointing there."""
    if not any(o.outcome == "flaky" for o in check.outcomes):
        shutil.rmtree(work, ignore_errors=True)
        return check
    kept = in_store(cache_root() / "logs" / "load-checks" / f"{work.name.lstrip('.')}")
    kept.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(kept, ignore_errors=True)
    shutil.move(str(work), kept)

    def moved(path: str) -> str:
        return path.replace(str(work), str(kept))

    outcomes = tuple(replace(o, files={k: moved(v) for k, v in o.files.items()})
                     for o in check.outcomes)
    return replace(check, outcomes=outcomes, evidence=str(kept))


def _publish(work: Path, final: Path, replace_stored: bool) -> LoadCheck:
    """Move a finished check into place; if another process got there first, keep theirs
    (unless `replace_stored`, --no-cache: then ours replaces it)."""
    theirs = store.install(work, final, load_stored, replace_stored)
    if theirs is not None:
        return replace(theirs, cached=False)
    stored = load_stored(final)
    assert stored is not None, f"a load check just written is unreadable: {final}"
    return replace(stored, cached=False)
