"""`--executor ray` on a real two-node Ray cluster started on this machine (one CPU each, no
dashboard, usage stats off, 127.0.0.1 only), torn down by the fixture that started it.

`sweep --registry` of a small registry (four conv_transpose instances of one bundle, exported
with 0.4.1) from 0.4.1 to 0.4.2: the answer and the stored results equal the local executor's
(minus paths, and the runtime's creation timestamp inside each saved asset), jobs ran on both
nodes, and a second run dispatches none. A node's agent killed mid-run: its jobs run on the other
node and the answer is still complete and the same.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bundles import export
from cli import spawn, start
from doubles.faults import fault_env
from s3_server import make_bucket, s3_server
from store_answers import answer_in, borrowing_store, without

from oracle.compare import normalise
from oracle.executors.shared_sides import SIDES_FILE
from oracle.load_check import load_stored
from oracle.store.result_store import RECORD_DIGEST, RESULT_FILE, load_result

ray = pytest.importorskip("ray", reason="the ray extra is not installed (scripts/test adds it)")

RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    # on Linux Ray would advertise the machine's address; this keeps every node and the
    # driver on 127.0.0.1 (Ray's own switch, named for the platforms where it is default)
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
}
CHANNELS = (3, 5, 7, 9)  # four distinct probes no other test stores
SWEEP = ("sweep", "--registry", "--from", "0.4.1", "--to", "0.4.2", "--json")
# inside a saved asset: when the runtime wrote it (and its keys in no fixed order)
ASSET_METADATA = "model.aimodel/metadata.json"
# Python warns once per process (the converter's import-time warning, torch's deprecations), so
# which probe's convert.log holds a warning depends on the order jobs reach each worker: every
# warning record ("FILE:LINE: CategoryWarning: message" and its source line) is set aside.
CONVERT_LOG = "convert.log"
PYTHON_WARNING = re.compile(r"^[^\n]*:\d+: \w*Warning: [^\n]*\n(?:  [^\n]*\n)?", re.MULTILINE)


def _registry(folder: Path) -> Path:
    path = folder / "four.toml"
    text = (
        '[bundles.a]\nfiles = ["a"]\ndtype = "float32"\n'
        '[bundles.a.exporter]\nconverter = "0.4.1"\nsource = "test"\n'
    )
    for c in CHANNELS:
        text += (
            '[[bundles.a.instances]]\nkind = "conv_transpose"\ndtype = "float32"\n'
            f'source = "test"\nparams = {{ dim = 1, in_channels = {c}, out_channels = 2, '
            "kernel = [4], stride = [2], padding = [0], output_padding = [1], "
            f"input_shape = [1, {c}, 11] }}\n"
        )
    path.write_text(text)
    return path


@contextlib.contextmanager
def _two_nodes() -> Iterator[Any]:
    """Two Ray nodes on 127.0.0.1, one CPU each (a `ray.cluster_utils.Cluster`); every process
    it started is stopped at the end."""
    from ray.cluster_utils import Cluster

    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))  # short: Ray's socket paths
    # Ray writes the cluster's address to <RAY_TMPDIR>/ray/ray_current_cluster whatever the
    # nodes' temp_dir, and fails where that folder does not exist (a fresh machine's /tmp/ray):
    # kept in this cluster's folder, removed with it
    (temp / "ray").mkdir()
    here = {**RAY_ENV, "RAY_TMPDIR": str(temp)}
    saved = {k: os.environ.get(k) for k in here}
    os.environ.update(here)
    node: dict[str, Any] = {
        "num_cpus": 1,
        "include_dashboard": False,
        "node_ip_address": "127.0.0.1",
        "object_store_memory": 100 * 1024**2,
    }
    made = Cluster(
        initialize_head=True, connect=False, head_node_args={**node, "temp_dir": str(temp)}
    )
    try:
        made.add_node(**node)
        made.wait_for_nodes()
        yield made
    finally:
        made.shutdown()
        shutil.rmtree(temp, ignore_errors=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture(scope="module")
def cluster(env) -> Iterator[str]:
    """Two Ray nodes on 127.0.0.1, one CPU each; their agents use this session's environments.
    Yields the cluster's address."""
    env("0.4.1")
    env("0.4.2")
    with _two_nodes() as made:
        yield made.address


