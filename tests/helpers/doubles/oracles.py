"""Test doubles of the `Oracle` interface (oracle/executors/api.py): injected into a `Session`
(`Session(catalog, oracle=...)`) to give failures no real run can be made to give on demand,
instead of a variable read by shipped code."""

from __future__ import annotations

from collections.abc import Sequence

from oracle.compare.results import Identity, ProbeResult, Side
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.executors.api import Job, Landed, Oracle, no_follow_ups
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


class RunsNothing(Oracle):
    """Keeps every batch a session hands over and every comparison it asks for, and runs none:
    what a command would have had converted (a comparison asked for is a RuntimeError)."""

    name = "runs-nothing (test double)"

    def __init__(self) -> None:
        self.dispatched: list[list[Job]] = []

    def compare(self, spec: ProbeSpec, old: Env, new: Env, use_cache: bool = True) -> ProbeResult:
        raise RuntimeError(f"{spec.key()}: asked to convert (test double: nothing runs here)")

    def dispatch(
        self, batch: Sequence[Job], use_cache: bool = True, landed: Landed = no_follow_ups
    ) -> None:
        self.dispatched.append(list(batch))
