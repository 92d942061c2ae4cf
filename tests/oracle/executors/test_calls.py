"""Calls (`oracle/executors/calls.py`): the worker requests of a whole-program check handed to
the executor. Here: the local batch keeps its order and answers a dead worker as a worker
failure; a call's files travel to a node and back, its paths moved both ways. The node and its
workers are test doubles (named as such) of `NodeAgent`'s environment and pools; the same path
on a real two-node cluster is in test_executor_ray.py."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

from oracle.clients.worker_pool import WorkerFailure
from oracle.envs.environment import Env
from oracle.executors.calls import Call, Ship, answered_here, files_of
from oracle.executors.ray_cluster import call_answer, job_limit
from oracle.executors.ray_node import ANCHOR, CallJob, NodeAgent
from oracle.infra.paths import moved


def _env(release: str) -> Env:
    path = Path(f"/test-double/coreai-torch-{release}")
    return Env(release, "1.0.0b2", path, path / "bin" / "python", {}, ())


class _DoubleWorker:
    """A test double of a worker: echoes its request, writes a file into `out` that names its
    input, dies on request, and counts how many answer at once."""

    at_once = 0
    most = 0
    guard = threading.Lock()

    def call(self, request: dict[str, Any], timeout: float | None = None) -> dict[str, Any]:
        del timeout
        with self.guard:
            _DoubleWorker.at_once += 1
            _DoubleWorker.most = max(_DoubleWorker.most, _DoubleWorker.at_once)
        try:
            time.sleep(0.05)
            if request.get("die"):
                raise WorkerFailure("the worker died of SIGABRT")
            out = Path(request["out"])
            out.mkdir(parents=True, exist_ok=True)
            program = Path(request["program"])
            (out / "seen.txt").write_text(program.read_text() if program.is_file() else "")
            return {
                "ok": True,
                "files": {"seen": str(out / "seen.txt")},
                "read": str(program),
                "inputs": request.get("inputs", "absent"),
            }
        finally:
            with self.guard:
                _DoubleWorker.at_once -= 1


class _DoublePools:
    """A test double of a session's pools: one double worker per environment; `faulty`: the
    environments that cannot run a worker at all (what `Worker.environment_fault` finds)."""

    def __init__(self, faulty: tuple[str, ...] = ()) -> None:
        self.workers: dict[str, _DoubleWorker] = {}
        self.faulty = faulty
        self.fault_checks = 0

    def pool_of(self, worker: type, log_suffix: str) -> Any:
        del worker, log_suffix
        return self

    def worker(self, env: Env) -> _DoubleWorker:
        return self.workers.setdefault(env.converter, _DoubleWorker())

    def first(self, env: Env) -> Any:
        return self

    def environment_fault(self) -> str | None:
        self.fault_checks += 1
        return "environment fault: no coreai-core here" if self.faulty else None


def test_a_batch_keeps_its_order_runs_two_at_once_and_answers_a_dead_worker(tmp_path):
    program = tmp_path / "program.pt2"
    program.write_text("the program")
    calls = [
        Call(
            "program",
            _env(r),
            {"program": str(program), "out": str(tmp_path / r), "die": r == "0.4.2"},
            (Ship("program"),),
        )
        for r in ("0.4.1", "0.4.2", "0.4.3")
    ]
    _DoubleWorker.most = 0
    answers = answered_here(calls, _DoublePools(), at_once=2)
    assert [a["ok"] for a in answers] == [True, False, True]
    assert answers[1]["stage"] == "worker" and "SIGABRT" in answers[1]["error"]
    assert (tmp_path / "0.4.3" / "seen.txt").read_text() == "the program"
    assert all(a["wall_seconds"] >= 0.05 for a in answers)
    assert _DoubleWorker.most == 2


def test_moved_maps_a_path_and_what_lies_under_it_but_not_a_sibling_sharing_its_prefix():
    prefixes = {"/n/work/out": "/d/side", "/n/work/out/sub": "/d/other"}
    answer = {
        "files": {"a": "/n/work/out/a.mlir", "b": "/n/work/out/sub/b.bin"},
        "list": ["/n/work/out", "/n/work/out2/c", 3],
        "why": "not a path /n/work/out",
    }
    assert moved(answer, prefixes) == {
        "files": {"a": "/d/side/a.mlir", "b": "/d/other/b.bin"},
        "list": ["/d/side", "/n/work/out2/c", 3],
        "why": "not a path /n/work/out",
    }


def test_files_of_a_file_a_folder_and_a_folder_filtered_by_glob(tmp_path):
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "program.pt2").write_bytes(b"big")
    (tmp_path / "build" / "main.inputs.safetensors").write_bytes(b"in")
    (tmp_path / "asset" / "weights").mkdir(parents=True)
    (tmp_path / "asset" / "weights" / "w.bin").write_bytes(b"w")
    assert files_of(tmp_path / "build" / "program.pt2", "**/*") == {"program.pt2": b"big"}
    assert files_of(tmp_path / "build", "*.inputs.safetensors") == {
        "main.inputs.safetensors": b"in"
    }
    assert files_of(tmp_path / "asset", "**/*") == {"weights/w.bin": b"w"}
    assert files_of(tmp_path / "absent", "**/*") == {}


class _DoubleAgent(NodeAgent):
    """A test double of a node's agent: its environments and workers are doubles, its temp
    folder the test's (no catalog, no converter)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.doubles = _DoublePools()

    def env(self, release: str) -> Env:
        return _env(release)

    def pool_of(self, worker: type, log_suffix: str) -> Any:
        return self.doubles