def _flags(data: Any, key: str) -> set[Any]:
    """Every value `key` has anywhere in the document."""
    if isinstance(data, dict):
        found = {data[key]} if key in data else set()
        return found.union(*(_flags(v, key) for v in data.values()))
    if isinstance(data, list):
        return set().union(*(_flags(v, key) for v in data))
    return set()


def _ledgers(store: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((store / "runs" / "ray").glob("*.json"))]


def _call_kinds(store: Path) -> list[dict[str, set[str]]]:
    """Per run (its ledger), the nodes each kind of its jobs ran on."""
    runs = []
    for ledger in _ledgers(store):
        assert ledger["lost"] == 0
        kinds: dict[str, set[str]] = {}
        for job in ledger["jobs"]:
            kinds.setdefault(job["kind"], set()).add(job["node"])
        runs.append(kinds)
    return runs


@pytest.fixture(scope="module")
def local(env, tmp_path_factory) -> tuple[Path, Path, Any]:
    """The registry, the local executor's store and its answer."""
    tmp = tmp_path_factory.mktemp("local")
    registry, store = _registry(tmp), borrowing_store(tmp, "local")
    proc = spawn(*SWEEP, "--registry-file", str(registry), "-q", INVENTORY_CACHE=str(store))
    assert proc.returncode == 0, proc.stderr
    return registry, store, answer_in(proc.stdout, store)


def _stored(store: Path) -> dict[str, dict[str, Any]]:
    """Each stored result's files, read for comparison: result.json without its digests of the
    files below (and its own), each asset's metadata without its creation date, each conversion
    log without Python's once-per-process warnings."""
    out: dict[str, dict[str, Any]] = {}
    for folder in sorted(p for p in (store / "results").iterdir()):
        files: dict[str, Any] = {}
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            rel = str(path.relative_to(folder))
            if rel == RESULT_FILE:
                record = json.loads(path.read_text())
                record.pop(RECORD_DIGEST)
                record["files_sha256"] = {
                    k: v
                    for k, v in record["files_sha256"].items()
                    if not k.endswith((ASSET_METADATA, CONVERT_LOG)) and k != SIDES_FILE
                }
                files[rel] = record
            elif rel.endswith(CONVERT_LOG):
                files[rel] = PYTHON_WARNING.sub("", path.read_text())
            elif rel.endswith(ASSET_METADATA):
                meta = json.loads(path.read_text())
                meta.pop("creationDate")
                files[rel] = meta
            elif rel == SIDES_FILE:
                # which stored sides a local comparison was made over: a node converts both
                # sides itself and stores none (sides are not shared on the nodes yet)
                continue
            elif not rel.startswith("."):  # .verified.json: when a reader last hashed it
                files[rel] = path.read_bytes()
        out[folder.name] = files
    return out


def test_sweep_on_two_nodes_equals_the_local_answer_and_a_rerun_dispatches_nothing(
    cluster, local, tmp_path
):
    registry, local_store, local_answer = local
    store = borrowing_store(tmp_path, "ray")
    args = (
        *SWEEP,
        "--registry-file",
        str(registry),
        "-q",
        "--executor",
        "ray",
        "--ray-address",
        cluster,
    )
    first = spawn(*args, INVENTORY_CACHE=str(store), **RAY_ENV)
    assert first.returncode == 0, first.stderr
    assert answer_in(first.stdout, store) == local_answer
    assert _stored(store) == _stored(local_store)
    [ledger] = _ledgers(store)
    assert ledger["dispatched"] == len(CHANNELS) and ledger["from_store"] == 0
    assert len(ledger["nodes"]) == 2  # results came from both nodes
    assert all(n["jobs"] >= 1 for n in ledger["nodes"].values())

    again = spawn(*args, INVENTORY_CACHE=str(store), **RAY_ENV)
    assert again.returncode == 0, again.stderr
    rerun = answer_in(again.stdout, store)
    # read from the store, and saying so (as a local rerun says it), else the same answer
    assert _flags(rerun, "cached") == {True}
    assert without(rerun, "cached") == without(local_answer, "cached")
    second = _ledgers(store)[-1]
    assert second["dispatched"] == 0 and second["from_store"] == len(CHANNELS)


