"""Failures are not sticky, and the store survives its own maintenance (part B).

Every test drives the real CLI (in this process, or in a subprocess where a signal or a second
process is the point), on a result store of its own. A test that needs
an environment it can break works on a hard-linked copy of a built one (`cp -al`: instant, no
space): files in such a copy are never written in place (the originals share their inodes); a
file is changed by removing it and writing a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from cli import Ran, invoke
from doubles.faults import fault_env
from held_lock import torch_lock_held
from registries import conv_transpose_registry as _registry

from oracle.catalog.releases import load_catalog
from oracle.envs.environment import MANIFEST, SHARED_TORCH_PTH
from oracle.infra.paths import envs_dir
from oracle.store.result_store import LOCKS, RESULT_FILE, load_result

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str, cache: Path, **extra: str) -> Ran:
    return invoke(*args, INVENTORY_CACHE=str(cache), **extra)


def _start(*args: str, cache: Path, **extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "inventory.cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "INVENTORY_CACHE": str(cache), **extra},
    )


def _affected(registry: Path, cache: Path, *extra: str, fix: str = "40", **env: str):
    proc = _run(
        "affected",
        "--fix",
        fix,
        "--registry",
        str(registry),
        "--json",
        "-q",
        *extra,
        cache=cache,
        **env,
    )
    return proc, (json.loads(proc.stdout) if proc.stdout.strip() else None)


def _probe(document: dict) -> dict:
    return document["result"]["bundles"][0]["probes"][0]


def _stored(cache: Path) -> list[Path]:
    results = cache / "results"
    return sorted(results.iterdir()) if results.exists() else []


def _shared_envs(tmp_path: Path, env) -> Path:
    """A fresh result store that borrows the already built environments (none is changed)."""
    env("0.4.1")
    env("0.4.2")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    return cache


def _own_envs(
    tmp_path: Path,
    env,
    copies: tuple[str, ...] = ("0.4.1",),
    copy_torch: bool = False,
    name: str = "cache",
    releases: tuple[str, ...] = ("0.4.1", "0.4.2"),
) -> Path:
    """A store holding the environments of `releases`: those in `copies` (and, with
    `copy_torch`, the shared torch) hard-linked copies of the built ones, safe to break; the
    others symlinks."""
    for version in releases:
        env(version)
    shared = envs_dir()
    cache = tmp_path / name
    (cache / "envs").mkdir(parents=True)
    torch = f"torch-{load_catalog().torch}"
    for entry in (torch, *(f"coreai-torch-{v}" for v in releases)):
        copy = copy_torch if entry == torch else entry.removeprefix("coreai-torch-") in copies
        if copy:
            subprocess.run(["cp", "-al", str(shared / entry), str(cache / "envs")], check=True)
        else:
            (cache / "envs" / entry).symlink_to(shared / entry)
    return cache


def _site(cache: Path, version: str) -> Path:
    return next((cache / "envs" / f"coreai-torch-{version}").glob("lib/python*/site-packages"))


def _rewrite(path: Path, text: str) -> None:
    """Change a file of a hard-linked copy without touching the original it shares an inode
    with."""
    path.unlink()
    path.write_text(text)


def _one_error_line(proc: Ran) -> str:
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1, proc.stderr
    return lines[0]


# ---- 1. an environment fault is never a converter verdict, nor stored ------------------------


def test_an_environment_fault_is_one_line_never_stored_and_recovers(env, tmp_path):
    cache = _own_envs(tmp_path, env)
    registry = _registry(tmp_path)
    breaker = _site(cache, "0.4.1") / "zz_break.pth"  # torch cannot be imported any more
    breaker.write_text('import sys; sys.modules["torch"] = None\n')
    proc, document = _affected(registry, cache)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc)
    assert line.startswith("error: environment fault: coreai-torch-0.4.1 cannot import"), line
    assert "ModuleNotFoundError" in line and "inventory envs build 0.4.1" in line, line
    assert "environment fault" in document["error"]
    assert _stored(cache) == [], "an environment fault was stored"

    breaker.unlink()  # the environment repaired: both the warm run and --no-cache answer
    for extra in ((), ("--no-cache",)):
        proc, document = _affected(registry, cache, *extra)
        assert proc.returncode == 1, proc.stderr
        assert _probe(document)["shipped"] == "differs"
        assert _probe(document)["verdict"] == "shape-change"
    [stored] = _stored(cache)
    assert json.loads((stored / RESULT_FILE).read_text())["failed"] is False


def test_an_environment_fault_in_a_plan_is_one_line_not_an_inconclusive_answer(env, tmp_path):
    # plan's load check writes the asset in the exporter's environment, and its comparisons
    # convert there: a build that fails is contained as the bundle's, a fault never is
    cache = _own_envs(tmp_path, env)
    breaker = _site(cache, "0.4.1") / "zz_break.pth"  # torch cannot be imported any more
    breaker.write_text('import sys; sys.modules["torch"] = None\n')
    proc = _run("plan", "--to", "0.4.2", "--registry", str(_registry(tmp_path)), "-q", cache=cache)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc)
    assert line.startswith("error: environment fault: coreai-torch-0.4.1 cannot import"), line
    assert _stored(cache) == [], "an environment fault was stored"


def test_an_environment_fault_in_a_pipeline_answer_is_one_line_not_inconclusive(env, tmp_path):
    # a pipeline record's asset probe converts where a build that fails is contained as the
    # bundle's answer: a fault of a built environment is the run's error all the same
    cache = _own_envs(tmp_path, env, releases=("0.4.0", "0.4.1"))
    registry = _registry(tmp_path)
    registry.write_text(registry.read_text().replace('converter = "0.4.1"', 'converter = "0.4.0"'))
    breaker = _site(cache, "0.4.1") / "zz_break.pth"  # torch cannot be imported any more
    breaker.write_text('import sys; sys.modules["torch"] = None\n')
    proc, document = _affected(registry, cache, fix="core-b2")
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc)
    assert line.startswith("error: environment fault: coreai-torch-0.4.1 cannot import"), line
    assert "environment fault" in document["error"]
    assert _stored(cache) == [], "an environment fault was stored"


def test_a_missing_interpreter_is_an_environment_fault(env, tmp_path):
    cache = _own_envs(tmp_path, env)
    (cache / "envs" / "coreai-torch-0.4.1" / "bin" / "python").unlink()  # a copied symlink
    proc, _ = _affected(_registry(tmp_path, channels=6), cache)
    assert proc.returncode == 2, proc.stderr
    line = _one_error_line(proc)
    assert "environment fault: coreai-torch-0.4.1 cannot start its python" in line, line
    assert _stored(cache) == []


def test_a_broken_shared_torch_pth_is_repointed_not_blamed_on_the_converter(env, tmp_path):
    """The issue's reproduction: the `.pth` through which an environment imports the shared
    torch is emptied. The next run points it at the store's torch again and answers."""
    cache = _own_envs(tmp_path, env)
    pth = _site(cache, "0.4.1") / SHARED_TORCH_PTH
    _rewrite(pth, "")
    proc = _run(
        "affected",
        "--fix",
        "40",
        "--registry",
        str(_registry(tmp_path, channels=5)),
        "--json",
        cache=cache,
    )
    assert proc.returncode == 1, proc.stderr
    assert "re-pointing coreai-torch-0.4.1 at the shared torch" in proc.stderr
    assert _probe(json.loads(proc.stdout))["shipped"] == "differs"
    assert (
        Path(pth.read_text().strip()).resolve()
        == (envs_dir() / f"torch-{load_catalog().torch}" / "site").resolve()
    )


