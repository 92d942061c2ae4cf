"""Faults: hung workers, damaged stored results, concurrent runs, interrupted runs."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path

import pytest
from cli import start
from registries import conv_transpose_registry as _registry

from inventory.policy import load_policy
from inventory.verdict import judge
from oracle.clients.worker_pool import Pool, Worker
from oracle.compare.spec import ProbeSpec
from oracle.executors.comparison import compare
from oracle.store.result_store import load_result, result_dir


def conv_t(**kw) -> ProbeSpec:
    params = {
        "dim": 1,
        "in_channels": 4,
        "out_channels": 4,
        "kernel": [4],
        "stride": [2],
        "padding": [0],
        "output_padding": [1],
        "input_shape": [1, 4, 7],
    }
    params.update(kw)
    return ProbeSpec("conv_transpose", params)


def test_a_hung_worker_is_killed_after_its_timeout(env, tmp_path, monkeypatch):
    monkeypatch.setenv("INVENTORY_WORKER_FAULT", "hang")
    pool = Pool(tmp_path)
    for version in ("0.4.1", "0.4.2"):
        pool.add(Worker(env(version), tmp_path / "w.log", timeout=3))
    result = compare(conv_t(kernel=[6]), env("0.4.1"), env("0.4.2"), pool, use_cache=False)
    pool.close()
    assert not result.old.ok and "did not answer within 3 s" in result.old.error
    assert judge(result, load_policy()).reexport == "inconclusive"


def test_a_damaged_stored_result_is_detected_and_recomputed(env, tmp_path):
    spec = conv_t(kernel=[3], input_shape=[1, 4, 9])
    with Pool(tmp_path) as pool:
        first = compare(spec, env("0.4.1"), env("0.4.2"), pool)
    folder = result_dir(spec, env("0.4.1"), env("0.4.2"))
    assert load_result(folder) is not None
    victim = next(p for p in folder.rglob("shipped.mlir"))
    victim.write_text(victim.read_text()[:50])  # truncated
    assert load_result(folder) is None
    with Pool(tmp_path) as pool:
        again = compare(spec, env("0.4.1"), env("0.4.2"), pool)
    assert not again.cached and again.shipped == first.shipped
    assert load_result(folder) is not None


def _shared_envs(tmp_path: Path, env) -> Path:
    """A fresh result store that borrows the already built environments."""
    env("0.4.1")
    env("0.4.2")
    from oracle.infra.paths import envs_dir

    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    return cache


def test_two_concurrent_runs_share_environments_and_store(env, tmp_path):
    cache = _shared_envs(tmp_path, env)
    registry = _registry(tmp_path)
    args = ("affected", "--fix", "40", "--registry", str(registry), "--json", "-q")
    runs = [start(*args, INVENTORY_CACHE=str(cache)) for _ in range(2)]
    outs = [r.communicate(timeout=600) for r in runs]
    assert [r.returncode for r in runs] == [1, 1], [o[1] for o in outs]
    answers = [json.loads(o[0])["result"]["bundles"][0]["probes"][0] for o in outs]
    assert answers[0]["evidence"] == answers[1]["evidence"]
    assert answers[0]["shipped"] == answers[1]["shipped"] == "differs"
    stored = [p for p in (cache / "results").iterdir()]
    assert [p.name.startswith(".") for p in stored] == [False], stored
    assert load_result(stored[0]) is not None


def test_ctrl_c_leaves_no_half_written_result(env, tmp_path):
    cache = _shared_envs(tmp_path, env)
    registry = _registry(tmp_path, channels=8)
    run = start(
        "affected",
        "--fix",
        "40",
        "--registry",
        str(registry),
        "--json",
        "-q",
        INVENTORY_CACHE=str(cache),
    )
    results = cache / "results"
    while run.poll() is None:  # interrupt while a probe is being built
        if results.exists() and any(p.name.startswith(".") for p in results.iterdir()):
            break
        time.sleep(0.02)
    assert run.poll() is None, "the run ended before it could be interrupted mid-probe"
    run.send_signal(signal.SIGINT)
    run.communicate(timeout=120)
    for folder in results.iterdir() if results.exists() else []:
        assert not folder.name.startswith("."), f"temp folder left: {folder}"
        assert load_result(folder) is not None, f"half-written result: {folder}"


def test_an_interrupt_while_the_sides_start_leaves_no_temp_folder(env, tmp_path, monkeypatch):
    """Ctrl-C can land in the instant a side's thread has started but is not yet joined: the
    run must not remove its temp folder while that side's worker still writes into it."""
    import threading

    cache = _shared_envs(tmp_path, env)
    monkeypatch.setenv("INVENTORY_CACHE", str(cache))
    thread_start = threading.Thread.start

    def start_then_interrupt(thread: threading.Thread) -> None:
        thread_start(thread)
        monkeypatch.setattr(threading.Thread, "start", thread_start)  # once
        raise KeyboardInterrupt

    spec = conv_t(kernel=[5], input_shape=[1, 4, 13])
    with Pool(tmp_path / "logs") as pool:
        monkeypatch.setattr(threading.Thread, "start", start_then_interrupt)
        with pytest.raises(KeyboardInterrupt):
            compare(spec, env("0.4.1"), env("0.4.2"), pool, use_cache=False)
        # the side whose thread was never joined ends once its worker answers or is killed
        deadline = time.monotonic() + 600
        while any(t.name.startswith("ThreadPoolExecutor") for t in threading.enumerate()):
            assert time.monotonic() < deadline, "a side's thread never ended"
            time.sleep(0.1)
    results = cache / "results"
    left = [p.name for p in results.iterdir()] if results.exists() else []
    assert left == [], f"left in the store: {left}"