def test_a_call_s_files_travel_to_a_node_and_its_outputs_come_back_with_this_machine_s_paths(
    tmp_path,
):
    driver = tmp_path / "driver"
    (driver / "build").mkdir(parents=True)
    program = driver / "build" / "program.pt2"
    program.write_text("the bundle's program")
    out = driver / "store" / "verify-side-x"
    call = Call(
        "program", _env("0.4.2"), {"program": str(program), "out": str(out)}, (Ship("program"),)
    )
    job = CallJob("program", "0.4.2", call.request, (("program", "program.pt2"),), None, "call-1")
    node = tmp_path / "node"
    payload = _DoubleAgent(node).run(job, files_of(program, "**/*"))
    assert payload["ok"], payload
    # the node read its own copy, and names every path it returns under the anchor
    text = json.dumps(payload["answer"])
    assert str(node) not in text and str(ANCHOR) in text
    assert payload["files"] == {"seen.txt": b"the bundle's program"}
    assert not any(node.iterdir())  # the node's job folder is gone
    answer = call_answer(call, job, payload)
    assert answer["files"]["seen"] == str(out / "seen.txt")
    assert answer["read"] == str(program)
    assert (out / "seen.txt").read_text() == "the bundle's program"


def test_a_worker_that_dies_on_a_node_is_a_worker_failure_naming_the_node(tmp_path):
    """Its log is a file of the node, not of the driver's machine: the line says which."""
    import socket

    program = tmp_path / "program.pt2"
    program.write_text("p")
    request = {"program": str(program), "out": str(tmp_path / "out"), "die": True}
    job = CallJob("program", "0.4.2", request, (("program", "program.pt2"),), None, "call-2")
    payload = _DoubleAgent(tmp_path / "node").run(job, files_of(program, "**/*"))
    answer = payload["answer"]
    assert answer["ok"] is False and answer["stage"] == "worker"
    assert answer["error"] == f"the worker died of SIGABRT on {socket.gethostname()}"


def test_a_call_may_take_its_own_timeout_on_a_node_before_its_agent_is_dropped():
    """A whole program's conversion may take an hour (INVENTORY_VERIFY_CONVERT_TIMEOUT): the
    cluster's per-job limit, 20 minutes by default, does not cut it short."""
    hour = CallJob("program", "0.4.2", {}, (), 3600.0, "call-3")
    short = CallJob("asset", "0.4.2", {}, (), 5.0, "call-4")
    assert job_limit(hour, 1200.0) == 3660.0
    assert job_limit(short, 1200.0) == 1200.0


def test_a_call_asking_for_faults_brings_the_environment_s_fault_with_its_failure_only(tmp_path):
    """An asset run asks (`faults`): an environment that cannot run the worker is not the
    asset's outcome, and its caller raises it. A call that does not ask, or that succeeded,
    starts no check."""
    program = tmp_path / "program.pt2"
    program.write_text("p")

    def call(die: bool, faults: bool) -> Call:
        request = {"program": str(program), "out": str(tmp_path / "out"), "die": die}
        return Call("asset", _env("0.4.2"), request, faults=faults)

    pools = _DoublePools(faulty=("0.4.2",))
    failed, unasked, fine = answered_here(
        [call(True, True), call(True, False), call(False, True)], pools, at_once=1
    )
    assert failed["environment_fault"] == "environment fault: no coreai-core here"
    assert failed["stage"] == "worker"
    assert "environment_fault" not in unasked and "environment_fault" not in fine
    assert fine["ok"] and pools.fault_checks == 1
    [healthy] = answered_here([call(True, True)], _DoublePools(), at_once=1)
    assert healthy["stage"] == "worker" and "environment_fault" not in healthy


def test_a_shipped_field_the_request_leaves_unset_is_not_shipped_and_stays_unset_on_a_node(
    tmp_path,
):
    """A load without seeded inputs (`inputs: null`) ships the asset alone."""
    asset = tmp_path / "bundle.aimodel"
    asset.mkdir()
    (asset / "main.mlirb").write_text("the bundle")
    request = {"program": str(asset), "inputs": None, "out": str(tmp_path / "out")}
    call = Call("asset", _env("0.4.2"), request, (Ship("program"), Ship("inputs", "*.in")))
    assert call.shipped() == (Ship("program"),)
    job = CallJob("asset", "0.4.2", request, (("program", ""),), None, "call-5")
    payload = _DoubleAgent(tmp_path / "node").run(job, files_of(asset, "**/*"))
    assert payload["ok"], payload
    answer = call_answer(call, job, payload)
    assert answer["read"] == str(asset)  # the node's copy of the folder, named as the driver's
    assert answer["inputs"] is None