# ---- 2, 3. --no-cache replaces what is stored; failures are recorded and prunable -----------


def test_no_cache_replaces_the_stored_result_and_reports_a_fresh_failure(env, tmp_path):
    cache = _shared_envs(tmp_path, env)
    registry = _registry(tmp_path, channels=9)
    proc, document = _affected(registry, cache)
    assert proc.returncode == 1, proc.stderr
    [stored] = _stored(cache)
    assert json.loads((stored / RESULT_FILE).read_text())["failed"] is False

    # A fresh failure under --no-cache is what is answered, never the good stored result.
    proc, document = _affected(registry, cache, "--no-cache", INVENTORY_WORKER_FAULT="crash")
    assert proc.returncode == 3, proc.stderr
    probe = _probe(document)
    assert probe["cached"] is False and probe["shipped"] == "both-cannot-convert"
    assert "died of SIGABRT" in probe["reason"]
    [replaced] = _stored(cache)
    assert replaced == stored
    record = json.loads((stored / RESULT_FILE).read_text())
    assert record["failed"] is True and record["shipped"] == "both-cannot-convert"
    assert load_result(stored) is not None  # replaced whole: a valid entry

    prune = _run("cache", "prune", cache=cache)
    assert prune.returncode == 0 and "1 kept" in prune.stdout, prune.stdout
    prune = _run("cache", "prune", "--failures", cache=cache)
    assert prune.returncode == 0, prune.stderr
    assert f"removed {stored.name}: records a failure" in prune.stdout
    assert _stored(cache) == []

    proc, document = _affected(registry, cache)  # measured again, correctly
    assert proc.returncode == 1 and _probe(document)["shipped"] == "differs"


