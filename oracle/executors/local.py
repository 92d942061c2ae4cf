"""The local executor: comparisons and load checks in this process's pool of per-environment
workers, up to `jobs` at once (`--jobs`, default the cores this process may use; it never imports
a cluster engine).

A batch (`dispatch`) is queued whole and run by `jobs` threads in the background while the
command goes on; each result is kept for the `compare` that asks for it, and the follow-ups it
calls for (a change located step by step) are queued at the front as soon as it lands. A
comparison or check asked for that is still queued is moved to the front; one no batch holds is
queued there too: the command never waits behind jobs it does not need yet. The threads only wait on
workers (`Pool.lease`): each job converts its two sides in two worker processes, so `jobs`
threads keep up to `2 * jobs` of them busy, which is what `--jobs` bounds.

What ran, when and after what is kept in a ledger per session, `runs/local/<time>-<pid>-<n>.json`
in the cache: each batch's size, each job's key, kind (`comparison` with its `old` and `new`
release, `load-check` with its `exporter`), batch (none: asked for outside any batch), the
job it followed, when it was queued, started and ended (seconds from the session's start),
whether a thread was free for it when queued, the jobs that ended while it waited, and whether
it was read from the store. Under `calls`, each call of a whole-program check (`Oracle.calls`):
its batch, kind, release, when it was handed over, started and ended, and whether it answered.
"""

from __future__ import annotations

import itertools
import json
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from oracle.clients.worker_pool import Pool, WorkerFailure, stopping
from oracle.compare.results import ProbeResult
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.executors.api import Comparison, Job, Landed, LoadRequest, Oracle, no_follow_ups
from oracle.executors.shared_sides import compare, compute
from oracle.infra.paths import runs_dir
from oracle.store import result_store as store

if TYPE_CHECKING:
    from oracle.executors.asset_checks import Runtimes
    from oracle.executors.calls import Call, Pools
    from oracle.store.load_records import LoadCheck

_started = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
_sessions = itertools.count(1)  # one ledger file per session of the process