def _kill_an_agent_once_both_work(
    cluster: str, run: subprocess.Popen[str], lines: list[str]
) -> str:
    """Wait until the run's progress shows every job in flight, then kill one node's agent
    (as a node lost mid-run would); returns the agent's name."""
    deadline = time.monotonic() + 300
    while not any(
        re.search(rf"ray: 0/{len(CHANNELS)} jobs .*in flight .*in flight", ln) for ln in lines
    ):
        assert run.poll() is None and time.monotonic() < deadline, "".join(lines)
        time.sleep(0.05)
    code = (
        "import ray, sys\nray.init(address=sys.argv[1], log_to_driver=False)\n"
        "mine = sorted(a['name'] for a in ray.util.list_named_actors(all_namespaces=True)\n"
        "              if a['name'].startswith(f'inventory-{sys.argv[2]}-'))\n"
        "ray.kill(ray.get_actor(mine[-1], namespace='inventory'))\nprint(mine[-1])\n"
    )
    killer = subprocess.run(
        [sys.executable, "-c", code, cluster, str(run.pid)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **RAY_ENV},
    )
    assert killer.returncode == 0, killer.stderr
    return killer.stdout.strip()


def _sweep_on(
    cluster: str, registry: Path, store: Path, *extra: str
) -> tuple[subprocess.Popen[str], list[str], threading.Thread]:
    """A sweep started on the cluster, its progress lines read as they come."""
    run = start(
        *SWEEP,
        "--registry-file",
        str(registry),
        "--executor",
        "ray",
        "--ray-address",
        cluster,
        *extra,
        **RAY_ENV,
        INVENTORY_CACHE=str(store),
        COLUMNS="400",
    )
    lines: list[str] = []
    stderr = run.stderr
    assert stderr is not None and run.stdout is not None  # both piped
    reader = threading.Thread(target=lambda: lines.extend(iter(stderr.readline, "")), daemon=True)
    reader.start()
    return run, lines, reader


def test_a_node_agent_killed_mid_run_its_jobs_run_elsewhere(cluster, local, tmp_path):
    registry, _, local_answer = local
    store = borrowing_store(tmp_path, "killed")
    run, lines, reader = _sweep_on(cluster, registry, store)
    killed = _kill_an_agent_once_both_work(cluster, run, lines)
    assert run.stdout is not None
    stdout = run.stdout.read()  # not communicate(): it would race the reader for stderr
    run.wait(timeout=600)
    reader.join(timeout=10)
    assert run.returncode == 0, "".join(lines)
    assert any(f"{killed.split('-')[2][:8]}" in ln and "left out: died" in ln for ln in lines)
    assert answer_in(stdout, store) == local_answer  # complete, and the same answer
    [ledger] = _ledgers(store)
    assert ledger["retried"] >= 1 and ledger["lost"] == 0
    assert sum(n["jobs"] for n in ledger["nodes"].values()) == len(CHANNELS)
    assert len(list((store / "results").iterdir())) == len(CHANNELS)


def _wait_for_both_in_flight(run: subprocess.Popen[str], lines: list[str]) -> None:
    deadline = time.monotonic() + 300
    while not any(
        re.search(rf"ray: 0/{len(CHANNELS)} jobs .*in flight .*in flight", ln) for ln in lines
    ):
        assert run.poll() is None and time.monotonic() < deadline, "".join(lines)
        time.sleep(0.05)


