"""A run's converter environments and its pool of workers, shared by every probe of the run.

`affected`, `plan`, `release-notes`, `sweep`, `scan` and `repair` open one session each: an
environment is found (or built) once, when first needed, and each environment's worker process is
started once and reused, whichever in-environment script it runs (`worker.py` for probes,
`scan_worker.py` for bundles, `asset_worker.py` for load checks: `pool_of`).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from oracle.client import Pool, Worker
from oracle.compare import compare
from oracle.envs import Catalog, Env, ensure_env, ready_env, version_key
from oracle.paths import cache_root
from oracle.results import ProbeResult
from oracle.spec import ProbeSpec

Progress = Callable[[str], None]


class Session:
    def __init__(self, catalog: Catalog, progress: Progress = lambda _: None,
                 log_dir: Path | None = None, worker: type[Worker] = Worker,
                 log_suffix: str = "worker") -> None:
        self.catalog = catalog
        self.progress = progress
        self.log_dir = log_dir or cache_root() / "logs"
        self.pool = Pool(self.log_dir, worker, log_suffix)
        self._pools: dict[type[Worker], Pool] = {}
        self._envs: dict[str, Env] = {}
        self._core_envs: dict[str, Env] = {}

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
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
        if version not in self._envs:
            self._envs[version] = ensure_env(version, self.catalog, self.progress)
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
        return compare(spec, old, new, self.pool, use_cache=use_cache)
