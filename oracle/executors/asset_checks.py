"""A load check made and stored, wherever an executor makes it: the asset probe converted by the
exporter and saved, then loaded and run on each runtime (`oracle/load_check.py` says what the
check is and how its outcomes are confirmed).

The making needs only a `Runtimes`: the environment of each runtime and the pools of workers in
them. The driver's session is one (the local executor makes the check in this process); a Ray
node's agent is another (`ray_node.py`: the check is made in the node's temp folder and its
files come back whole). Either way `check` keys it, reads it from the store, and stores what was
made in this process, so a check is the same record whoever made it.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol, TypeVar

from oracle.catalog.releases import EnvError, RunFault
from oracle.clients.worker_pool import EnvironmentFault, Pool, Worker, WorkerFailure, Workers
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.executors.answers import AssetRun, Decode
from oracle.executors.calls import Call, Ship
from oracle.infra.paths import cache_root, in_store
from oracle.store import result_store as store
from oracle.store.load_records import (
    LoadCheck,
    RuntimeOutcome,
    check_dir,
    code_digest,
    failed,
    identity,
    legacy_runtime_key,
    load_stored,
    runtime_key,
    to_json,
)

# A check's outcome made nowhere lasting: its stage says why, and such a check is answered but
# never stored (the next run checks afresh): no environment for a runtime; a job no node of a
# cluster could run.
UNSTORED_STAGES = ("environment", "cluster")

A = TypeVar("A")


class Runtimes(Protocol):
    """What making a check needs: the environment whose coreai-core is a runtime, and pools of
    workers (the probe worker that converts, the asset worker that runs) in environments."""

    def env_for_core(self, core: str) -> Env: ...

    def ready(self, env: Env) -> Env:
        """`env` built, when a run must happen in it (the session's are built when first
        needed; a node's are)."""
        ...

    def pool_of(self, worker: type[Worker], log_suffix: str) -> Pool: ...

    def calls(self, calls: Sequence[Call], decode: Decode[A], at_once: int = 1) -> list[A]:
        """Each call's worker answer (`oracle/executors/calls.py`), read by `decode`: the
        session's go through its executor, a node's to its own workers."""
        ...


# The fields an asset run reads: the asset, and a folder's seeded inputs (never its program).
RUN_SHIPS = (Ship("asset"), Ship("inputs", "*.inputs.safetensors"))

# Makes the check in `work` (the store's temp folder of the key it is given).
Maker = Callable[[Path, str], LoadCheck]


CONFIRM = "confirm"  # the folder of the second attempt, beside the first's files


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


@dataclass(frozen=True)
class Run:
    """An asset to load (and with `execute`, run on seeded inputs, or on those an earlier run
    stored in `inputs`) on one runtime, its files in `out`."""

    asset: Path
    core: str
    out: Path
    execute: bool = True
    seed: int = 0
    inputs: Path | None = None


def run_on(
    asset: Path,
    core: str,
    runtimes: Runtimes,
    out: Path,
    execute: bool = True,
    seed: int = 0,
    inputs: Path | None = None,
) -> RuntimeOutcome:
    """Load (and with `execute`, run) `asset` on one runtime, contained (`runs_on`)."""
    [outcome] = runs_on([Run(asset, core, out, execute, seed, inputs)], runtimes)
    return outcome


def runs_on(runs: Sequence[Run], runtimes: Runtimes, at_once: int = 1) -> list[RuntimeOutcome]:
    """Each run, contained; never raises for what a runtime does. The first attempts go to the
    executor as one batch (here up to `at_once` at a time), then the second attempts of those
    that died or did not answer, in fresh processes: `crashes` only when the death repeats,
    else `flaky` (so is an abort after the outputs were written)."""
    outcomes: dict[int, RuntimeOutcome] = {}
    envs: dict[int, Env] = {}
    for i, run in enumerate(runs):
        try:
            # built now that a run must happen: one that cannot be is this runtime's outcome
            envs[i] = runtimes.ready(runtimes.env_for_core(run.core))
        except EnvError as exc:
            outcomes[i] = RuntimeOutcome(run.core, "not-run", "environment", str(exc))
    tried = list(envs)
    attempted = _attempts([(runs[i], envs[i], runs[i].out) for i in tried], runtimes, at_once)
    firsts = dict(zip(tried, attempted, strict=True))
    died = [i for i, first in firsts.items() if first.died]
    again = [(runs[i], envs[i], runs[i].out / CONFIRM) for i in died]
    seconds = dict(zip(died, _attempts(again, runtimes, at_once), strict=True))
    for i, first in firsts.items():
        outcomes[i] = _settled(runs[i], first, seconds[i]) if i in seconds else first
    return [outcomes[i] for i in range(len(runs))]  # each run answered, in order


def _settled(run: Run, first: RuntimeOutcome, second: RuntimeOutcome) -> RuntimeOutcome:
    """A death confirmed by a second attempt in a fresh process, or found flaky."""
    again = run.out / CONFIRM
    files = {**first.files, **{f"{CONFIRM}.{k}": v for k, v in second.files.items()}}
    # a death after the runtime wrote its outputs: it ran, whatever ended it
    wrote = [
        o
        for o, a in ((run.out, first), (again, second))
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
        run.core, "flaky", first.stage, f"{why}: no lasting answer", first.signal, files
    )


def _attempts(
    items: Sequence[tuple[Run, Env, Path]], runtimes: Runtimes, at_once: int
) -> list[RuntimeOutcome]:
    """One attempt of each (run, its runtime's environment, where its files go), as a batch."""
    calls = []
    for run, env, out in items:
        out.mkdir(parents=True, exist_ok=True)
        request = {
            "op": "run",
            "asset": str(run.asset),
            "out": str(out),
            "seed": run.seed,
            "execute": run.execute,
            "inputs": str(run.inputs) if run.inputs else None,
        }
        # the run reads the asset and a folder's seeded inputs, never another program there
        calls.append(Call("asset", env, request, RUN_SHIPS, faults=True))
    answers = runtimes.calls(calls, AssetRun.decode, at_once) if calls else []
    return [
        _outcome(run.core, out, run.execute, answer)
        for (run, _env, out), answer in zip(items, answers, strict=True)
    ]


def _outcome(core: str, out: Path, execute: bool, answer: AssetRun) -> RuntimeOutcome:
    """What one attempt's answer (and the log the runtime wrote in `out`) says."""
    run = answer.envelope
    if run.environment_fault:
        # the environment cannot run the worker: not the asset's outcome, never stored
        raise EnvironmentFault(run.environment_fault)
    log = out / "run.log"
    if run.died:  # the runtime died or did not answer
        text = run.error or ""
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
    for fn in answer.functions:
        for kind, file in (("inputs", fn.inputs_file), ("outputs", fn.outputs_file)):
            if file is not None:
                files[f"{fn.name}.{kind}"] = file
    if run.ok:
        return RuntimeOutcome(core, "loads", "run" if execute else "load", files=files)
    stage = run.stage or "?"
    if stage == "inputs":  # the asset loaded; this check cannot feed it
        return RuntimeOutcome(core, "not-run", stage, run.error or "", files=files)
    error = first_error(_read(log)) or run.error or ""
    return RuntimeOutcome(core, "fails-to-load", stage, error, files=files)


def _not_the_environment(worker: Worker | Workers) -> None:
    """After a failure: raise if the environment cannot run the worker at all (then it is not
    the asset's outcome, and nothing is stored)."""
    fault = worker.environment_fault()
    if fault is not None:
        raise EnvironmentFault(fault)


def runtime_identities(
    cores: list[str], runtimes: Runtimes, legacy: bool = False
) -> dict[str, dict[str, str]] | None:
    """What a check is keyed on of each runtime (or why it has no environment): its pinned
    core; with `legacy`, the installed packages of the earlier key, None while one of the
    runtimes' environments is not built."""
    out: dict[str, dict[str, str]] = {}
    for core in cores:
        try:
            env = runtimes.env_for_core(core)
        except EnvError as exc:
            out[core] = {"unavailable": str(exc)}
            continue
        if legacy and not env.built:
            return None
        out[core] = legacy_runtime_key(env) if legacy else runtime_key(env)
    return out


def final_dir(spec: ProbeSpec, exporter: Env, cores: list[str], runtimes: Runtimes) -> Path:
    """Where the check is stored: its folder is named by its key."""
    ids = runtime_identities(cores, runtimes)
    assert ids is not None  # only a legacy identity waits for a build
    return check_dir(spec, exporter, ids, runtime_identities(cores, runtimes, legacy=True))


def check(
    spec: ProbeSpec,
    exporter: Env,
    cores: list[str],
    runtimes: Runtimes,
    use_cache: bool = True,
    maker: Maker | None = None,
) -> LoadCheck:
    """The asset `exporter` writes for `spec`, loaded and run on each runtime of `cores`: from
    the store, else made by `maker` (by default here, with `runtimes`) and stored."""
    final = final_dir(spec, exporter, cores, runtimes)
    if use_cache:
        stored = store.stored(final, load_stored)  # here, else the remote tier's
        if stored is not None:
            return stored
    with store.building(final) as work:
        made = (
            maker(work, final.name)
            if maker is not None
            else make(spec, exporter, cores, runtimes, work)
        )
        return kept(made, work, final, use_cache)


def kept(made: LoadCheck, work: Path, final: Path, use_cache: bool) -> LoadCheck:
    """A check made in `work` (the store's temp folder of `final`), stored; or answered but
    not stored when it holds no lasting answer."""
    if any(o.stage in UNSTORED_STAGES or o.outcome == "flaky" for o in made.outcomes):
        # A runtime's environment could not be built, a runtime gave no lasting answer
        # (flaky), or no node could run the check: answered, never stored (the next run checks
        # afresh); a flaky check's evidence is the temp folder's, so it is kept under logs/ for
        # the answer to point at.
        return _unstored(made, work)
    store.write_record(
        work,
        {
            **to_json(made, work),
            "key": final.name,
            "code": code_digest(),
            "failed": failed(made),
        },
    )
    return _publish(work, final, replace_stored=not use_cache)


def make(
    spec: ProbeSpec, exporter: Env, cores: list[str], runtimes: Runtimes, work: Path
) -> LoadCheck:
    """The check made in `work`, in this process: the exporter's probe worker writes the asset,
    each runtime's asset worker loads and runs it."""
    # built now, when the asset must be written (the check records what it holds); one that
    # cannot be is every runtime's outcome, as when it could not be had up front (not stored)
    try:
        exporter = runtimes.pool_of(Worker, "worker").ready(exporter)
    except RunFault:
        raise  # the store cannot be written, an environment cannot run: the run's error
    except EnvError as exc:
        why = f"no environment for coreai-torch {exporter.converter}: {exc}"
        outcomes = tuple(RuntimeOutcome(c, "not-run", "environment", why) for c in cores)
        return LoadCheck(spec, exporter.converter, {}, False, why, outcomes, str(work))
    packages = identity(exporter, ("coreai-torch", "coreai-core", "torch", "numpy"))
    export = work / f"export-{exporter.converter}"
    try:
        # The probe workers convert (a scan session's own workers are readers: never asked).
        answer = (
            runtimes.pool_of(Worker, "worker")
            .worker(exporter)
            .call({"op": "convert", "spec": spec.to_json(), "out": str(export)})
        )
    except WorkerFailure as exc:
        answer = {"ok": False, "stage": "worker", "error": str(exc)}
    if not answer.get("ok"):
        _not_the_environment(runtimes.pool_of(Worker, "worker").worker(exporter))
        why = (
            f"coreai-torch {exporter.converter} could not write the asset "
            f"({answer.get('stage')}: {answer.get('error')})"
        )
        outcomes = tuple(RuntimeOutcome(c, "not-run", "export", why) for c in cores)
        return LoadCheck(spec, exporter.converter, packages, False, why, outcomes, str(work))
    asset = Path(answer["files"]["asset"])
    outcomes = tuple(runs_on([Run(asset, core, work / f"run-{core}") for core in cores], runtimes))
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