def test_a_node_lost_mid_run_leaves_stdout_the_json_document(env, local, tmp_path):
    """The second node removed (not gracefully: its raylet and workers killed) while both run
    jobs: Ray's driver is sent the dead raylet's last log lines, which it prints to stdout; the
    run's stdout is still the one JSON document, equal to the local answer, the loss one
    warning line on stderr and in the ledger, Ray's messages in the ledger's folder."""
    registry, _, local_answer = local
    store = borrowing_store(tmp_path, "lost")
    with _two_nodes() as made:
        run, lines, reader = _sweep_on(made.address, registry, store, "--no-cache")
        _wait_for_both_in_flight(run, lines)
        [second] = [n for n in made.list_all_nodes() if n is not made.head_node]
        made.remove_node(second, allow_graceful=False)
        assert run.stdout is not None
        stdout = run.stdout.read()  # not communicate(): it would race the reader for stderr
        run.wait(timeout=600)
        reader.join(timeout=10)
    assert run.returncode == 0, "".join(lines)
    assert answer_in(stdout, store) == local_answer  # the whole of stdout, and the same answer
    lost = [ln for ln in lines if ln.startswith("warning: ray: ") and "left out: died" in ln]
    assert len(lost) == 1, "".join(lines)
    [ledger] = _ledgers(store)
    assert [e["why"].startswith("died") for e in ledger["left_out"]] == [True]
    assert ledger["lost"] == 0 and ledger["retried"] >= 1
    assert sum(n["jobs"] for n in ledger["nodes"].values()) == len(CHANNELS)
    if ledger["messages"]:  # what Ray printed went to the ledger's folder, not to stdout
        assert Path(ledger["messages_file"]).read_text().count("\n") == ledger["messages"]


def test_the_head_node_lost_mid_run_is_inconclusive_in_one_line_and_stores_nothing(
    env, local, tmp_path
):
    """The head (its GCS) removed, not gracefully, while both nodes run jobs: Ray would retry
    it for minutes; the run says so in one line, answers every job not answered as not run
    (inconclusive, exit 3), stores none of them, and stdout is still the one JSON document."""
    registry, _, _ = local
    store = borrowing_store(tmp_path, "headless")
    with _two_nodes() as made:
        run, lines, reader = _sweep_on(made.address, registry, store, "--no-cache")
        _wait_for_both_in_flight(run, lines)
        made.remove_node(made.head_node, allow_graceful=False)
        assert run.stdout is not None
        stdout = run.stdout.read()
        run.wait(timeout=600)
        reader.join(timeout=10)
    assert run.returncode == 3, "".join(lines)
    doc = answer_in(stdout, store)
    assert doc["result"]["changed"] == [] and len(doc["result"]["failing_both"]) == len(CHANNELS)
    gone = [ln for ln in lines if ln.startswith("warning: ray: ") and "head" in ln]
    assert len(gone) == 1 and "is gone" in gone[0], "".join(lines)
    assert not (store / "results").exists() or not list((store / "results").iterdir())
    [ledger] = _ledgers(store)
    assert ledger["head_lost"] and ledger["lost"] == len(CHANNELS)


def _named_agents(cluster: str, pid: int) -> list[str]:
    """The live agents a run (by its pid) still has on the cluster, asked by another driver."""
    code = (
        "import ray, sys\nray.init(address=sys.argv[1], log_to_driver=False)\n"
        "print(' '.join(a['name'] for a in ray.util.list_named_actors(all_namespaces=True)\n"
        "               if a['name'].startswith(f'inventory-{sys.argv[2]}-')))\n"
    )
    asked = subprocess.run(
        [sys.executable, "-c", code, cluster, str(pid)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **RAY_ENV},
    )
    assert asked.returncode == 0, asked.stderr
    return asked.stdout.split()


def test_ctrl_c_mid_run_leaves_no_agent_and_no_half_written_result(cluster, local, tmp_path):
    registry, _, _ = local
    store = borrowing_store(tmp_path, "interrupted")
    run, lines, reader = _sweep_on(cluster, registry, store, "--no-cache")
    deadline = time.monotonic() + 300
    while not any(re.search(rf"ray: 0/{len(CHANNELS)} jobs .*in flight", ln) for ln in lines):
        assert run.poll() is None and time.monotonic() < deadline, "".join(lines)
        time.sleep(0.05)
    # Held still while another driver asks the cluster for its agents (seconds, on a loaded
    # machine: long enough for the run to finish its few jobs), then interrupted as it resumes:
    # the Ctrl-C lands mid-run, whatever the machine's load.
    run.send_signal(signal.SIGSTOP)
    try:
        assert _named_agents(cluster, run.pid), "the run has no agent to leave behind"
        run.send_signal(signal.SIGINT)
    finally:
        run.send_signal(signal.SIGCONT)
    run.communicate(timeout=120)
    reader.join(timeout=10)
    assert run.returncode != 0 and "Traceback" not in "".join(lines), "".join(lines)
    results = store / "results"
    for folder in results.iterdir() if results.exists() else []:
        assert not folder.name.startswith("."), f"temp folder left: {folder}"
        assert load_result(folder) is not None, f"half-written result: {folder}"
    deadline = time.monotonic() + 60  # Ray ends a driver's actors once it sees the driver gone
    while (left := _named_agents(cluster, run.pid)) and time.monotonic() < deadline:
        time.sleep(1)
    assert left == []