def usable_cores() -> int:
    """The cores this process may use (its CPU affinity, not the machine's count)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity on this platform
        return os.cpu_count() or 1


def default_jobs() -> int:
    """Half the cores this process may use, at least 1: a comparison already converts its two
    sides in two processes at once, so one job keeps two cores busy (measured: on 2 cores,
    `--jobs 2` is no faster than `--jobs 1` and keeps twice the workers,
    docs/measurements.md)."""
    return max(1, usable_cores() // 2)


def _key(item: Job) -> str:
    """A job's store key: its result folder's name."""
    if isinstance(item, LoadRequest):
        return item.final().name
    return store.result_dir(item.spec, item.old, item.new).name


@dataclass
class _Job:
    item: Job  # a comparison or a load check
    key: str
    use_cache: bool
    landed: Landed
    batch: int | None  # None: asked for, not part of a batch
    after: str | None  # the job whose result called for this one
    future: Future[Any] = field(default_factory=Future)  # a ProbeResult or a LoadCheck
    asked: bool = False  # the command waits for it: run even where it would be skipped
    entry: dict[str, Any] = field(default_factory=dict)  # its line of the ledger


class LocalOracle(Oracle):
    name = "local"

    def __init__(self, pool: Pool, jobs: int = 1) -> None:
        self.pool = pool
        self.jobs = max(1, jobs)
        self._cond = threading.Condition()
        self._queue: deque[_Job] = deque()
        self._known: dict[str, _Job] = {}  # result folder name -> its job, queued or run
        self._threads: list[threading.Thread] = []
        self._closed = False
        self._failed: set[str] = set()  # releases one of whose workers failed in a job
        self._running = 0
        self._ended: list[str] = []  # keys of the jobs ended, in order, but stored reads
        self._t0 = time.monotonic()
        self._batches = 0
        self.ledger: dict[str, Any] = {
            "executor": "local",
            "jobs": self.jobs,
            "batches": [],
            "runs": [],
            "calls": [],  # `calls`: a whole-program check's conversions, runs and cuts
        }
        self._call_batches = 0

    # -- queueing --------------------------------------------------------------------------
    def _now(self) -> float:
        return round(time.monotonic() - self._t0, 3)

    def _queue_job(
        self,
        item: Job,
        use_cache: bool,
        landed: Landed,
        batch: int | None,
        after: str | None,
        front: bool,
    ) -> _Job:
        """Queue one comparison or load check (the condition held); one already known is not
        queued again."""
        key = _key(item)
        known = self._known.get(key)
        if known is not None:
            return known
        job = _Job(item, key, use_cache, landed, batch, after)
        ahead = self._running + (0 if front else len(self._queue))
        releases = (
            {"kind": "load-check", "exporter": item.exporter.converter}
            if isinstance(item, LoadRequest)
            else {"kind": "comparison", "old": item.old.converter, "new": item.new.converter}
        )
        job.entry = {
            "key": key,
            "batch": batch,
            "after": after,
            "queued": self._now(),
            **releases,
            # a thread was free for it: it must start before any other job ends
            "slot_free": ahead < self.jobs,
            "_ended_at_queue": len(self._ended),
        }
        self.ledger["runs"].append(job.entry)
        self._known[key] = job
        if front:
            self._to_front(job)
        else:
            self._queue.append(job)
        self._start_threads()
        self._cond.notify()
        return job

    def _to_front(self, job: _Job) -> None:
        """Ahead of every queued job (the condition held); each is told it was overtaken, so
        the ledger says why it may wait longer than its place in the queue."""
        for other in self._queue:
            other.entry["overtaken"] = other.entry.get("overtaken", 0) + 1
        self._queue.appendleft(job)

    def _start_threads(self) -> None:
        while len(self._threads) < self.jobs:
            thread = threading.Thread(
                target=self._serve, daemon=True, name=f"local-job-{len(self._threads) + 1}"
            )
            self._threads.append(thread)
            thread.start()

    def dispatch(
        self, batch: Sequence[Job], use_cache: bool = True, landed: Landed = no_follow_ups
    ) -> None:
        if not batch:
            return
        with self._cond:
            if self._closed:
                return
            self._batches += 1
            queued = [
                self._queue_job(c, use_cache, landed, self._batches, None, False) for c in batch
            ]
            self.ledger["batches"].append(
                {
                    "batch": self._batches,
                    "size": len(batch),
                    "queued": self._now(),
                    "new": sum(j.batch == self._batches for j in queued),
                }
            )

    # -- running ---------------------------------------------------------------------------
    def _serve(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                job = self._queue.popleft()
                c = job.item
                if (
                    isinstance(c, Comparison)
                    and c.optional
                    and not job.asked
                    and {c.old.converter, c.new.converter} & self._failed
                ):
                    # made when asked, if it is asked at all: drop it from what is known
                    del self._known[job.key]
                    job.entry.pop("_ended_at_queue", None)
                    job.entry["skipped"] = "a worker of its releases failed earlier"
                    job.future.cancel()
                    continue
                job.entry["started"] = self._now()
                job.entry["thread"] = threading.current_thread().name
                # the jobs that converted and ended while it waited: it waited on them for a
                # thread only
                job.entry["waited_for"] = self._ended[job.entry.pop("_ended_at_queue") :]
                self._running += 1
            self._run(job)

    def _ran(self, job: _Job, **entry: Any) -> None:
        with self._cond:
            job.entry.update(ended=self._now(), **entry)
            self._running -= 1
            # what a later job waited for: a read of a stored result held its thread for
            # milliseconds, and listing every one ended made a warm plan's ledger (three hundred
            # reads, each after the ones before it) 2.5 MB, written on every run
            if not entry.get("stored"):
                self._ended.append(job.key)

    def _made(self, c: Comparison, use_cache: bool) -> ProbeResult:
        """`shared_sides.compare` in a thread of its own: read from the store, or computed over
        stored sides in a temp folder and published; but never published once the run is being
        stopped (no interrupt reaches this thread, so its failures would be the killed workers',
        stored as the converter's)."""
        final = store.result_dir(c.spec, c.old, c.new)
        if use_cache:
            cached = store.stored(final, store.load_result)  # here, else the remote tier's
            if cached is not None:
                return cached
        with store.building(final) as work:
            result = compute(c.spec, c.old, c.new, self.pool, work, use_cache)
            if self.pool.stopped or stopping():
                raise WorkerFailure("the run was stopped before this comparison finished")
            return store.publish(result, work, final, replace_stored=not use_cache)

    def _checked(self, r: LoadRequest, use_cache: bool) -> LoadCheck:
        """`asset_checks.check` in a thread of its own; never stored once the run is being
        stopped (its runtimes' workers are being killed: a crash then is not the asset's)."""
        from oracle.executors.asset_checks import check, make

        def maker(work: Path, key: str) -> LoadCheck:
            del key
            made = make(r.spec, r.exporter, list(r.cores), r.runtimes, work)
            if self.pool.stopped or stopping():
                raise WorkerFailure("the run was stopped before this load check finished")
            return made

        return check(r.spec, r.exporter, list(r.cores), r.runtimes, use_cache, maker)

    def _run(self, job: _Job) -> None:
        if isinstance(job.item, LoadRequest):
            try:
                made = self._checked(job.item, job.use_cache)
            except BaseException as exc:  # noqa: BLE001 - re-raised where the command asks
                self._ran(job, error=type(exc).__name__)
                job.future.set_exception(exc)
                return
            self._ran(job, stored=made.cached)
            job.future.set_result(made)
            return
        c = job.item
        try:
            result = self._made(c, job.use_cache)
        except BaseException as exc:  # noqa: BLE001 - re-raised where the command asks for it
            self._ran(job, error=type(exc).__name__)
            job.future.set_exception(exc)
            return
        self._ran(job, stored=result.cached)
        try:
            follow = job.landed(c, result)
        except Exception as exc:  # noqa: BLE001 - a follow-up not queued is made when asked
            job.entry["follow_up_error"] = f"{type(exc).__name__}: {exc}"[:200]
            follow = ()
        with self._cond:
            for side in (result.old, result.new):
                if not side.ok and side.stage == "worker":
                    self._failed.add(side.converter)
            if not self._closed:
                for more in follow:
                    # at the front: it is what the job it follows was waiting to say
                    self._queue_job(more, job.use_cache, job.landed, job.batch, job.key, True)
        # only now: the command, woken by this result, asks for its follow-ups next, and must
        # find them queued (else each would be asked for outside the batch)
        job.future.set_result(result)

    def _ask(
        self, item: Job, final: Path, use_cache: bool, read: Callable[[Path], Any]
    ) -> tuple[Any, _Job | None]:
        """What the command asks for: `(stored, None)` read here, `(None, job)` to wait on, or
        `(None, None)` when no thread is left to run it (made by the caller, in its thread)."""
        key = final.name
        with self._cond:
            known = key in self._known
        if not known and use_cache and (final / store.RESULT_FILE).exists():
            # stored here and no job of this run's: read in the asking thread. A warm answer
            # reads hundreds, one at a time, and a hand-over to a job thread and back costs more
            # than the read. A queued job is never bypassed (its follow-ups are queued when it
            # lands); a result only the remote tier holds is fetched by a job, as before.
            stored = store.stored(final, read)
            if stored is not None:
                return stored, None
        with self._cond:
            job = self._known.get(key)
            if self._closed and (job is None or not job.future.done() or job.future.cancelled()):
                job = None  # no thread is left to run it
            elif job is not None and job in self._queue:
                # asked for before its turn: it goes first
                self._queue.remove(job)
                self._to_front(job)
                job.entry["hurried"] = self._now()
            elif job is None or job.future.cancelled():
                # no batch holds it: a job of its own, at the front
                job = self._queue_job(item, use_cache, no_follow_ups, None, None, True)
            if job is not None:
                job.asked = True
        return None, job

    def compare(self, spec: ProbeSpec, old: Env, new: Env, use_cache: bool = True) -> ProbeResult:
        final = store.result_dir(spec, old, new)
        stored, job = self._ask(Comparison(spec, old, new), final, use_cache, store.load_result)
        if stored is not None:
            return cast(ProbeResult, stored)
        if job is None:
            return compare(spec, old, new, self.pool, use_cache=use_cache)
        return cast(ProbeResult, job.future.result())

    def load_check(
        self,
        spec: ProbeSpec,
        exporter: Env,
        cores: list[str],
        runtimes: Runtimes,
        use_cache: bool = True,
    ) -> LoadCheck:
        """As `compare`: the batch's job for this check, else a job of its own at the front of
        the queue; made in the asking thread only once no thread is left."""
        from oracle.store.load_records import load_stored

        request = LoadRequest(spec, exporter, tuple(cores), runtimes)
        stored, job = self._ask(request, request.final(), use_cache, load_stored)
        if stored is not None:
            return cast("LoadCheck", stored)
        if job is None:
            return super().load_check(spec, exporter, cores, runtimes, use_cache)
        return cast("LoadCheck", job.future.result())

    def calls(self, calls: Sequence[Call], pools: Pools, at_once: int = 1) -> list[dict[str, Any]]:
        """Each call answered by `pools`' workers, up to `at_once` at a time, beside the
        batch's jobs (a whole program's conversion is not a comparison's job: `--jobs` does
        not bound it); the ledger's `calls` says what each was, when it was handed over,
        started and ended."""
        from oracle.executors.calls import WORKERS, answered, answered_here

        with self._cond:
            self._call_batches += 1
            entries = [
                {
                    "batch": self._call_batches,
                    "kind": WORKERS[c.worker][2],
                    "release": c.env.converter,
                    "queued": self._now(),
                }
                for c in calls
            ]
            self.ledger["calls"].extend(entries)

        def each(i: int, c: Call) -> dict[str, Any]:
            entries[i]["started"] = self._now()
            answer = answered(c, pools)
            entries[i].update(ended=self._now(), ok=bool(answer.get("ok")))
            return answer

        return answered_here(calls, pools, at_once, each)

    def close(self) -> None:
        """Queued jobs are dropped (the command did not ask for them); running ones end (their
        results are stored), then the ledger is written."""
        with self._cond:
            self._closed = True
            while self._queue:
                job = self._queue.popleft()
                job.entry.pop("_ended_at_queue", None)
                job.entry["skipped"] = "not asked for before the session closed"
                job.future.cancel()
            self._cond.notify_all()
        for thread in self._threads:
            thread.join()
        self._write_ledger()

    def _write_ledger(self) -> None:
        if not self.ledger["runs"] and not self.ledger["calls"]:
            return
        folder = runs_dir() / "local"
        try:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / f"{_started}-{os.getpid()}-{next(_sessions)}.json"
            tmp = path.with_suffix(".tmp")
            tmp.write_text(json.dumps(self.ledger, indent=2))
            tmp.replace(path)
        except OSError:
            pass  # the ledger is a record of the run, never needed for an answer
