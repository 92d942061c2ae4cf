"""A run's converter environments and its pool of workers, shared by every probe of the run.

`affected`, `plan`, `release-notes`, `sweep`, `scan` and `repair` open one session each. An
environment is handed out as the store keys it (its catalog pins: `env`) and built only when a
worker first has to run in it (`ready`, which every pool of the session calls before starting a
worker), so a run whose every result is stored, here or in the remote tier, builds none and
starts no worker. Each environment's worker process is started once and reused, whichever
in-environment script it runs (`probe_worker.py` for probes, `scan_worker.py` for bundles,
`asset_worker.py` for load checks: `pool_of`). Each comparison is made, or read from the store,
once per session: `plan` asks for one instance under one release
pair for several records, their attribution by step and the registry sweep of that step, and
reading a stored result checks the sha256 of every evidence file.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from oracle.catalog.releases import Catalog, EnvError, version_key
from oracle.clients.worker_pool import Pool, Worker, Workers
from oracle.compare.results import ProbeResult
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env, ensure_env, planned_env, ready_env
from oracle.executors.api import Comparison, Job, LoadRequest, Oracle
from oracle.executors.choice import chosen, open_oracle
from oracle.infra.paths import cache_root
from oracle.infra.progress import Progress, Tally
from oracle.store import location as store_location
from oracle.store import result_store as store
from oracle.store import sides
from oracle.store.housekeeping import reclaim
from oracle.store.load_records import load_stored
from oracle.store.result_store import RESULT_FILE

if TYPE_CHECKING:
    from oracle.executors.answers import Decode
    from oracle.executors.calls import Call

A = TypeVar("A")


def _reclaim() -> None:
    """Remove what a run killed with SIGKILL left in the store (its temp folders, its workers'
    temp folders): the next run reclaims it, not only `cache prune`."""
    # a store that cannot be written is said where a result is written, not here
    with suppress(OSError):
        reclaim()


class Session:
    def __init__(
        self,
        catalog: Catalog,
        progress: Progress = lambda _: None,
        log_dir: Path | None = None,
        worker: type[Worker] = Worker,
        log_suffix: str = "worker",
        oracle: Oracle | None = None,
    ) -> None:
        self.catalog = catalog
        self.progress = progress
        self.log_dir = log_dir or cache_root() / "logs"
        # up to --jobs workers per environment: the local executor runs that many comparisons
        # at once (a cluster's driver converts nothing itself)
        here = oracle is None and chosen().name == "local"
        size = chosen().local_jobs if here else 1
        # asset runs a caller may hand over to run here at once (`calls`; a cluster takes all)
        self.runs_at_once = chosen().local_runs if here else 1
        self.pool = Pool(self.log_dir, worker, log_suffix, progress, size)
        # where comparisons run: the executor the run chose (executors.choose), or a test's
        self.oracle = oracle if oracle is not None else open_oracle(self.pool, progress)
        self._pools: dict[type[Worker], Pool] = {}
        self._envs: dict[str, Env] = {}
        # release -> its environment as the store keys it, planned once per run: a warm plan
        # asks about a thousand times, and one object per release keeps each result's path
        # computed once (`result_store.result_dir` knows its arguments by identity)
        self._planned_envs: dict[str, Env] = {}
        self._core_envs: dict[str, Env] = {}
        # an environment that could not be had, told again without a second build or lock wait
        self._env_errors: dict[str, EnvError] = {}
        # result folder -> (result, made in this session): see `compare`
        self._results: dict[Path, tuple[ProbeResult, bool]] = {}
        # converter release -> the first failure of one of its workers (died, timed out) in
        # this session: a caller may choose not to start more conversions there
        self.worker_failures: dict[str, str] = {}
        # environment folder name -> its release, for every environment `env` handed out:
        # built when a worker first runs in it (`ready`, the pools' `prepare`)
        self._planned: dict[str, str] = {}
        # environments being built in the background (`_build_ahead`), and the thread pool
        self._building: dict[str, Future[Env]] = {}
        self._builders: ThreadPoolExecutor | None = None
        # workers started ahead, each in a thread of its own as soon as its environment is
        # built: never queued behind a build, nor holding a build's thread (and so the hand-over
        # of its environment, `ready`) while it imports torch and the converter
        self._starters: ThreadPoolExecutor | None = None
        self._started: set[str] = set()  # environments whose worker was started ahead
        self._guard = threading.Lock()
        self.pool.prepare = self.ready
        _reclaim()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, kind: type[BaseException] | None, *exc: object) -> None:
        if kind is not None and issubclass(kind, KeyboardInterrupt | SystemExit):
            # interrupted: the jobs running in the background are stopped with their workers
            # and their fetches from the remote tier, not waited for (nothing they finish is
            # stored: `executor_local`)
            store_location.stop()
            self.pool.stop()
        self.close()

    def close(self) -> None:
        if self._builders is not None:
            # a build in progress finishes (its environment is usable next time); none starts
            self._builders.shutdown(wait=True, cancel_futures=True)
            self._builders = None
        if self._starters is not None:
            # a worker still starting is waited for, then closed with the pool
            self._starters.shutdown(wait=True, cancel_futures=True)
            self._starters = None
        self.oracle.close()
        self.pool.close()
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()

    def calls(self, calls: Sequence[Call], decode: Decode[A], at_once: int = 1) -> list[A]:
        """Worker requests that are not comparisons (a whole program converted, an asset run, a
        cut), through the run's executor (`Oracle.calls`): here in this session's workers, up
        to `at_once` at a time, or on a cluster's nodes. Each answer is read here, once, by
        `decode` (its kind's, `oracle/executors/answers.py`): the executors carry the wire."""
        return [decode(answer) for answer in self.oracle.calls(calls, self, at_once)]

    def pool_of(self, worker: type[Worker], log_suffix: str) -> Pool:
        """Workers running another in-environment script (the asset worker beside the probe
        worker), in this session's environments; closed with the session."""
        if worker is self.pool.worker_type:
            return self.pool
        with self._guard:  # a load check of a batch asks from a job thread
            if worker not in self._pools:
                self._pools[worker] = Pool(self.log_dir, worker, log_suffix, self.progress)
                self._pools[worker].prepare = self.ready
            return self._pools[worker]

    def _build_ahead(self, envs: Iterable[Env]) -> None:
        """Comparisons or load checks are not in the store: build the environments they run in
        that are not built yet (and only those), side by side in the background, each worker
        started once its environment is, so that importing torch and the converter overlaps the
        builds and the conversions still to come."""
        with self._guard:
            missing = [
                version
                for version in dict.fromkeys(
                    self._planned[env.name] for env in envs if env.name in self._planned
                )
                if version not in self._envs
                and version not in self._building
                and version not in self._env_errors
            ]
            if not missing:
                return
            if self._builders is None:
                self._builders = ThreadPoolExecutor(max_workers=4, thread_name_prefix="env-build")
            for version in missing:
                self._building[version] = self._builders.submit(self._build, version)

    def _build(self, version: str) -> Env:
        env = ensure_env(version, self.catalog, self.progress)
        with self._guard:  # had before its worker starts: that worker's `ready` reads it here
            self._envs.setdefault(version, env)
            if env.name in self._started or self.oracle.name != "local":
                return env
            self._started.add(env.name)
            if self._starters is None:
                # one thread per release the catalog knows: a start never waits for another
                self._starters = ThreadPoolExecutor(
                    max_workers=max(1, len(self.catalog.releases)),
                    thread_name_prefix="worker-start",
                )
            self._starters.submit(self._start_worker, env)
        return env

    def _start_worker(self, env: Env) -> None:
        # a failure here is met again, and told, by the comparison that needs this worker
        with suppress(Exception):
            self.pool.worker(env).call({"op": "hello"})

    def env(self, version: str) -> Env:
        """The environment of one converter release as the store keys it, never built here: the
        built one, else the one the catalog's pins plan (`planned_env`). It is built when a
        worker first has to run in it (`ready`), so an answer whose every result is stored
        builds nothing."""
        if version in self._env_errors:
            raise self._env_errors[version]
        if version in self._envs:
            return self._envs[version]
        try:
            return self._planned_env(version)
        except EnvError as exc:
            self._env_errors[version] = exc
            raise

    def _planned_env(self, version: str) -> Env:
        with self._guard:
            known = self._planned_envs.get(version)
        if known is not None:
            return known
        env = planned_env(version, self.catalog)
        with self._guard:
            self._planned.setdefault(env.name, version)
            return self._planned_envs.setdefault(version, env)

    def ready(self, env: Env) -> Env:
        """`env` built (or waited for while `_build_ahead` builds it) and checked as a reused
        one is (re-pointed at the store's shared torch): what a worker runs in. An environment
        that is not a catalog release's (one built from source, a measurement's) is as given."""
        with self._guard:
            version = self._planned.get(env.name)
        if version is None:
            return env
        if version in self._env_errors:
            raise self._env_errors[version]
        if version not in self._envs:
            try:
                with self._guard:
                    building = self._building.get(version)
                built = (
                    building.result()
                    if building is not None
                    else ensure_env(version, self.catalog, self.progress)
                )
            except EnvError as exc:
                self._env_errors[version] = exc
                raise
            with self._guard:
                self._envs[version] = built
        return self._envs[version]

    def env_for_core(self, core: str) -> Env:
        """An environment whose coreai-core is `core`: a ready one (newest converter first),
        else the newest such release's (built when a worker first runs in it)."""
        if core not in self._core_envs:
            releases = sorted(
                (v for v, r in self.catalog.releases.items() if r.core == core),
                key=version_key,
                reverse=True,
            )
            ready = next(
                (v for v in releases if ready_env(v, self.catalog) is not None), releases[0]
            )
            self._core_envs[core] = self.env(ready)
        return self._core_envs[core]

    def worker(self, env: Env) -> Workers:
        return self.pool.worker(env)

    def compare(self, spec: ProbeSpec, old: Env, new: Env, use_cache: bool = True) -> ProbeResult:
        """One probe under two environments, once per session. Without the cache (`--no-cache`)
        a result is still made once per run: a later ask takes the fresh one, never the one the
        store held before."""
        key = store.result_dir(spec, old, new)
        known = self._results.get(key)
        if known is not None and (use_cache or known[1]):
            return known[0]
        if (
            not use_cache
            or not (key / RESULT_FILE).exists()
            and store.stored(key, store.load_result) is None
        ):
            # nothing to read, here or (taken in now) from the remote tier: converting starts
            self._build_ahead((old, new))
        result = self.oracle.compare(spec, old, new, use_cache=use_cache)
        self._results[key] = (result, not result.cached)
        self.progress(Tally(Tally.STORED if result.cached else Tally.CONVERTED))
        for side in (result.old, result.new):
            if not side.ok and side.stage == "worker":
                self.worker_failures.setdefault(side.converter, side.error)
        return result

    def had(self, version: str) -> Env | None:
        """The environment of a catalog release as the store keys it (`env`), building nothing;
        None for a release the catalog lacks or whose pins cannot be planned. A release whose
        build failed in this run is still had: its key needs the pins, not the build, so what
        the store holds for it is read (a reader of stored results never meets the failure a
        conversion already reported)."""
        if version not in self.catalog.releases:
            return None
        if version in self._envs:
            return self._envs[version]
        try:
            return self._planned_env(version)
        except EnvError:
            return None

    def stored(self, spec: ProbeSpec, old: Env, new: Env) -> ProbeResult | None:
        """One comparison as this session or the store holds it, None when neither does:
        nothing is converted (a caller that only reads what another command measured)."""
        key = store.result_dir(spec, old, new)
        known = self._results.get(key)
        if known is not None:
            return known[0]
        result = store.stored(key, store.load_result)
        if result is None:
            return None
        self._results[key] = (result, False)
        self.progress(Tally(Tally.STORED))
        return result

    def stored_all(self, asks: Sequence[tuple[ProbeSpec, Env, Env]]) -> list[ProbeResult | None]:
        """`stored` for each comparison of `asks`, in order: those neither this session nor the
        store holds are first taken in from the remote tier together (`store.stored_all`), not
        one after the other as each is read."""
        keys = [store.result_dir(spec, old, new) for spec, old, new in asks]
        store.stored_all((key, store.load_result) for key in keys if key not in self._results)
        return [self.stored(spec, old, new) for spec, old, new in asks]

    def _taken_in(self, jobs: list[Job], use_cache: bool) -> list[Job]:
        """The jobs still wanted once what the remote tier holds of them is taken in, together
        (`store.stored_all`): a job then reads its result from this store, and only a job that
        must convert (or whose stored result calls for follow-ups) is left to run. The
        follow-ups a result so stored calls for are taken in with them, wave after wave, rather
        than a few at a time as each result lands in a job."""
        if not use_cache or store_location.remote() is None:
            return jobs
        frontier, expanded = jobs, set[Path]()
        while frontier:
            store.stored_all(
                (c.final(), load_stored)
                if isinstance(c, LoadRequest)
                else (store.result_dir(c.spec, c.old, c.new), store.load_result)
                for c in frontier
            )
            # a comparison the tier lacks is made over stored sides: those it holds (another
            # comparison's, another driver's) are taken in together too
            store.stored_all(
                (sides.side_dir(c.spec, env), sides.load_side)
                for c in frontier
                if isinstance(c, Comparison)
                and not (store.result_dir(c.spec, c.old, c.new) / RESULT_FILE).exists()
                for env in (c.old, c.new)
            )
            later: list[Job] = []
            for c in frontier:
                if not isinstance(c, Comparison) or c.then is None:
                    continue
                key = store.result_dir(c.spec, c.old, c.new)
                if key in expanded:
                    continue
                expanded.add(key)
                result = store.load_result(key)
                with suppress(Exception):  # a follow-up not had here is made when asked
                    later += c.then(result) if result is not None else ()
            frontier = self._wanted(later, use_cache)
        return self._wanted(jobs, use_cache)

    def prefetch(
        self, specs: Sequence[ProbeSpec], old: Env, new: Env, use_cache: bool = True
    ) -> None:
        """One release pair's comparisons the caller asks for next (`dispatch`)."""
        self.dispatch([Comparison(spec, old, new) for spec in specs], use_cache)

    def _wanted(self, batch: Iterable[Job], use_cache: bool) -> list[Job]:
        """The comparisons and load checks not yet had, each once: none this session made or
        read, none stored (unless its result calls for follow-ups: it is read in the batch, so
        that they are dispatched; without the cache, every one)."""
        out: dict[Path, Job] = {}
        for c in batch:
            if isinstance(c, LoadRequest):
                final = c.final()
                if final not in out and not (use_cache and (final / RESULT_FILE).exists()):
                    out[final] = c
                continue
            key = store.result_dir(c.spec, c.old, c.new)
            known = self._results.get(key)
            if known is not None and (use_cache or known[1]):
                continue
            if key in out:  # asked for twice (a record's probe, a sweep's): one job, both asks
                first = out[key]
                assert isinstance(first, Comparison)
                out[key] = _merged(first, c)
                continue
            if use_cache and c.then is None and (key / RESULT_FILE).exists():
                continue
            out[key] = c
        return list(out.values())

    def dispatch(self, batch: Iterable[Job], use_cache: bool = True) -> None:
        """Every comparison and load check the caller will ask for next, across release pairs,
        planned before any is asked: deduplicated by key against this session and the store,
        and handed to the executor at once, which runs them side by side (the local one up to
        `--jobs`, a cluster on its nodes) while the caller goes on to ask for each in turn. A
        job's follow-ups (`Comparison.then`) are dispatched as its result lands."""
        wanted = self._taken_in(self._wanted(batch, use_cache), use_cache)
        if not wanted:
            return
        if store_location.remote() is None:
            # not in this store, so made here (with a remote tier, a job fetches what the tier
            # holds and builds what it then lacks only when it converts: `ready`)
            self._build_ahead(
                env
                for c in wanted
                # a stored comparison wanted for its follow-ups is read, not converted
                if isinstance(c, LoadRequest)  # only the ones not stored are wanted
                or not use_cache
                or not (store.result_dir(c.spec, c.old, c.new) / RESULT_FILE).exists()
                for env in _envs_of(c)
            )

        def landed(c: Comparison, result: ProbeResult) -> Sequence[Comparison]:
            if c.then is None:
                return ()
            follow = self._taken_in(self._wanted(c.then(result), use_cache), use_cache)
            return [m for m in follow if isinstance(m, Comparison)]

        self.oracle.dispatch(wanted, use_cache, landed)


def _envs_of(job: Job) -> tuple[Env, ...]:
    """The environments a job converts or runs in: a comparison's two sides, a load check's
    exporter (its runtimes' are built when their workers start)."""
    if isinstance(job, LoadRequest):
        return (job.exporter,)
    return (job.old, job.new)


def _merged(a: Comparison, b: Comparison) -> Comparison:
    """One job for two asks of the same comparison: the follow-ups of both, and optional only
    if both are."""
    thens = [t for t in (a.then, b.then) if t is not None]

    def then(result: ProbeResult) -> Sequence[Comparison]:
        return [more for t in thens for more in t(result)]

    return replace(a, then=then if thens else None, optional=a.optional and b.optional)


@contextmanager
def opened(
    session: Session | None, catalog: Catalog, progress: Progress = lambda _: None
) -> Iterator[Session]:
    """The caller's session (its environments, workers and results are shared), else a new one,
    closed on exit."""
    if session is not None:
        yield session
        return
    with Session(catalog, progress) as own:
        yield own
