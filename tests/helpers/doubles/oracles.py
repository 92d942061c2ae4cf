"""Test doubles of the `Oracle` interface (oracle/executors/api.py): injected into a `Session`
(`Session(catalog, oracle=...)`) to give failures no real run can be made to give on demand,
instead of a variable read by shipped code."""

from __future__ import annotations

from oracle.compare.results import Identity, ProbeResult, Side
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.executors.api import Oracle
from oracle.store import result_store as store


class DyingWorkers(Oracle):
    """Every comparison ends as if the old side's worker died mid-conversion; nothing runs."""

    name = "dying-workers (test double)"

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.closed = False

    def compare(self, spec: ProbeSpec, old: Env, new: Env, use_cache: bool = True) -> ProbeResult:
        self.asked.append(spec.key())
        dead = Side(
            old.converter,
            store.env_identity(old),
            False,
            "worker",
            f"{old.name} worker died of SIGKILL (test double)",
        )
        alive = Side(new.converter, store.env_identity(new), True)
        return ProbeResult(
            spec, dead, alive, Identity.OLD_CANNOT_CONVERT, Identity.OLD_CANNOT_CONVERT, None, ""
        )

    def close(self) -> None:
        self.closed = True