def test_two_drivers_share_one_store_the_second_dispatches_nothing(cluster, local, tmp_path):
    """INVENTORY_STORE: one results folder for drivers with caches of their own (a shared
    path): what a local driver stored, a cluster driver on another cache reads back."""
    registry, _, local_answer = local
    shared = tmp_path / "shared"
    first_cache = borrowing_store(tmp_path, "first")
    second_cache = borrowing_store(tmp_path, "second")
    first = spawn(
        *SWEEP,
        "--registry-file",
        str(registry),
        "-q",
        INVENTORY_CACHE=str(first_cache),
        INVENTORY_STORE=str(shared),
    )
    assert first.returncode == 0, first.stderr
    assert (
        answer_in(first.stdout.replace(str(shared), str(first_cache)), first_cache) == local_answer
    )
    assert len(list((shared / "results").iterdir())) == len(CHANNELS)
    second = spawn(
        *SWEEP,
        "--registry-file",
        str(registry),
        "-q",
        "--executor",
        "ray",
        "--ray-address",
        cluster,
        INVENTORY_CACHE=str(second_cache),
        INVENTORY_STORE=str(shared),
        **RAY_ENV,
    )
    assert second.returncode == 0, second.stderr
    assert without(answer_in(second.stdout, shared), "cached") == without(local_answer, "cached")
    [ledger] = _ledgers(second_cache)
    assert ledger["dispatched"] == 0 and ledger["from_store"] == len(CHANNELS)
    assert not (first_cache / "results").exists() and not (second_cache / "results").exists()


# One bundle exported with 0.4.0 and no traced construct: `affected --fix 28` answers it with two
# load checks (the 0.4.0 asset, and 0.4.1's as the control), each on every runtime of the catalog.
LOAD_REGISTRY = (
    '[bundles.a]\nfiles = ["a"]\ndtype = "float32"\n'
    '[bundles.a.exporter]\nconverter = "0.4.0"\nsource = "test"\n'
)
LOADS = ("affected", "--fix", "28", "--json", "-q")


def _checks(store: Path) -> dict[str, Any]:
    """Each stored load check by key: whether the asset was written, each runtime's outcome
    (what the runtime said, and the names of its evidence files) and the files kept."""
    out: dict[str, Any] = {}
    for folder in sorted((store / "results").glob("load-*")):
        check = load_stored(folder)
        assert check is not None, f"unreadable load check: {folder}"
        out[folder.name] = (
            check.converted,
            [
                (o.core, o.outcome, o.stage, o.error, o.signal, sorted(o.files))
                for o in check.outcomes
            ],
            sorted(
                str(p.relative_to(folder))
                for p in folder.rglob("*")
                if p.is_file() and not p.name.startswith(".")
            ),
        )
    return out


