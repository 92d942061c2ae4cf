"""Compare one probe under two converters: convert both, normalise, and measure when they differ.

Everything a result says comes from files this module keeps: each side's aten graph, emitted and
shipped IR and `.aimodel`; the normalised texts and their unified diff; and, when the shipped
programs differ, the inputs, the torch fp32 reference and both sides' outputs as safetensors,
all measured on one runtime.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

from oracle.clients.worker_pool import EnvironmentFault, Pool, WorkerFailure
from oracle.compare.normalisation import compare_normalised, normalise
from oracle.compare.results import Alone, Identity, Measurement, ProbeResult, Side
from oracle.compare.spec import ProbeSpec
from oracle.compare.stats import output_stats, side_stats
from oracle.envs.environment import Env
from oracle.store import result_store as store

__all__ = ["Measurement", "ProbeResult", "Side", "compare", "compute"]


def _not_the_environment(pool: Pool, env: Env) -> None:
    """After a failure: raise if the environment, not the converter, is what failed (a broken
    shared-torch `.pth`, a missing interpreter), so that it is never a verdict nor stored."""
    fault = pool.worker(env).environment_fault()
    if fault is not None:
        raise EnvironmentFault(fault)


def _convert(pool: Pool, env: Env, spec: ProbeSpec, out: Path) -> Side:
    try:
        answer = pool.worker(env).call({"op": "convert", "spec": spec.to_json(), "out": str(out)})
    except WorkerFailure as exc:
        _not_the_environment(pool, env)
        return Side(env.converter, store.env_identity(env), False, "worker", str(exc))
    if not answer.get("ok"):
        _not_the_environment(pool, env)
        return Side(
            env.converter,
            store.env_identity(env),
            False,
            answer.get("stage", "?"),
            answer.get("error", "?"),
            {"traceback": answer.get("traceback", "")},
        )
    return Side(
        env.converter,
        store.env_identity(env),
        True,
        files=answer["files"],
        digest=answer["digest"],
        emitted_is_optimized=answer["emitted_is_optimized"],
    )


def _identity(old: Side, new: Side, stage: str, out: Path) -> Identity:
    if not old.ok or not new.ok:
        if not old.ok and not new.ok:
            return Identity.BOTH_CANNOT_CONVERT
        return Identity.OLD_CANNOT_CONVERT if not old.ok else Identity.NEW_CANNOT_CONVERT
    if stage == "emitted" and old.emitted_is_optimized != new.emitted_is_optimized:
        # 0.4.3's to_coreai() already returns the optimized program: its emitted stage has no
        # counterpart on an older side, and comparing them would only report that contract.
        return Identity.NOT_COMPARABLE
    a = normalise(Path(old.files[stage]).read_text())
    b = normalise(Path(new.files[stage]).read_text())
    (out / f"{stage}.old.normalised.mlir").write_text(a)
    (out / f"{stage}.new.normalised.mlir").write_text(b)
    result = compare_normalised(
        a, b, f"{stage} coreai-torch {old.converter}", f"{stage} coreai-torch {new.converter}"
    )
    if result.identical:
        return Identity.IDENTICAL
    (out / f"{stage}.diff").write_text(result.diff)
    return Identity.DIFFERS


def _measure(
    pool: Pool, old_env: Env, new_env: Env, spec: ProbeSpec, old: Side, new: Side, out: Path
) -> Measurement:
    """Run both assets on one runtime: the new side's, else the old side's if it cannot."""
    candidates = [new_env] if new_env.core == old_env.core else [new_env, old_env]
    attempts: list[str] = []
    assets = {"old": old.files["asset"], "new": new.files["asset"]}
    cores = {old_env.core, new_env.core}
    for env in candidates:
        # A runtime that already aborted on this pair of asset versions in this run is not
        # asked again (each abort costs a worker restart); the attempt is still reported.
        known = pool.failures.get((env.core, frozenset(cores)))
        if known:
            attempts.append(f"{env.runtime}: not retried ({known})")
            continue
        target = out / f"measure-{env.packages.get('coreai-core', env.core)}"
        try:
            answer = pool.worker(env).call(
                {"op": "measure", "spec": spec.to_json(), "assets": assets, "out": str(target)}
            )
        except WorkerFailure as exc:
            _not_the_environment(pool, env)
            attempts.append(f"{env.runtime}: {exc}")
            if len(cores) > 1:
                pool.failures[(env.core, frozenset(cores))] = f"earlier in this run: {exc}"
            continue
        failed = {s: v for s, v in answer.get("sides", {}).items() if not v.get("ok")}
        if not answer.get("ok") or failed:
            _not_the_environment(pool, env)
            why = answer.get("error") or "; ".join(f"{s}: {v['error']}" for s, v in failed.items())
            attempts.append(f"{env.runtime}: {why}")
            continue
        files = {
            "inputs": answer["inputs"],
            "reference": answer["reference"],
            "old": answer["sides"]["old"]["outputs"],
            "new": answer["sides"]["new"]["outputs"],
            "log": answer["log"],
        }
        stats = output_stats(Path(files["old"]), Path(files["new"]), Path(files["reference"]))
        return Measurement(env.runtime, attempts, True, stats=stats, files=files)
    return Measurement("none", attempts, False, error="no runtime could run both assets")


def _alone(pool: Pool, env: Env, spec: ProbeSpec, which: str, side: Side, out: Path) -> Alone:
    """Run the one side that converts against the torch fp32 reference, on its own runtime (the
    one its assets ship to): the other side's failure says nothing about whether this program
    is right."""
    target = out / f"alone-{which}-{env.packages.get('coreai-core', env.core)}"
    try:
        answer = pool.worker(env).call(
            {
                "op": "measure",
                "spec": spec.to_json(),
                "assets": {which: side.files["asset"]},
                "out": str(target),
            }
        )
    except WorkerFailure as exc:
        _not_the_environment(pool, env)
        return Alone(which, env.runtime, False, str(exc))
    ran = answer.get("sides", {}).get(which, {})
    if not answer.get("ok") or not ran.get("ok"):
        _not_the_environment(pool, env)
        return Alone(which, env.runtime, False, answer.get("error") or ran.get("error", "?"))
    files = {
        "inputs": answer["inputs"],
        "reference": answer["reference"],
        which: ran["outputs"],
        "log": answer["log"],
    }
    stats = side_stats(Path(ran["outputs"]), Path(answer["reference"]))
    return Alone(which, env.runtime, True, stats=stats, files=files)


@contextmanager
def _stopped_on_interrupt(pool: Pool) -> Iterator[None]:
    """Ctrl-C can land after a side's thread has started and before the executor records it, so
    that thread is never joined: on an interrupt, stop the workers before the temp folder they
    write into is removed (the enclosing `store.building`), or that side recreates it."""
    try:
        yield
    except (KeyboardInterrupt, SystemExit):
        pool.stop()
        raise


def compute(spec: ProbeSpec, old_env: Env, new_env: Env, pool: Pool, work: Path) -> ProbeResult:
    """The comparison itself, built in `work` and not stored: what an executor runs where the
    environments are (this process, or a cluster node whose driver stores the result)."""
    with _stopped_on_interrupt(pool):
        with ThreadPoolExecutor(max_workers=2) as ex:  # the two sides convert in parallel
            # built now, when a side must convert (each records what its environment holds)
            old_env, new_env = ex.map(pool.ready, (old_env, new_env))
            f_old = ex.submit(_convert, pool, old_env, spec, work / f"old-{old_env.converter}")
            f_new = ex.submit(_convert, pool, new_env, spec, work / f"new-{new_env.converter}")
            old, new = f_old.result(), f_new.result()
        if old.ok and new.ok and old.digest != new.digest:
            raise RuntimeError("the two sides built different probe modules; refusing to compare")
        emitted = _identity(old, new, "emitted", work)
        shipped = _identity(old, new, "shipped", work)
        measurement = alone = None
        if shipped == Identity.DIFFERS:
            measurement = _measure(pool, old_env, new_env, spec, old, new, work)
        elif shipped == Identity.OLD_CANNOT_CONVERT:
            alone = _alone(pool, new_env, spec, "new", new, work)
        elif shipped == Identity.NEW_CANNOT_CONVERT:
            alone = _alone(pool, old_env, spec, "old", old, work)
        return ProbeResult(spec, old, new, emitted, shipped, measurement, str(work), alone=alone)


def compare(
    spec: ProbeSpec, old_env: Env, new_env: Env, pool: Pool, use_cache: bool = True
) -> ProbeResult:
    final = store.result_dir(spec, old_env, new_env)
    if use_cache:
        cached = store.stored(final, store.load_result)  # here, else the remote tier's
        if cached is not None:
            return cached
    # Built in a temp folder and renamed into place: a reader never sees half a result.
    with store.building(final) as work:
        result = compute(spec, old_env, new_env, pool, work)
        # --no-cache asked for a fresh answer: it replaces what is stored, and is what is told.
        return store.publish(result, work, final, replace_stored=not use_cache)
