"""A comparison made over two stored sides: each side is read from the side store (here, else
the remote tier) or converted once and stored there (`oracle/store/sides.py`), so any
comparison reuses any side another one converted.

The comparison's own folder keeps what is the comparison's (the normalised texts, their diff,
the measurement or the lone side's run) and each side's files linked in from its stored side (a
hard link, a copy across devices), with `sides.json`: which stored side each one is and whether
this comparison converted it. Its record is the comparison's as before, so results stored
before sides were are read as they are, under the same key.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from oracle.clients.worker_pool import Pool, WorkerFailure, stopping
from oracle.compare.results import Identity, ProbeResult, Side
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env

# the comparison's own steps, unchanged (its module is part of every result's key): a result
# made over stored sides is the one it made
from oracle.executors.comparison import (
    _alone,
    _convert,
    _identity,
    _measure,
    _stopped_on_interrupt,
)
from oracle.store import result_store as store
from oracle.store import sides

SIDES_FILE = "sides.json"
# one conversion of a side at a time in this process: two comparisons of a batch that share a
# side wait for the first to store it, and read it
_converting: dict[Path, threading.Lock] = {}
_guard = threading.Lock()


@dataclass(frozen=True)
class Had:
    """A side as a comparison has it: the side, its stored folder (None: a worker that died or
    timed out, which is not the converter's answer and is never stored) and whether it was
    converted for this comparison."""

    side: Side
    folder: Path | None
    converted: bool


def _lock(final: Path) -> threading.Lock:
    with _guard:
        return _converting.setdefault(final, threading.Lock())


def side(pool: Pool, env: Env, spec: ProbeSpec, use_cache: bool = True) -> Had:
    """`spec` under `env`, from the side store (here, else the remote tier) or converted now
    and stored there."""
    final = sides.side_dir(spec, env)
    with _lock(final):
        if use_cache:
            found = store.stored(final, sides.load_side)
            if found is not None:
                return Had(found, final, False)
        with store.building(final) as work:
            made = _convert(pool, pool.ready(env), spec, work)
            if not made.ok and made.stage == "worker":
                shutil.rmtree(work, ignore_errors=True)
                return Had(made, None, True)
            if pool.stopped or stopping():
                # its workers are being killed: a failure now is not the converter's
                raise WorkerFailure("the run was stopped before this side was converted")
            kept = sides.publish_side(made, spec, work, final, replace_stored=not use_cache)
            return Had(kept, final, True)


def _linked(had: Had, into: Path) -> Side:
    """The side's files in the comparison's folder `into`, linked from its stored folder."""
    stored_at = had.folder
    if stored_at is None:
        return had.side
    for root, _, names in os.walk(stored_at):
        for name in names:
            if name == store.RESULT_FILE or name.startswith(store.VERIFIED):
                continue
            source = Path(root, name)
            target = into / source.relative_to(stored_at)
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(source, target)
            except OSError:  # another device, or links refused: a copy
                shutil.copy2(source, target)

    def moved(value: str) -> str:
        path = Path(value) if value else None
        if path is not None and path.is_relative_to(stored_at):
            return str(into / path.relative_to(stored_at))
        return value

    return replace(had.side, files={key: moved(value) for key, value in had.side.files.items()})


def compute(
    spec: ProbeSpec, old_env: Env, new_env: Env, pool: Pool, work: Path, use_cache: bool = True
) -> ProbeResult:
    """`comparison.compute` over stored sides: each side taken from the side store or
    converted and stored there; built in `work` and not stored itself."""
    with _stopped_on_interrupt(pool):
        with ThreadPoolExecutor(max_workers=2) as ex:  # the two sides convert in parallel
            f_old = ex.submit(side, pool, old_env, spec, use_cache)
            f_new = ex.submit(side, pool, new_env, spec, use_cache)
            had = {"old": f_old.result(), "new": f_new.result()}
        (work / SIDES_FILE).write_text(
            json.dumps(
                {
                    which: {"side": h.folder.name if h.folder else "", "converted": h.converted}
                    for which, h in had.items()
                },
                indent=2,
                sort_keys=True,
            )
        )
        old = _linked(had["old"], work / f"old-{old_env.converter}")
        new = _linked(had["new"], work / f"new-{new_env.converter}")
        if old.ok and new.ok and old.digest != new.digest:
            raise RuntimeError("the two sides built different probe modules; refusing to compare")
        emitted = _identity(old, new, "emitted", work)
        shipped = _identity(old, new, "shipped", work)
        measurement = alone = None
        # a worker runs only now, and only where a measurement needs it
        if shipped == Identity.DIFFERS:
            old_env, new_env = pool.ready(old_env), pool.ready(new_env)
            measurement = _measure(pool, old_env, new_env, spec, old, new, work)
        elif shipped == Identity.OLD_CANNOT_CONVERT:
            alone = _alone(pool, pool.ready(new_env), spec, "new", new, work)
        elif shipped == Identity.NEW_CANNOT_CONVERT:
            alone = _alone(pool, pool.ready(old_env), spec, "old", old, work)
        return ProbeResult(spec, old, new, emitted, shipped, measurement, str(work), alone=alone)


def compare(
    spec: ProbeSpec, old_env: Env, new_env: Env, pool: Pool, use_cache: bool = True
) -> ProbeResult:
    """One comparison, read from the store or made over stored sides and published."""
    final = store.result_dir(spec, old_env, new_env)
    if use_cache:
        cached = store.stored(final, store.load_result)  # here, else the remote tier's
        if cached is not None:
            return cached
    with store.building(final) as work:
        result = compute(spec, old_env, new_env, pool, work, use_cache)
        if pool.stopped or stopping():
            raise WorkerFailure("the run was stopped before this comparison finished")
        return store.publish(result, work, final, replace_stored=not use_cache)
