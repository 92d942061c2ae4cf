"""The load check: does an asset a converter release writes load and run on each runtime?

Question 2 of a re-export decision (DESIGN.md, "Two questions, not one"). The exporter converts
the asset probe (`asset_probe.py`: nested modules, shaped like the bundle: its dtype and
pipeline) and saves the asset the way a recipe does; then each runtime loads it and runs every
function on seeded inputs, each in a contained subprocess (`asset_worker.py`). The outcome per
runtime is `loads`, `fails-to-load` (with the first error line the runtime printed) or `crashes`
(with the signal, and the first error line); `not-run` when the check itself could not get that
far (the exporter could not convert the probe, no environment for the runtime).

A runtime that dies or does not answer is a claim about the world, so it is confirmed before it
is believed: the run is tried again in a fresh process (`confirm/` beside the first attempt's
files). Only a death that repeats is `crashes` (or `fails-to-load` at stage `worker`); one that
does not repeat, or an abort after the runtime wrote its outputs, is `flaky` with both attempts'
evidence: no answer about the asset, inconclusive, and a check holding one is never stored
(coreai-core 1.0.0b1 once aborted, exit 134 after writing its outputs, on an asset that loaded
cleanly in the next 20 runs).

Where a check is made is the executor's choice (`Oracle.load_check`): the local one makes it
in this process, a Ray cluster on one of its nodes (`executors/asset_checks.py` makes it from
whatever gives it the runtimes' environments and workers). Either way this process stores it like
every other result: built in a (locked) temp folder and renamed into place, with a sha256 of every
file and of its own record in `result.json`, keyed by the spec, the exporter's and each runtime's
exact packages and this code. Nothing in it is a reason for the tool to stop: a crash is an
outcome. An environment that cannot run a worker is not an outcome: it is raised
(`EnvironmentFault`) and nothing is stored; a check with a runtime whose environment could not be
built (or that no node of a cluster could run) is answered but not stored either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.executors.asset_checks import (
    CONFIRM,
    Run,
    Runtimes,
    abbreviate,
    first_error,
    run_on,
    runs_on,
)
from oracle.store.load_records import LoadCheck, RuntimeOutcome, check_dir, load_stored

if TYPE_CHECKING:
    from oracle.session import Session

__all__ = [
    "CONFIRM",
    "LoadCheck",
    "Run",
    "RuntimeOutcome",
    "Runtimes",
    "abbreviate",
    "check_dir",
    "first_error",
    "load_check",
    "load_stored",
    "run_on",
    "runs_on",
]


def load_check(
    spec: ProbeSpec, exporter: Env, cores: list[str], session: Session, use_cache: bool = True
) -> LoadCheck:
    """The asset `exporter` writes for `spec`, loaded and run on each runtime of `cores`, made
    where the session's executor makes its work (from the store when it holds it)."""
    return session.oracle.load_check(spec, exporter, cores, session, use_cache)
