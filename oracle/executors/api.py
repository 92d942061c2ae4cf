"""The oracle as the services see it: convert a probe under two releases and, when the shipped
programs differ, measure both on one runtime; the result is stored by the driver's store.

Where that work runs is an executor behind this interface: `local.py` (this machine's
pool of per-environment workers, the default) or `ray_cluster.py` (actors on a Ray cluster).
A `Session` holds one `Oracle` (`executors.open_oracle`) and every comparison of the run goes
through it, so the services, the store's keys and the answers are the same whichever runs it.
Tests inject failures with a test double of this interface (`tests/helpers/doubles/`), never through
variables read by shipped code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oracle.catalog.releases import EnvError
from oracle.compare.results import ProbeResult
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env

if TYPE_CHECKING:
    from oracle.executors.asset_checks import Runtimes
    from oracle.executors.calls import Call, Pools
    from oracle.store.load_records import LoadCheck


class ExecutorError(EnvError):
    """The chosen executor cannot run the work (its extra is not installed, its cluster cannot
    be reached, a node runs other code): one line for the user, exit 2."""


@dataclass(frozen=True)
class Comparison:
    """One job: `spec` compared under `old` and `new`, as a command will ask for it.

    `then`: the comparisons its result calls for (a change located step by step), dispatched as
    soon as it lands, so a job waits only on the one it depends on. `optional`: not started
    once a worker of one of its releases failed in this run (the registry sweep's jobs: the
    answer skips such a step, and each job would start a dead worker again); if the answer asks
    for it after all, it is made when asked."""

    spec: ProbeSpec
    old: Env
    new: Env
    then: Callable[[ProbeResult], Sequence[Comparison]] | None = None
    optional: bool = False


@dataclass(frozen=True)
class LoadRequest:
    """One load check a command will ask for (`Oracle.load_check`): the asset `exporter` writes
    for `spec`, on each runtime of `cores`, with the environments and workers `runtimes` gives
    (the session's). In a batch beside the comparisons; it calls for no follow-up."""

    spec: ProbeSpec
    exporter: Env
    cores: tuple[str, ...]
    runtimes: Runtimes = field(compare=False, hash=False, repr=False)

    def final(self) -> Path:
        """Where the check is stored (its folder is named by its key)."""
        # imported when a check is asked for: a warm run reads stored answers without it
        from oracle.executors.asset_checks import final_dir

        return final_dir(self.spec, self.exporter, list(self.cores), self.runtimes)


# What a batch holds: the comparisons and load checks a command will ask for.
Job = Comparison | LoadRequest


# Called by an executor as each result of a batch lands (from any thread): the follow-ups the
# caller wants dispatched now (already filtered against what is stored or known).
Landed = Callable[[Comparison, ProbeResult], Sequence[Comparison]]


def no_follow_ups(_: Comparison, __: ProbeResult) -> Sequence[Comparison]:
    return ()


class Oracle(ABC):
    """Where a session's comparisons run. Results are keyed and stored as
    `oracle/store/result_store.py`
    says, whoever computes them: a rerun reads them back and dispatches nothing."""

    name: str = ""

    @abstractmethod
    def compare(self, spec: ProbeSpec, old: Env, new: Env, use_cache: bool = True) -> ProbeResult:
        """One probe converted under `old` and `new` (and measured when the shipped programs
        differ), from the store when it holds it and `use_cache`."""

    def dispatch(
        self, batch: Sequence[Job], use_cache: bool = True, landed: Landed = no_follow_ups
    ) -> None:
        """Every comparison and load check a command will ask for next, across any release
        pairs, handed over at once: the executor runs them side by side as far as it can (the
        local one up to `--jobs` at once, in the background; a cluster on its nodes) and keeps
        each result for the `compare` or `load_check` that asks for it. An executor that cannot
        (a test double) runs each when asked."""
        del batch, use_cache, landed

    def prefetch(
        self, specs: Sequence[ProbeSpec], old: Env, new: Env, use_cache: bool = True
    ) -> None:
        """One release pair's batch (`dispatch`)."""
        self.dispatch([Comparison(spec, old, new) for spec in specs], use_cache)

    def load_check(
        self,
        spec: ProbeSpec,
        exporter: Env,
        cores: list[str],
        runtimes: Runtimes,
        use_cache: bool = True,
    ) -> LoadCheck:
        """The asset `exporter` writes for `spec`, loaded and run on each runtime of `cores`
        (`oracle/load_check.py`), from the store when it holds it and `use_cache`; made by this
        process with `runtimes` (the session's environments and workers) unless the executor
        makes it elsewhere. Stored by this process either way."""
        # imported when a check is asked for: a warm run reads stored answers without it
        from oracle.executors.asset_checks import check

        return check(spec, exporter, cores, runtimes, use_cache)

    def calls(self, calls: Sequence[Call], pools: Pools, at_once: int = 1) -> list[dict[str, Any]]:
        """Each call's worker answer (`oracle/executors/calls.py`), in order: a batch handed
        over at once. Here by the workers of `pools` (the session's), up to `at_once` at a
        time; a cluster runs them on its nodes, their files travelling with them."""
        # imported when a call is made: a warm run reads stored answers without it
        from oracle.executors.calls import answered_here

        return answered_here(calls, pools, at_once)

    def close(self) -> None:
        """Release what the executor holds (a cluster's actors); the session's workers are the
        session's to close."""
        return None