def test_load_checks_run_on_a_node_and_are_shared_through_a_bucket(cluster, env, tmp_path):
    """The executor chosen for the run makes its load checks too: on the cluster they run on a
    node (the ledger's jobs), the driver stores the same checks, with the same evidence files,
    and gives the same answer as the local executor. With `--store s3://...` (moto's server on
    127.0.0.1, a bucket's stand-in) it publishes them, and a local driver with an empty cache
    of its own answers from the bucket: the same answer though every conversion it would start
    crashes (a test double), so it made no check of its own."""
    env("0.4.0")  # every release's environment: the checks run on every runtime of the catalog
    registry = tmp_path / "a.toml"
    registry.write_text(LOAD_REGISTRY)
    local_store, ray_store = borrowing_store(tmp_path, "local"), borrowing_store(tmp_path, "ray")
    local = spawn(*LOADS, "--registry", str(registry), INVENTORY_CACHE=str(local_store))
    # exit 1: re-export required (the 0.4.0 asset aborts coreai-core b2 and b3)
    assert local.returncode == 1, local.stderr
    local_answer = answer_in(local.stdout, local_store)
    with s3_server(tmp_path / "aws") as aws:
        make_bucket("inventory-loads")
        url = "s3://inventory-loads/team"
        ran = spawn(
            *LOADS,
            "--registry",
            str(registry),
            "--executor",
            "ray",
            "--ray-address",
            cluster,
            "--store",
            url,
            INVENTORY_CACHE=str(ray_store),
            **RAY_ENV,
            **aws,
        )
        assert ran.returncode == 1, ran.stderr
        assert answer_in(ran.stdout, ray_store) == local_answer
        checks = _checks(ray_store)
        assert len(checks) == 2 and checks == _checks(local_store)
        [ledger] = _ledgers(ray_store)
        assert [j["kind"] for j in ledger["jobs"]] == ["load-check", "load-check"]
        assert ledger["dispatched"] == 2 and ledger["lost"] == 0
        assert not list((local_store / "runs").glob("ray/*.json"))  # no cluster ran it

        reader = borrowing_store(tmp_path, "reader")
        read = spawn(
            *LOADS,
            "--registry",
            str(registry),
            "--store",
            url,
            INVENTORY_CACHE=str(reader),
            **aws,
            **fault_env(INVENTORY_WORKER_FAULT="crash"),
        )
    assert read.returncode == 1, read.stderr
    answer = answer_in(read.stdout, reader)
    # read from the bucket, and saying so (as a rerun says it), else the same answer
    assert _flags(answer, "cached") == {True}
    assert without(answer, "cached") == without(local_answer, "cached")
    assert _checks(reader) == checks


VERIFY = ("verify", "sortformer", "--to", "0.4.2", "--json", "-q")
# what measuring costs, which differs between any two runs: seconds and peak memory
COSTS = ("seconds", "conversion_seconds", "read_seconds", "peak_mb", "timing")


def _differing(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two answers differ, field by field (with both values), for a readable failure."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            d
            for k in sorted(set(a) | set(b))
            for d in _differing(a.get(k), b.get(k), f"{path}.{k}")
        ]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _differing(x, y, f"{path}[{i}]")
        ]
    return [] if a == b else [f"{path}: {a!r:.200} != {b!r:.200}"]


def _side_programs(store: Path) -> dict[str, dict[str, str]]:
    """Each stored whole-program and cut side's programs, normalised as the tool compares them
    (a conversion's `resource_N` handles differ run to run), by folder: named by their keys, so
    two stores hold the same names."""
    return {
        folder.name: {
            p.name: normalise(p.read_text())
            for p in sorted(folder.iterdir())
            if p.suffix == ".mlir"
        }
        for folder in sorted((store / "results").glob("verify-*side-*"))
    }


def test_verify_on_two_nodes_converts_and_runs_there_and_shares_its_parts_through_a_bucket(
    cluster, tmp_path
):
    """The whole-program check's conversions, runs and cuts are jobs of the cluster: the sides
    of the chain go out in one batch (one to each node), the answer equals the local
    executor's but for what measuring cost, and the driver stored the same programs under the
    same keys. With `--store s3://...` (moto's server on 127.0.0.1, a bucket's stand-in) it
    publishes the check's parts, and a driver with an empty cache of its own answers from the
    bucket alone: every part and probe read back, nothing measured."""
    local_store, ray_store = borrowing_store(tmp_path, "local"), borrowing_store(tmp_path, "ray")
    local = spawn(*VERIFY, INVENTORY_CACHE=str(local_store))
    assert local.returncode == 0, local.stderr
    ours = answer_in(local.stdout, local_store)
    for key in (*COSTS, "cached"):
        ours = without(ours, key)
    with s3_server(tmp_path / "aws") as aws:
        make_bucket("inventory-verify")
        url = "s3://inventory-verify/team"
        ran = spawn(
            *VERIFY,
            "--executor",
            "ray",
            "--ray-address",
            cluster,
            "--store",
            url,
            INVENTORY_CACHE=str(ray_store),
            **RAY_ENV,
            **aws,
        )
        assert ran.returncode == 0, ran.stderr
        theirs = answer_in(ran.stdout, ray_store)
        for key in (*COSTS, "cached"):
            theirs = without(theirs, key)
        assert _differing(theirs, ours) == []
        [kinds] = _call_kinds(ray_store)  # one run, none of its jobs lost
        assert {"program-conversion", "asset-run", "region-cut", "comparison"} <= set(kinds)
        assert len(kinds["program-conversion"]) == 2  # the chain's two sides, one on each node
        programs = _side_programs(ray_store)
        assert len(programs) >= 4 and programs == _side_programs(local_store)
        assert not list((local_store / "runs").glob("ray/*.json"))  # no cluster ran it

        reader = borrowing_store(tmp_path, "reader")
        read = spawn(*VERIFY, "--store", url, INVENTORY_CACHE=str(reader), **aws)
    assert read.returncode == 0, read.stderr
    answer = answer_in(read.stdout, reader)
    assert _flags(answer, "cached") == {True}
    for key in (*COSTS, "cached"):
        answer = without(answer, key)
    assert _differing(answer, ours) == []
    assert _side_programs(reader) == programs


