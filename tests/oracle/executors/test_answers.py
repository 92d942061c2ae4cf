"""A worker's answer read once where it reaches its caller (`oracle/executors/answers.py`): each
kind's decode gives the typed fields its callers read and keeps the worker's own form; an answer
not in its kind's form is one `AnswerError` naming the worker and the field, never a KeyError
where the value is first used. The answers below are in the forms the worker scripts write
(`oracle/workers/`); the same decodes read the real workers' answers in the slow verify, scan,
repair and load-check tests."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from oracle.envs.environment import Env
from oracle.executors.answers import (
    AnswerError,
    AssetRun,
    BundleRead,
    CutAnswer,
    Decode,
    ProgramAnswer,
    Resaved,
)
from oracle.executors.asset_checks import Run, runs_on
from oracle.executors.calls import Call, worker_failure

A = TypeVar("A")

FILES = ("emitted", "emitted_located", "shipped", "located", "nodes", "asset", "log")


def _converted() -> dict[str, Any]:
    """`program_worker.convert_program`'s answer, with the seconds `calls.answered` adds."""
    return {
        "ok": True,
        "emitted_is_optimized": False,
        "emitted_before_rewrite": False,
        "seconds": {"decompose": 1.5, "convert": 2.0},
        "peak_mb": 812.5,
        "files": {name: f"/out/{name}" for name in FILES},
        "wall_seconds": 4.25,
    }


def _read() -> dict[str, Any]:
    """`scan_worker.read`'s answer."""
    return {
        "ok": True,
        "versions": {"coreai-core": "1.0.0b2"},
        "metadata": {"producer": "coreai-torch 0.4.2", "custom": {}},
        "graphs": [{"name": "main", "public": True}],
        "weights": {
            "fingerprint": "sha256:00",
            "constants": 3,
            "bytes": 96,
            "dtypes": {"f32": 3},
            "inline": 3,
            "resources": 0,
            "unresolved_resources": 0,
        },
    }


def test_a_conversion_is_read_into_its_files_and_keeps_the_worker_s_own_form():
    wire = _converted()
    answer = ProgramAnswer.decode(wire)
    assert answer.envelope.ok and answer.envelope.wall_seconds == 4.25
    assert answer.files is not None and answer.files.shipped == "/out/shipped"
    assert answer.wire == _converted()  # what a side stores, as the worker wrote it


def test_a_failure_and_a_dead_worker_are_envelopes_with_their_stage_and_error():
    failed = ProgramAnswer.decode({"ok": False, "stage": "convert", "error": "E: x", "trace": "t"})
    assert (failed.envelope.stage, failed.envelope.error, failed.files) == ("convert", "E: x", None)
    assert not failed.envelope.died
    dead = AssetRun.decode(worker_failure("asset worker died of SIGABRT"))
    assert dead.envelope.died and dead.functions == () and dead.log is None
    assert dead.envelope.wall_seconds is None  # never ran here (a job no node could run)


@pytest.mark.parametrize(
    ("decode", "wire", "message"),
    [
        # a field missing, at the top and inside an object
        (ProgramAnswer.decode, {"ok": True}, "the program worker's answer: no field 'emitted_is"),
        (
            ProgramAnswer.decode,
            {**_converted(), "files": {"emitted": "/out/e"}},
            "the program worker's answer, files: no field 'emitted_located'",
        ),
        # a field of another type; a JSON boolean is never a number
        (
            ProgramAnswer.decode,
            {**_converted(), "files": ["/out/shipped"]},
            "the program worker's answer: field 'files' is array, expected object",
        ),
        (
            ProgramAnswer.decode,
            {"ok": "yes"},
            "the program worker's answer: field 'ok' is string, expected boolean",
        ),
        (
            BundleRead.decode,
            {**_read(), "weights": {**_read()["weights"], "constants": True}},
            "the scan worker's read, weights: field 'constants' is boolean, expected number",
        ),
        # a failure without its stage, and an answer that is not an object at all
        (AssetRun.decode, {"ok": False, "error": "E"}, "the asset worker's run: no field 'stage'"),
        (CutAnswer.decode, ["ok"], "the cut worker's answer: is array, expected object"),
        # an item of an array
        (
            CutAnswer.decode,
            {"ok": True, "cuts": [{"id": "r0", "ok": True, "files": {}}, {"id": "r1", "ok": 1}]},
            "the cut worker's answer, cuts[1]: field 'ok' is number, expected boolean",
        ),
        (
            AssetRun.decode,
            {"ok": True, "executed": True, "functions": [{"name": "main", "outputs": ["y"]}]},
            "the asset worker's run, functions[0]: no field 'inputs_file'",
        ),
        (
            Resaved.decode,
            {"ok": True, "locations_before": {"fused": 2}, "locations_after": {"debuginfo": "2"}},
            "the asset worker's re-save: locations_after['debuginfo'] is string, expected number",
        ),
    ],
)
def test_an_answer_not_in_its_kind_s_form_is_one_error_naming_the_worker_and_the_field(
    decode: Decode[Any], wire: Any, message: str
):
    with pytest.raises(AnswerError) as raised:
        decode(wire)
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


class _DoubleRuntimes:
    """A test double of a session's runtimes whose asset worker answers every run with `wire`
    (a worker script out of step with its client)."""

    def __init__(self, wire: dict[str, Any]) -> None:
        self.wire = wire

    def env_for_core(self, core: str) -> Env:
        path = Path(f"/test-double/{core}")
        return Env(core, core, path, path / "bin" / "python", {}, ())

    def ready(self, env: Env) -> Env:
        return env

    def pool_of(self, worker: type, log_suffix: str) -> Any:
        raise AssertionError("a run goes through `calls`, never a pool of its own")

    def calls(self, calls: Sequence[Call], decode: Decode[A], at_once: int = 1) -> list[A]:
        return [decode(self.wire) for _ in calls]


def test_a_malformed_run_answer_stops_the_check_at_the_boundary_naming_the_field(tmp_path):
    """Before: `fn['name']` deep in the outcome's reading, a KeyError; now the answer is read
    where it arrives, and the error names the field."""
    functions = [{"inputs": [], "outputs": ["y"]}]  # no name
    runtimes = _DoubleRuntimes({"ok": True, "executed": False, "functions": functions})
    run = Run(tmp_path / "a.aimodel", "b1", tmp_path / "b1", False)
    with pytest.raises(
        AnswerError, match=r"^the asset worker's run, functions\[0\]: no field 'name'$"
    ):
        runs_on([run], runtimes)


def test_a_bundle_read_gives_its_weights_typed():
    answer = BundleRead.decode(_read())
    assert answer.weights is not None
    assert (answer.weights.constants, answer.weights.dtypes) == (3, {"f32": 3})