# ---- 4. result.json is covered by the integrity check ----------------------------------------


def test_an_edited_or_misshapen_result_json_is_damaged_and_recomputed(env, tmp_path):
    cache = _shared_envs(tmp_path, env)
    registry = _registry(tmp_path, channels=10)
    proc, document = _affected(registry, cache)
    assert proc.returncode == 1 and _probe(document)["shipped"] == "differs"
    [stored] = _stored(cache)
    record_file = stored / RESULT_FILE

    record = json.loads(record_file.read_text())
    record_file.write_text(json.dumps({**record, "shipped": "identical"}, indent=2))
    assert load_result(stored) is None
    proc, document = _affected(registry, cache)
    assert proc.returncode == 1, proc.stderr
    assert _probe(document)["cached"] is False and _probe(document)["shipped"] == "differs"

    record = json.loads(record_file.read_text())
    record_file.write_text(json.dumps({**record, "measurement": "not an object"}))
    prune = _run("cache", "prune", cache=cache)
    assert prune.returncode == 0 and "Traceback" not in prune.stderr, prune.stderr
    assert f"removed {stored.name}: damaged or unreadable" in prune.stdout

    proc, document = _affected(registry, cache)
    record = json.loads(record_file.read_text())
    record_file.write_text(json.dumps({**record, "measurement": [1, 2]}))
    proc, document = _affected(registry, cache)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert _probe(document)["cached"] is False and _probe(document)["shipped"] == "differs"


# ---- 5. cache prune never touches what a live run holds --------------------------------------


def _temp_folders(cache: Path) -> list[Path]:
    return [p for p in _stored(cache) if p.name.startswith(".")]


def test_prune_during_a_run_leaves_that_run_intact(env, tmp_path):
    cache = _shared_envs(tmp_path, env)
    (cache / "results").mkdir()
    dead = cache / "results" / ".conv_transpose-0.4.1-0.4.2-0123456789abcdef0123.dead"
    run = _start(
        "affected",
        "--fix",
        "40",
        "--registry",
        str(_registry(tmp_path, channels=11)),
        "--json",
        "-q",
        cache=cache,
    )
    held: list[Path] = []
    while run.poll() is None and not held:
        held = [p for p in _temp_folders(cache) if p != dead]
        time.sleep(0.02)
    assert held, "the run ended before a temp folder could be seen"
    # what a run killed with SIGKILL leaves, nobody holding its lock (made once the run is
    # going: a run reclaims such folders when it starts)
    dead.mkdir()
    prune = _run("cache", "prune", cache=cache)
    assert prune.returncode == 0, prune.stderr
    assert f"kept {held[0].name}: in use by a running run" in prune.stdout, prune.stdout
    assert f"removed {held[0].name}" not in prune.stdout
    assert f"removed {dead.name}: left by an interrupted run" in prune.stdout
    # the live folder counts as kept (it once said "0 kept")
    assert prune.stdout.splitlines()[-1] == "1 removed, 1 kept"
    out, errors = run.communicate(timeout=600)
    assert run.returncode == 1, errors
    assert _probe(json.loads(out))["shipped"] == "differs"
    [stored] = _stored(cache)
    assert load_result(stored) is not None


# ---- 6. SIGTERM is handled like Ctrl-C -------------------------------------------------------


