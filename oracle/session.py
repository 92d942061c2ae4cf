"""A run's converter environments and its pool of workers, shared by every probe of the run.

`affected`, `plan`, `release-notes`, `sweep`, `scan` and `repair` open one session each: an
environment is found (or built) once, when first needed, and each environment's worker process is
started once and reused, whichever in-environment script it runs (`worker.py` for probes,
`scan_worker.py` for bundles, `asset_worker.py` for load checks: `pool_of`). Each comparison is
made, or read from the store, once per session: `plan` asks for one instance under one release
pair for several records, their attribution by step and the registry sweep of that step, and
reading a stored result checks the sha256 of every evidence file.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from oracle import store
from oracle.cache import reclaim
from oracle.client import Pool, Worker
from oracle.envs import Env, ensure_env, ready_env
from oracle.executors import open_oracle
from oracle.oracle_api import Oracle
from oracle.paths import cache_root
from oracle.progress import Progress
from oracle.releases import Catalog, EnvError, version_key
from oracle.results import ProbeResult
from oracle.spec import ProbeSpec


def _reclaim() -> None:
    """Remove what a run killed with SIGKILL left in the store (its temp folders, its workers'
    temp folders): the next run reclaims it, not only `cache prune`."""
    # a store that cannot be written is said where a result is written, not here
    with suppress(OSError):
        reclaim()


class Session:
    def __init__(self, catalog: Catalog, progress: Progress = lambda _: None,
                 log_dir: Path | None = None, worker: type[Worker] = Worker,
                 log_suffix: str = "worker", oracle: Oracle | None = None) -> None:
        self.catalog = catalog
        self.progress = progress
        self.log_dir = log_dir or cache_root() / "logs"
        self.pool = Pool(self.log_dir, worker, log_suffix)
        # where comparisons run: the executor the run chose (executors.choose), or a test's
        self.oracle = oracle if oracle is not None else open_oracle(self.pool, progress)
        self._pools: dict[type[Worker], Pool] = {}
        self._envs: dict[str, Env] = {}
        self._core_envs: dict[str, Env] = {}
        # an environment that could not be had, told again without a second build or lock wait
        self._env_errors: dict[str, EnvError] = {}
        # result folder -> (result, made in this session): see `compare`
        self._results: dict[Path, tuple[ProbeResult, bool]] = {}
        # converter release -> the first failure of one of its workers (died, timed out) in
        # this session: a caller may choose not to start more conversions there
        self.worker_failures: dict[str, str] = {}
        _reclaim()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.oracle.close()
        self.pool.close()
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()

    def pool_of(self, worker: type[Worker], log_suffix: str) -> Pool:
        """Workers running another in-environment script (the asset worker beside the probe
        worker), in this session's environments; closed with the session."""
        if worker is self.pool.worker_type:
            return self.pool
        if worker not in self._pools:
            self._pools[worker] = Pool(self.log_dir, worker, log_suffix)
        return self._pools[worker]

    def env(self, version: str) -> Env:
        """The environment of one converter release, built on first use."""
        if version in self._env_errors:
            raise self._env_errors[version]
        if version not in self._envs:
            try:
                self._envs[version] = ensure_env(version, self.catalog, self.progress)
            except EnvError as exc:
                self._env_errors[version] = exc
                raise
        return self._envs[version]

    def env_for_core(self, core: str) -> Env:
        """An environment whose coreai-core is `core`: a ready one (newest converter first),
        else the newest such release's, built."""
        if core not in self._core_envs:
            releases = sorted((v for v, r in self.catalog.releases.items() if r.core == core),
                              key=version_key, reverse=True)
            ready = next((v for v in releases if ready_env(v) is not None), releases[0])
            self._core_envs[core] = self.env(ready)  # through ensure_env: re-pointed if moved
        return self._core_envs[core]

    def worker(self, env: Env) -> Worker:
        return self.pool.worker(env)

    def compare(self, spec: ProbeSpec, old: Env, new: Env, use_cache: bool = True) -> ProbeResult:
        """One probe under two environments, once per session. Without the cache (`--no-cache`)
        a result is still made once per run: a later ask takes the fresh one, never the one the
        store held before."""
        key = store.result_dir(spec, old, new)
        known = self._results.get(key)
        if known is not None and (use_cache or known[1]):
            return known[0]
        result = self.oracle.compare(spec, old, new, use_cache=use_cache)
        self._results[key] = (result, not result.cached)
        for side in (result.old, result.new):
            if not side.ok and side.stage == "worker":
                self.worker_failures.setdefault(side.converter, side.error)
        return result

    def prefetch(self, specs: Sequence[ProbeSpec], old: Env, new: Env,
                 use_cache: bool = True) -> None:
        """Comparisons the caller asks for next, one by one: an executor that runs several at
        once (a cluster) starts them all now; the local one runs each when asked."""
        self.oracle.prefetch(specs, old, new, use_cache)


@contextmanager
def opened(session: Session | None, catalog: Catalog,
           progress: Progress = lambda _: None) -> Iterator[Session]:
    """The caller's session (its environments, workers and results are shared), else a new one,
    closed on exit."""
    if session is not None:
        yield session
        return
    with Session(catalog, progress) as own:
        yield own
