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

import re
import shutil
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from oracle.catalog.releases import EnvError
from oracle.clients.worker_clients import AssetWorker
from oracle.clients.worker_pool import EnvironmentFault, Pool, Worker, WorkerFailure, Workers
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.infra.paths import cache_root, in_store
from oracle.store import result_store as store
from oracle.store.load_records import (
    LoadCheck,
    RuntimeOutcome,
    check_dir,
    code_digest,
    failed,
    identity,
    load_stored,
    to_json,
)

if TYPE_CHECKING:
    from oracle.session import Session

CONFIRM = "confirm"  # the folder of the second attempt, beside the first's files


def asset_workers(session: Session) -> Pool:
    return session.pool_of(AssetWorker, "asset-worker")


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
        if at >= 0 and (at == 0 or ln[at - 2 : at] == ": "):
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


def run_on(
    asset: Path,
    core: str,
    session: Session,
    out: Path,
    execute: bool = True,
    seed: int = 0,
    inputs: Path | None = None,
) -> RuntimeOutcome:
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
    wrote = [
        o
        for o, a in ((out, first), (again, second))
        if a.died and any(o.glob("*.outputs.safetensors"))
    ]
    if (
        second.died
        and (second.outcome, second.signal) == (first.outcome, first.signal)
        and not wrote
    ):
        return replace(first, files=files)
    why = (
        f"{first.describe()} on the first attempt, after writing its outputs"
        if wrote
        else f"{first.describe()} on the first attempt, {second.describe()} on the second, in a "
        "fresh process"
    )
    return RuntimeOutcome(
        core, "flaky", first.stage, f"{why}: no lasting answer", first.signal, files
    )


def _attempt(
    asset: Path,
    core: str,
    env: Env,
    session: Session,
    out: Path,
    execute: bool,
    seed: int,
    inputs: Path | None,
) -> RuntimeOutcome:
    out.mkdir(parents=True, exist_ok=True)
    log = out / "run.log"
    request = {
        "op": "run",
        "asset": str(asset),
        "out": str(out),
        "seed": seed,
        "execute": execute,
        "inputs": str(inputs) if inputs else None,
    }
    worker = asset_workers(session).worker(env)
    try:
        answer = worker.call(request)
    except WorkerFailure as exc:
        _not_the_environment(worker)
        text = str(exc)
        died = re.search(r"died of (\w+)", text)
        error = first_error(_read(log))
        if died:
            return RuntimeOutcome(core, "crashes", "load", error, died.group(1), {"log": str(log)})
        return RuntimeOutcome(
            core,
            "fails-to-load",
            "worker",
            error or text.split(" (log:")[0],
            files={"log": str(log)},
        )
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


def load_check(
    spec: ProbeSpec, exporter: Env, cores: list[str], session: Session, use_cache: bool = True
) -> LoadCheck:
    """The asset `exporter` writes for `spec`, loaded and run on each runtime of `cores`."""
    runtime_ids: dict[str, dict[str, str]] = {}
    for core in cores:
        try:
            runtime_ids[core] = identity(session.env_for_core(core), ("coreai-core", "numpy"))
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
        store.write_record(
            work,
            {
                **to_json(check, work),
                "key": final.name,
                "code": code_digest(),
                "failed": failed(check),
            },
        )
        return _publish(work, final, replace_stored=not use_cache)


def _make(
    spec: ProbeSpec, exporter: Env, cores: list[str], session: Session, work: Path
) -> LoadCheck:
    packages = identity(exporter, ("coreai-torch", "coreai-core", "torch", "numpy"))
    export = work / f"export-{exporter.converter}"
    try:
        # The session's probe workers convert (a scan session's are readers: never asked).
        answer = (
            session.pool_of(Worker, "worker")
            .worker(exporter)
            .call({"op": "convert", "spec": spec.to_json(), "out": str(export)})
        )
    except WorkerFailure as exc:
        answer = {"ok": False, "stage": "worker", "error": str(exc)}
    if not answer.get("ok"):
        _not_the_environment(session.pool_of(Worker, "worker").worker(exporter))
        why = (
            f"coreai-torch {exporter.converter} could not write the asset "
            f"({answer.get('stage')}: {answer.get('error')})"
        )
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

    outcomes = tuple(
        replace(o, files={k: moved(v) for k, v in o.files.items()}) for o in check.outcomes
    )
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