def _workers_of(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
            cmdline = (stat.parent / "cmdline").read_bytes()
        except OSError:
            continue
        if int(fields[1]) == pid and b"worker.py" in cmdline:
            found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_sigterm_leaves_no_temp_folder_and_no_worker(env, tmp_path):
    cache = _shared_envs(tmp_path, env)
    run = _start(
        "affected",
        "--fix",
        "40",
        "--registry",
        str(_registry(tmp_path, channels=12)),
        "--json",
        "-q",
        cache=cache,
    )
    workers: list[int] = []
    while run.poll() is None and not (workers and _temp_folders(cache)):
        workers = _workers_of(run.pid)
        time.sleep(0.02)
    assert run.poll() is None, "the run ended before it could be stopped mid-probe"
    run.send_signal(signal.SIGTERM)
    _, errors = run.communicate(timeout=120)
    assert run.returncode == 143, errors
    assert errors.splitlines() == ["error: stopped by SIGTERM; nothing answered"], errors
    assert _temp_folders(cache) == []
    assert list((cache / LOCKS).iterdir()) == []  # no lock left either
    assert _gone(workers), "a worker outlived the run"


def _mid_probe(
    cache: Path, tmp_path: Path, fault: str = "hang"
) -> tuple[subprocess.Popen[str], list[int]]:
    """A run stopped nowhere yet: its two workers inside a conversion that never returns (the
    hang double; `gil`: one that holds the GIL), writing into the run's temp folder. A worker
    left alone would stay there, so whatever ends it is the run's doing, not the job's end."""
    run = _start(
        "affected",
        "--fix",
        "40",
        "--registry",
        str(_registry(tmp_path, channels=12)),
        "--json",
        "-q",
        "--no-cache",
        cache=cache,
        **fault_env(INVENTORY_WORKER_FAULT=fault),
    )
    workers: list[int] = []
    while run.poll() is None and not (
        len(workers) == 2 and _temp_folders(cache) and _converting(cache) == 2
    ):
        workers = _workers_of(run.pid)
        time.sleep(0.02)
    assert run.poll() is None, "the run ended before it could be stopped mid-probe"
    return run, workers


def _converting(cache: Path) -> int:
    """Conversions started in the run's temp folder (each opens its request's log)."""
    return sum(1 for folder in _temp_folders(cache) for _ in folder.rglob("convert.log"))


# A guard against a hung test only, not a speed claim: the doubles never return.
GONE_GUARD = 120.0


def _gone(workers: list[int]) -> bool:
    """Whether every worker ended (waiting at most GONE_GUARD seconds). One that did not is
    killed here, with its group, so that a failing test leaves no worker spinning."""
    deadline = time.monotonic() + GONE_GUARD
    while any(map(_alive, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = [w for w in workers if _alive(w)]
    for pid in left:
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
    return not left


def test_sigterm_stops_the_workers_mid_conversion(env, tmp_path):
    """The workers used to go on converting until their job ended."""
    cache = _shared_envs(tmp_path, env)
    run, workers = _mid_probe(cache, tmp_path)
    run.send_signal(signal.SIGTERM)
    assert _gone(workers), "a worker went on converting after the run stopped"
    _, errors = run.communicate(timeout=60)
    assert run.returncode == 143, errors
    assert _temp_folders(cache) == []
    assert not list((cache / "tmp").iterdir())  # the workers' temp folders went with them


def test_sigkill_of_the_run_leaves_no_worker_and_the_next_run_reclaims_its_folders(env, tmp_path):
    """SIGTERM then SIGKILL used to leave the temp folder and 2 orphaned workers; a watchdog
    thread could not end a worker whose native call held the GIL (the `gil` double): the
    watchdog is a process of its own."""
    cache = _shared_envs(tmp_path, env)
    run, workers = _mid_probe(cache, tmp_path, "gil")
    left = _temp_folders(cache)
    run.send_signal(signal.SIGKILL)
    run.communicate(timeout=60)
    assert _gone(workers), "a worker outlived the run"  # its watchdog ended it
    assert _temp_folders(cache) == left and list((cache / "tmp").iterdir())  # left behind
    proc, document = _affected(_registry(tmp_path, channels=12), cache)
    assert proc.returncode == 1, proc.stderr
    assert _temp_folders(cache) == []  # reclaimed by the next run, which answered
    assert [p.name for p in (cache / "tmp").iterdir()] == []


# ---- 7. a held environment lock says who holds it, and times out -----------------------------


def test_a_held_environment_lock_names_its_holder_and_times_out(tmp_path):
    cache = tmp_path / "cache"
    torch = f"torch-{load_catalog().torch}"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom oracle.envs.environment import locked\n"
            f"with locked({torch!r}):\n    print('held', flush=True)\n    time.sleep(300)\n",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "INVENTORY_CACHE": str(cache)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        build = _run("envs", "build", "0.4.1", cache=cache, INVENTORY_LOCK_TIMEOUT="2")
        answer = _run(
            "affected",
            "--fix",
            "40",
            "--registry",
            str(_registry(tmp_path)),
            "--json",
            cache=cache,
            INVENTORY_LOCK_TIMEOUT="2",
        )
    finally:
        holder.kill()
        holder.wait()
    waiting = f"waiting for environment {torch}: locked by pid {holder.pid} (-c)"
    timed_out = (
        f"environment {torch} is still locked by pid {holder.pid} (-c) after 2 s "
        "(INVENTORY_LOCK_TIMEOUT); wait for it to finish, or stop it"
    )
    assert build.returncode == 2 and "Traceback" not in build.stderr, build.stderr
    lines = [ln for ln in build.stderr.splitlines() if ln.strip()]
    assert lines.count(waiting) == 1 and lines[-1] == f"error: {timed_out}", build.stderr
    # `affected` answers what it can: that bundle is inconclusive, with the reason
    assert answer.returncode == 3, answer.stderr
    assert answer.stderr.splitlines().count(waiting) == 1, answer.stderr
    bundle = json.loads(answer.stdout)["result"]["bundles"][0]
    assert bundle["reexport"] == "inconclusive" and bundle["reason"] == timed_out


def test_a_held_environment_lock_leaves_plan_inconclusive_not_exit_2(tmp_path):
    # the exporter's environment is built when its load check first writes the asset: a build
    # that fails there is that check's outcome (every runtime not run), as when it failed up front
    cache = tmp_path / "cache"
    with torch_lock_held(cache) as timed_out:
        answer = _run(
            "plan",
            "--to",
            "0.4.2",
            "--registry",
            str(_registry(tmp_path)),
            "--json",
            cache=cache,
            INVENTORY_LOCK_TIMEOUT="2",
        )
    assert answer.returncode == 3 and "Traceback" not in answer.stderr, answer.stderr
    [bundle] = json.loads(answer.stdout)["result"]["bundles"]
    assert bundle["reexport"] == "inconclusive"
    load = bundle["load"]
    assert load["reexport"] == "inconclusive" and timed_out in load["reason"], load


def test_a_held_environment_lock_leaves_a_pipeline_answer_inconclusive_not_exit_2(tmp_path):
    # a pipeline record's asset probe converts in environments built when a side first has to:
    # a build that fails there leaves the bundle inconclusive with the reason, not exit 2
    cache = tmp_path / "cache"
    registry = _registry(tmp_path)
    registry.write_text(registry.read_text().replace('converter = "0.4.1"', 'converter = "0.4.0"'))
    with torch_lock_held(cache) as timed_out:
        answer = _run(
            "affected",
            "--fix",
            "core-b2",
            "--registry",
            str(registry),
            "--json",
            cache=cache,
            INVENTORY_LOCK_TIMEOUT="2",
        )
    assert answer.returncode == 3 and "Traceback" not in answer.stderr, answer.stderr
    [bundle] = json.loads(answer.stdout)["result"]["bundles"]
    assert bundle["reexport"] == "inconclusive" and bundle["reason"].startswith(timed_out)


def test_a_held_environment_lock_leaves_a_whole_program_check_inconclusive_not_exit_2(tmp_path):
    # `verify` converts the whole program in environments built when its sides first have to:
    # a build that fails there is that bundle's inconclusive answer, never stored, not exit 2
    cache = tmp_path / "cache"
    with torch_lock_held(cache) as timed_out:
        answer = _run(
            "verify", "mimi", "--to", "0.4.2", "--json", cache=cache, INVENTORY_LOCK_TIMEOUT="2"
        )
    assert answer.returncode == 3 and "Traceback" not in answer.stderr, answer.stderr
    [bundle] = json.loads(answer.stdout)["result"]["bundles"]
    assert bundle["status"] == "inconclusive" and timed_out in bundle["error"], bundle
    stored = [p.name for p in (cache / "results").glob("*") if p.name.startswith("verify-")]
    assert not [n for n in stored if "side" in n or "pair" in n], stored  # nothing measured kept


# ---- 8. a corrupt environment manifest -------------------------------------------------------


def test_a_corrupt_manifest_is_a_damaged_half_built_environment(env, tmp_path, monkeypatch):
    from oracle.envs.environment import ready_env

    cache = _own_envs(tmp_path, env)
    manifest = cache / "envs" / "coreai-torch-0.4.1" / MANIFEST
    for text in ("{not json", "[]", '{"converter": "0.4.1", "core": 3}'):
        _rewrite(manifest, text)
        proc = _run("envs", "list", cache=cache)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert f"coreai-torch-0.4.1: damaged manifest {manifest}" in proc.stdout, proc.stdout
        assert "; rebuilt on next use" in proc.stdout
        assert "coreai-torch-0.4.2: coreai-torch 0.4.2" in proc.stdout  # the others listed
        monkeypatch.setenv("INVENTORY_CACHE", str(cache))
        assert ready_env("0.4.1") is None  # never used: half-built, so rebuilt by ensure_env


# ---- 9. the store can move -------------------------------------------------------------------


def test_a_moved_store_answers_from_what_it_stored(env, tmp_path):
    cache = _own_envs(tmp_path, env, copies=("0.4.1", "0.4.2"), copy_torch=True, name="a")
    registry = _registry(tmp_path, channels=13)
    proc, document = _affected(registry, cache)
    assert proc.returncode == 1, proc.stderr
    [stored] = _stored(cache)
    record = json.loads((stored / RESULT_FILE).read_text())
    assert record["evidence"] == "." and not Path(record["old"]["files"]["asset"]).is_absolute()

    moved = tmp_path / "b"
    shutil.move(cache, moved)
    proc, document = _affected(registry, moved)
    assert proc.returncode == 1, proc.stderr
    probe = _probe(document)
    assert probe["cached"] is True and probe["shipped"] == "differs"
    assert Path(probe["evidence"]) == moved / "results" / stored.name
    loaded = load_result(Path(probe["evidence"]))
    assert loaded is not None and loaded.old.files["asset"].startswith(str(moved))
    torch_site = moved / "envs" / f"torch-{load_catalog().torch}" / "site"
    old_site = cache / "envs" / f"torch-{load_catalog().torch}" / "site"
    for version in ("0.4.1", "0.4.2"):  # a read of stored results readies no environment
        assert (_site(moved, version) / SHARED_TORCH_PTH).read_text().strip() == str(old_site)

    # a worker that has to run re-points its environment at the moved store's own torch first
    proc, document = _affected(registry, moved, "--no-cache")
    assert proc.returncode == 1, proc.stderr
    probe = _probe(document)
    assert probe["cached"] is False and probe["shipped"] == "differs"
    for version in ("0.4.1", "0.4.2"):
        assert (_site(moved, version) / SHARED_TORCH_PTH).read_text().strip() == str(torch_site)


def test_prune_never_empties_a_results_folder_linked_out_of_the_store(tmp_path):
    """The store's `results` folder a symbolic link to a folder elsewhere: `cache prune` refuses
    in one line and removes nothing there (it removed what it found unreadable)."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "victim").mkdir(parents=True)
    (elsewhere / "victim" / "keep.txt").write_text("not the store's\n")
    store = tmp_path / "store"
    store.mkdir()
    (store / "results").symlink_to(elsewhere)
    proc = _run("cache", "prune", cache=tmp_path / "cache", INVENTORY_STORE=str(store))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    [said] = proc.stderr.strip().splitlines()
    assert said.startswith(f"error: refusing to write {store / 'results'}: outside the store")
    assert (elsewhere / "victim" / "keep.txt").read_text() == "not the store's\n"
