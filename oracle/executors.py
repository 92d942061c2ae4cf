"""Which executor a run's sessions use: chosen once by the command line (`--executor`,
`INVENTORY_EXECUTOR`), read by every `Session` the run opens.

`local` never imports a cluster engine; `ray` is imported only when chosen, and is checked
when chosen (its extra installed, its cluster reachable), before any work starts.
"""

from __future__ import annotations

from dataclasses import dataclass

from oracle.client import Pool
from oracle.oracle_api import ExecutorError, Oracle
from oracle.progress import Progress

EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class ExecutorChoice:
    name: str = "local"
    address: str | None = None  # the Ray cluster (`--ray-address`, RAY_ADDRESS)


_chosen = ExecutorChoice()
# Where an executor says what happened to the run's machinery (a cluster node lost): one line
# for the user whatever the progress setting; never part of the answer's document.
def _silent(_: str) -> None:
    pass


_notice: Progress = _silent


def choose(name: str, address: str | None = None,
           notice: Progress | None = None) -> ExecutorChoice:
    """Check and keep the executor for the rest of the process; ExecutorError (one line) if it
    cannot be used."""
    global _chosen, _notice
    if notice is not None:
        _notice = notice
    if name not in EXECUTORS:
        raise ExecutorError(f"--executor must be one of {', '.join(EXECUTORS)}, not {name!r}")
    if name == "ray":
        from oracle.executor_ray import connect

        connect(address)
    _chosen = ExecutorChoice(name, address)
    return _chosen


def chosen() -> ExecutorChoice:
    return _chosen


def open_oracle(pool: Pool, progress: Progress) -> Oracle:
    """The chosen executor's oracle for one session (the local one uses the session's pool)."""
    if _chosen.name == "ray":
        from oracle.executor_ray import RayOracle

        return RayOracle(pool, progress, _chosen.address, _notice)
    from oracle.executor_local import LocalOracle

    return LocalOracle(pool)