# a scan's run: when it started and its process (in each read's and load's log folder)
SCAN_RUN = re.compile(r"\d{8}T\d{6}-\d+")


def test_scan_and_repair_read_load_and_rewrite_a_bundle_on_the_nodes_and_answer_as_locally(
    cluster, env, tmp_path
):
    """The executor chosen for the run makes scan's and repair's worker requests too: a 0.4.0
    asset travels to the nodes, which read it with coreai-core's parser, load it on every
    runtime (b2 and b3 abort on it: the error line comes from the node's log, brought back),
    rewrite its locations and re-save it. Each answer equals the local executor's, its run's
    time stamp aside."""
    env("0.4.0")  # every runtime of the catalog reads or loads the asset
    env("0.4.3")
    asset = export(env, "0.4.0", tmp_path / "asset")
    answers: dict[str, list[Any]] = {"scan": [], "repair": []}
    for where in ("local", "ray"):
        store = borrowing_store(tmp_path, where)
        ray_flags = ("--executor", "ray", "--ray-address", cluster) if where == "ray" else ()
        extra = RAY_ENV if where == "ray" else {}
        scanned = spawn(
            "scan", str(asset), "--json", *ray_flags, INVENTORY_CACHE=str(store), **extra
        )
        # exit 1: a bundle that does not load on a deployment runtime (b2, b3)
        assert scanned.returncode == 1, scanned.stderr
        repaired = spawn(
            "repair",
            str(asset),
            "-o",
            str(tmp_path / f"{where}.aimodel"),
            "--json",
            *ray_flags,
            INVENTORY_CACHE=str(store),
            **extra,
        )
        assert repaired.returncode == 0, repaired.stderr
        if where == "ray":
            ray_scan = json.loads(scanned.stdout)["result"]["bundles"][0]
        for command, ran in (("scan", scanned), ("repair", repaired)):
            text = SCAN_RUN.sub("<run>", ran.stdout.replace(str(tmp_path / where), "<out>"))
            answers[command].append(answer_in(text, store))
        if where == "ray":  # scan's run and repair's: each read and ran the asset there
            runs = _call_kinds(store)
            assert len(runs) == 2 and all(set(r) == {"bundle-read", "asset-run"} for r in runs)
        else:
            assert not list((store / "runs").glob("ray/*.json"))  # no cluster ran it
    scan_local, scan_ray = answers["scan"]
    assert _differing(scan_ray, scan_local) == []
    [bundle] = scan_ray["result"]["bundles"]
    assert bundle["reader"]["core"] == "1.0.0b1"
    loads = {o["core"]: o for o in bundle["loads"]}
    assert loads["1.0.0b3"]["outcome"] == "crashes"
    assert "expected AICode versioned location" in loads["1.0.0b3"]["error"]
    # the node's logs came back: the line above is read from this machine's copy
    b3 = Path(next(o for o in ray_scan["loads"] if o["core"] == "1.0.0b3")["log"])
    for log in (Path(ray_scan["reader"]["log"]), b3):
        assert log.is_file() and log.is_relative_to(tmp_path / "ray"), log
    assert "expected AICode versioned location" in b3.read_text()
    repair_local, repair_ray = answers["repair"]
    assert _differing(repair_ray, repair_local) == []
    assert repair_ray["result"]["outputs"]["identical"] is True
