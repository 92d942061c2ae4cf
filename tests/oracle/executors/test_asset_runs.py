"""Asset runs (`oracle/executors/asset_checks.py`, `runs_on`): the first attempts of every run go
to the executor as one batch, then the second attempts of those that died, as another; a death
that repeats is `crashes`, one that does not is `flaky`; a runtime without an environment is
`not-run`; an environment that cannot run the worker is raised, never an outcome. The runtimes
and their answers are a test double (named as such); the same runs on real runtimes are in
tests/inventory/test_assets.py and tests/reliability/test_reliability_flaky.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from oracle.catalog.releases import EnvError
from oracle.clients.worker_pool import EnvironmentFault
from oracle.envs.environment import Env
from oracle.executors.answers import Decode
from oracle.executors.asset_checks import Run, runs_on
from oracle.executors.calls import Call, worker_failure

A = TypeVar("A")

ABORT = "error: expected AICode versioned location"


class _DoubleRuntimes:
    """A test double of a session's runtimes: each core's answers, attempt after attempt (`ok`,
    `abort`: the worker died of SIGABRT after printing ABORT, `fault`: its environment cannot
    run it); records every batch of calls it was handed and with what `at_once`."""

    def __init__(
        self,
        script: dict[str, list[str]],
        missing: tuple[str, ...] = (),
        unbuildable: tuple[str, ...] = (),
    ) -> None:
        self.script = {core: list(answers) for core, answers in script.items()}
        self.missing = missing
        self.unbuildable = unbuildable  # planned, but its build fails when a run needs it
        self.batches: list[tuple[list[str], int]] = []

    def env_for_core(self, core: str) -> Env:
        if core in self.missing:
            raise EnvError(f"no environment for coreai-core {core}")
        path = Path(f"/test-double/{core}")
        return Env(core, core, path, path / "bin" / "python", {}, ())

    def ready(self, env: Env) -> Env:
        if env.core in self.unbuildable:
            raise EnvError(f"coreai-torch {env.converter}: the build failed")
        return env

    def pool_of(self, worker: type, log_suffix: str) -> Any:
        raise AssertionError("a run goes through `calls`, never a pool of its own")

    def calls(self, calls: Sequence[Call], decode: Decode[A], at_once: int = 1) -> list[A]:
        self.batches.append(([c.env.core for c in calls], at_once))
        return [decode(self._answer(c)) for c in calls]

    def _answer(self, call: Call) -> dict[str, Any]:
        assert call.faults and call.request["op"] == "run"
        what = self.script[call.env.core].pop(0)
        out = Path(call.request["out"])
        if what == "abort":
            (out / "run.log").write_text(f"{ABORT}, got: loc(fused<...>)\n")
            return worker_failure("asset worker died of SIGABRT (log: x)")
        if what == "fault":
            return {**worker_failure("died"), "environment_fault": "environment fault: broken"}
        # the asset worker's form of a run (`asset_worker.py`): an executed function's files
        function: dict[str, Any] = {"name": "main", "inputs": ["x"], "states": [], "outputs": ["y"]}
        if call.request["execute"]:
            function |= {"inputs_file": str(out / "main.inputs.safetensors")}
            function |= {"outputs_file": str(out / "main.outputs.safetensors")}
        executed = call.request["execute"]
        return {"ok": True, "functions": [function], "executed": executed, "log": str(out)}


def test_first_attempts_go_as_one_batch_then_the_deaths_are_confirmed_as_another(tmp_path):
    runtimes = _DoubleRuntimes(
        {"b1": ["ok"], "b2": ["abort", "abort"], "b3": ["abort", "ok"]}, missing=("b4",)
    )
    runs = [Run(tmp_path / "a.aimodel", c, tmp_path / c, False) for c in ("b1", "b2", "b3", "b4")]
    b1, b2, b3, b4 = runs_on(runs, runtimes, at_once=2)
    assert runtimes.batches == [(["b1", "b2", "b3"], 2), (["b2", "b3"], 2)]
    assert (b1.outcome, b1.stage) == ("loads", "load")
    assert (b2.outcome, b2.signal) == ("crashes", "SIGABRT") and b2.error.startswith(ABORT)
    assert sorted(b2.files) == ["confirm.log", "log"]  # both attempts' logs are evidence
    assert b3.outcome == "flaky" and "loads on the second" in b3.error
    assert (b4.outcome, b4.stage) == ("not-run", "environment")


def test_a_runtime_whose_environment_cannot_be_built_when_its_run_comes_is_not_run(tmp_path):
    """Environments are built when a worker first runs in them: one whose build fails then is
    that runtime's `not-run` (never stored: `environment` is an unstored stage), the others run,
    as when it was built up front."""
    runtimes = _DoubleRuntimes({"b1": ["ok"]}, unbuildable=("b2",))
    runs = [Run(tmp_path / "a.aimodel", c, tmp_path / c, False) for c in ("b1", "b2")]
    b1, b2 = runs_on(runs, runtimes)
    assert runtimes.batches == [(["b1"], 1)]
    assert b1.outcome == "loads"
    assert (b2.outcome, b2.stage) == ("not-run", "environment")
    assert b2.error == "coreai-torch b2: the build failed"


def test_an_environment_that_cannot_run_the_worker_is_raised_never_an_outcome(tmp_path):
    runtimes = _DoubleRuntimes({"b1": ["ok"], "b2": ["fault"]})
    runs = [Run(tmp_path / "a.aimodel", c, tmp_path / c) for c in ("b1", "b2")]
    with pytest.raises(EnvironmentFault, match="environment fault: broken"):
        runs_on(runs, runtimes)
