"""Which executor a run's sessions use, and how many comparisons the local one runs at once:
chosen once by the command line (`--executor`, `INVENTORY_EXECUTOR`; `--jobs`,
`INVENTORY_JOBS`), read by every `Session` the run opens.

`local` never imports a cluster engine; `ray` is imported only when chosen, and is checked
when chosen (the address's form and `--ray-address` only with `--executor ray` before Ray is
imported; then its extra installed, and a Ray GCS answering at the address within bounds),
before any work starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from oracle.clients.worker_pool import Pool
from oracle.executors.api import ExecutorError, Oracle
from oracle.infra.progress import Progress

EXECUTORS = ("local", "ray")
# Far above any machine's cores: a typo of 1000 would start a thousand torch processes per
# environment (each holds its own memory), so it is refused rather than tried.
MAX_JOBS = 256


@dataclass(frozen=True)
class ExecutorChoice:
    name: str = "local"
    address: str | None = None  # the Ray cluster (`--ray-address`, RAY_ADDRESS)
    # comparisons the local executor runs at once (None: the cores this process may use)
    jobs: int | None = None

    @property
    def local_jobs(self) -> int:
        from oracle.executors.local import default_jobs

        return self.jobs if self.jobs is not None else default_jobs()

    @property
    def local_runs(self) -> int:
        """Asset runs (`scan`, `repair`) the local executor makes at once: --jobs, else every
        core this process may use, since a run is one process where a comparison is two
        (measured: 5 bundles' loads in 0.67 of the time at 2 as at 1, docs/measurements.md)."""
        from oracle.executors.local import usable_cores

        return self.jobs if self.jobs is not None else usable_cores()


_chosen = ExecutorChoice()


# Where an executor says what happened to the run's machinery (a cluster node lost): one line
# for the user whatever the progress setting; never part of the answer's document.
def _silent(_: str) -> None:
    pass


_notice: Progress = _silent


def check_jobs(jobs: int | None) -> None:
    """--jobs is a whole number from 1 to MAX_JOBS (None: the default); ExecutorError, one line,
    otherwise."""
    if jobs is not None and not 1 <= jobs <= MAX_JOBS:
        raise ExecutorError(
            f"--jobs must be a whole number from 1 to {MAX_JOBS} (comparisons "
            f"run at once), not {jobs}"
        )


def choose(
    name: str, address: str | None = None, notice: Progress | None = None, jobs: int | None = None
) -> ExecutorChoice:
    """Check and keep the executor for the rest of the process; ExecutorError (one line) if it
    cannot be used."""
    global _chosen, _notice
    if notice is not None:
        _notice = notice
    if name not in EXECUTORS:
        raise ExecutorError(f"--executor must be one of {', '.join(EXECUTORS)}, not {name!r}")
    check_jobs(jobs)
    from oracle.executors.ray_address import given

    given(address, name)  # its form and its executor, before Ray is imported or asked
    if name == "ray":
        from oracle.executors.ray_cluster import connect

        connect(address)
    _chosen = ExecutorChoice(name, address, jobs)
    return _chosen


def chosen() -> ExecutorChoice:
    return _chosen


def open_oracle(pool: Pool, progress: Progress) -> Oracle:
    """The chosen executor's oracle for one session (the local one uses the session's pool)."""
    if _chosen.name == "ray":
        from oracle.executors.ray_cluster import RayOracle

        return RayOracle(pool, progress, _chosen.address, _notice)
    from oracle.executors.local import LocalOracle

    return LocalOracle(pool, _chosen.local_jobs)
