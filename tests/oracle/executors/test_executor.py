"""The executor seam (`--executor local|ray`): the local executor is the default and never
imports ray; a Session takes any Oracle (a test double here); `--executor ray` without the extra,
without a cluster or with an unreachable one is one line and exit 2. The Ray executor's own
runs on a two-node cluster are in tests/oracle/executors/test_executor_ray.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli import ROOT, one_line, spawn, start
from doubles.oracles import DyingWorkers

from oracle.catalog.releases import load_catalog
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.executors.api import ExecutorError
from oracle.executors.ray_cluster import check_identity
from oracle.executors.ray_node import tool_digest
from oracle.session import Session
from oracle.store import result_store as store

SWEEP = ("sweep", "--from", "0.4.1", "--to", "0.4.2")
# Ray would otherwise take 127.0.0.1 for the machine's own address (its switch for the platforms
# where it is the default): nothing is sent anywhere but 127.0.0.1
LOOPBACK = {"RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "RAY_USAGE_STATS_ENABLED": "0"}
NO_RAY = str(Path(__file__).resolve().parents[3] / "tests" / "helpers" / "doubles" / "no_ray")


def _closed_port() -> int:
    """A port nothing listens on: bound, then released."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_local_executor_is_the_default_and_never_imports_ray(tmp_path):
    code = (
        "import sys\nfrom oracle.catalog.releases import load_catalog\n"
        "from oracle.session import Session\n"
        "with Session(load_catalog()) as s:\n"
        "    print(s.oracle.name, 'ray' in sys.modules)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={"INVENTORY_CACHE": str(tmp_path), "PATH": "/usr/bin"},
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["local", "False"]


def _fake_env(version: str) -> Env:
    """An Env as a session hands it to its oracle; nothing is run in it (the double answers)."""
    path = Path("/nonexistent") / f"coreai-torch-{version}"
    return Env(
        version,
        "1.0.0b2",
        path,
        path / "bin" / "python",
        {"coreai-torch": version, "coreai-core": "1.0.0b2", "torch": "2.13.0", "numpy": "2.0.0"},
        (),
    )


def test_a_session_runs_its_comparisons_through_the_oracle_it_is_given():
    double = DyingWorkers()
    spec = ProbeSpec(
        "conv_transpose",
        {
            "dim": 1,
            "in_channels": 4,
            "out_channels": 2,
            "kernel": [4],
            "stride": [2],
            "padding": [0],
            "output_padding": [1],
            "input_shape": [1, 4, 11],
        },
    )
    old, new = _fake_env("0.4.1"), _fake_env("0.4.2")
    with Session(load_catalog(), oracle=double) as session:
        first = session.compare(spec, old, new)
        again = session.compare(spec, old, new)
        # a worker death is remembered per release, as with the local executor's workers
        assert "died of SIGKILL" in session.worker_failures["0.4.1"]
    assert double.asked == [spec.key()]  # once per session: the second ask is the session's
    assert first is again and not first.old.ok and first.new.ok
    assert double.closed


def test_executor_ray_without_the_extra_is_one_line_exit_2():
    proc = spawn(
        *SWEEP,
        "--executor",
        "ray",
        "--ray-address",
        f"127.0.0.1:{_closed_port()}",
        PYTHONPATH=NO_RAY,
    )
    assert proc.returncode == 2
    line = one_line(proc)
    assert line.startswith("error: --executor ray needs the ray extra")
    assert "(in the checkout: python3.11 scripts/setup_venv.py .venv ray)" in line


def test_executor_ray_with_an_unreachable_cluster_is_one_line_exit_2():
    port = _closed_port()
    proc = spawn(*SWEEP, "--executor", "ray", "--ray-address", f"127.0.0.1:{port}")
    assert proc.returncode == 2
    assert one_line(proc) == (
        f"error: cannot reach the Ray cluster at 127.0.0.1:{port}: Connection refused"
    )
    # the same through the environment (INVENTORY_EXECUTOR, RAY_ADDRESS)
    proc = spawn(*SWEEP, INVENTORY_EXECUTOR="ray", RAY_ADDRESS=f"127.0.0.1:{port}")
    assert proc.returncode == 2
    assert "cannot reach the Ray cluster" in one_line(proc)


@pytest.mark.parametrize(
    "args, env, said",
    [
        (
            ("--executor", "ray", "--ray-address", "ray://127.0.0.1:1"),
            {},
            "error: --ray-address ray://127.0.0.1:1: Ray Client addresses are not supported",
        ),
        (
            ("--executor", "ray", "--ray-address", "127.0.0.1"),
            {},
            "error: --ray-address '127.0.0.1': not HOST:PORT with a port from 1 to 65535",
        ),
        (
            ("--executor", "ray"),
            {"RAY_ADDRESS": ":6379"},
            "error: --ray-address ':6379': not HOST:PORT with a port from 1 to 65535",
        ),
        (
            ("--ray-address", "127.0.0.1:6379"),
            {},
            "error: --ray-address is for --executor ray; this run's executor is local",
        ),
        (
            ("--executor", "local", "--ray-address", "127.0.0.1:6379"),
            {},
            "error: --ray-address is for --executor ray; this run's executor is local",
        ),
    ],
    ids=["ray-client", "no-port", "env-no-host", "without-executor", "local-executor"],
)
def test_a_ray_usage_error_is_one_line_before_ray_is_imported(args, env, said):
    """Each is refused from the command line alone: Ray is never imported (the double of a
    machine without the extra would say so first), let alone started or asked. A usage error
    once took 75 s (the address was checked after importing Ray), and `--ray-address` without
    `--executor ray` was silently ignored (the run went on locally)."""
    # a store refused after the executor: what the run would say next, if it went on
    proc = spawn(*SWEEP, *args, "--store", "ftp://nowhere", PYTHONPATH=NO_RAY, **env)
    assert proc.returncode == 2, proc.stderr
    assert one_line(proc).startswith(said)


@pytest.fixture
def silent_port() -> Iterator[socket.socket]:
    """A port on 127.0.0.1 that takes connections and never answers (no Ray GCS: what a
    mistyped port of another service looks like)."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        yield listener


def test_a_port_that_answers_as_no_ray_gcs_is_refused_in_one_line_within_bounds(silent_port):
    """Ray itself retried such a port for minutes (20 attempts of 35 s), printing as it went: the
    address is refused once nothing answered as a GCS within 10 s, in one line."""
    port = silent_port.getsockname()[1]
    proc = subprocess.run(
        [sys.executable, "-m", "inventory.cli", *SWEEP, "--executor", "ray"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **LOOPBACK, "RAY_ADDRESS": f"127.0.0.1:{port}"},
        timeout=300,  # Ray's own retries: over 600 s
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        f"error: --ray-address 127.0.0.1:{port}: no answer as a Ray GCS within 10 s; give the "
        "cluster's GCS address (what `ray start --head` prints)"
    ]


def test_sigterm_while_the_ray_address_is_asked_is_one_line_and_exit_143(silent_port):
    """SIGTERM while the run waits on the cluster's address ends it at once with the run's own
    line and exit code (Ray's handler, installed by ray.init, exited 15 with no line once its
    native call returned, up to 35 s later)."""
    port = silent_port.getsockname()[1]
    run = start(*SWEEP, "--executor", "ray", "--ray-address", f"127.0.0.1:{port}", **LOOPBACK)
    silent_port.settimeout(300)
    asked, _ = silent_port.accept()  # the run connected: it is asking
    with asked:
        time.sleep(1)  # well inside the 10 s it waits for an answer
        run.send_signal(signal.SIGTERM)
        _, err = run.communicate(timeout=60)
    assert run.returncode == 143, err
    assert err.splitlines() == ["error: stopped by SIGTERM; nothing answered"]


def test_executor_ray_needs_a_cluster_address_and_a_known_executor():
    proc = spawn(*SWEEP, "--executor", "ray", RAY_ADDRESS="")
    assert proc.returncode == 2
    assert one_line(proc).startswith("error: --executor ray needs a cluster: --ray-address")
    proc = spawn(*SWEEP, "--executor", "dask")
    assert proc.returncode == 2
    assert one_line(proc) == "error: --executor must be one of local, ray, not 'dask'"


def _identity(**changes: object) -> dict[str, object]:
    """What a node agent reports (`NodeAgent.identity`), as this checkout would, then changed."""
    ident: dict[str, object] = {
        "host": "n1",
        "pid": 1,
        "tool": tool_digest(),
        "code": store.code_digest(),
        "packages": {"0.4.1": store.env_identity(_fake_env("0.4.1"))},
    }
    ident.update(changes)
    return ident


def test_a_node_with_other_code_or_other_packages_is_refused_in_one_line():
    envs = {"0.4.1": _fake_env("0.4.1")}
    check_identity("node a", _identity(), envs)  # the same code and packages: accepted
    with pytest.raises(ExecutorError) as other_code:
        check_identity("node a", _identity(tool="0123456789abcdef"), envs)
    assert str(other_code.value).startswith(
        "node a runs other inventory code (digest 0123456789abcdef, here "
    )
    moved = {**_fake_env("0.4.1").packages, "coreai-torch": "0.4.1.post1"}
    moved = {k: moved[k] for k in ("coreai-torch", "coreai-core", "torch", "numpy")}
    with pytest.raises(ExecutorError) as other_packages:
        check_identity("node a", _identity(packages={"0.4.1": moved}), envs)
    assert str(other_packages.value) == (
        "node a has other packages for coreai-torch 0.4.1: coreai-torch 0.4.1.post1 (here "
        "0.4.1); refusing, its results would poison the store"
    )
    assert "\n" not in str(other_code.value) + str(other_packages.value)


def test_an_inventory_store_that_is_a_file_is_one_line_exit_2(tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    proc = spawn(*SWEEP, INVENTORY_CACHE=str(tmp_path / "cache"), INVENTORY_STORE=str(not_a_folder))
    assert proc.returncode == 2
    assert one_line(proc) == f"error: INVENTORY_STORE {not_a_folder} is a file, not a folder"
