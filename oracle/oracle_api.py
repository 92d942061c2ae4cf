"""The oracle as the services see it: convert a probe under two releases and, when the shipped
programs differ, measure both on one runtime; the result is stored by the driver's store.

Where that work runs is an executor behind this interface: `executor_local.py` (this machine's
pool of per-environment workers, the default) or `executor_ray.py` (actors on a Ray cluster).
A `Session` holds one `Oracle` (`executors.open_oracle`) and every comparison of the run goes
through it, so the services, the store's keys and the answers are the same whichever runs it.
Tests inject failures with a test double of this interface (`tests/doubles/`), never through
variables read by shipped code.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from oracle.envs import Env
from oracle.releases import EnvError
from oracle.results import ProbeResult
from oracle.spec import ProbeSpec


class ExecutorError(EnvError):
    """The chosen executor cannot run the work (its extra is not installed, its cluster cannot
    be reached, a node runs other code): one line for the user, exit 2."""


class Oracle(ABC):
    """Where a session's comparisons run. Results are keyed and stored as `oracle/store.py`
    says, whoever computes them: a rerun reads them back and dispatches nothing."""

    name: str = ""

    @abstractmethod
    def compare(self, spec: ProbeSpec, old: Env, new: Env, use_cache: bool = True) -> ProbeResult:
        """One probe converted under `old` and `new` (and measured when the shipped programs
        differ), from the store when it holds it and `use_cache`."""

    def prefetch(self, specs: Sequence[ProbeSpec], old: Env, new: Env,
                 use_cache: bool = True) -> None:
        """A batch the caller will ask for next, one `compare` each: an executor that can run
        several at once starts them all now. The local executor runs each when asked."""
        del specs, old, new, use_cache

    def close(self) -> None:
        """Release what the executor holds (a cluster's actors); the session's workers are the
        session's to close."""
        return None
