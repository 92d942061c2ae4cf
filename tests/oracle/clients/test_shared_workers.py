"""Workers kept between pools (`oracle/clients/worker_pool.py` `shared_workers`), with the real
probe worker in a real converter environment: within the block a closed pool's live worker
answers the next pool's calls (no second start-up), on its store or another's, putting each
store's temp files and log in that store; a worker that was killed, or another timeout, script
or process environment, is never kept; the block's end and a pool closed outside it end the
process. Each test runs outside the session's own block (`own_workers`), so the blocks here
are the outermost."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.clients.worker_pool import Pool, Worker, own_workers, shared_workers
from oracle.envs.environment import Env

RELEASE = "0.4.1"

pytestmark = pytest.mark.own_workers


def _pid(pool: Pool, env: Env) -> int:
    """The process that answers the pool's next call in `env`."""
    pool.worker(env).call({"op": "hello"})
    proc = pool.first(env)._proc
    assert proc is not None and proc.poll() is None
    return proc.pid


def _alive(worker: Worker) -> bool:
    proc = worker._proc
    return proc is not None and proc.poll() is None


def test_a_closed_pools_worker_answers_the_next_pool_until_the_block_ends(
    env: Callable[[str], Env], tmp_path: Path
) -> None:
    one = env(RELEASE)
    with shared_workers():
        first = Pool(tmp_path)
        pid = _pid(first, one)
        kept = first.first(one)
        first.close()
        assert _alive(kept)  # kept running for the next pool
        second = Pool(tmp_path)
        assert _pid(second, one) == pid
        assert second.first(one) is kept
        second.close()
    assert not _alive(kept)  # the block's end closes what is kept


def test_a_kept_worker_serves_only_its_own_environment(
    env: Callable[[str], Env], tmp_path: Path
) -> None:
    """Every environment's python is a link to one base interpreter: a worker kept for 0.4.1
    must never answer a pool's call in 0.4.2 (it would convert with the wrong converter)."""
    old, new = env("0.4.1"), env("0.4.2")
    with shared_workers():
        first = Pool(tmp_path)
        first.worker(old).call({"op": "hello"})
        first.close()
        second = Pool(tmp_path)
        versions = second.worker(new).call({"op": "hello"})["versions"]
        assert versions["coreai-torch"] == new.packages["coreai-torch"] == "0.4.2"
        assert second.worker(old).call({"op": "hello"})["versions"]["coreai-torch"] == "0.4.1"
        second.close()


def test_a_killed_worker_or_another_timeout_starts_a_new_one(
    env: Callable[[str], Env], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = env(RELEASE)
    with shared_workers():
        first = Pool(tmp_path)
        killed = _pid(first, one)
        first.first(one).kill()
        first.close()
        second = Pool(tmp_path)
        started = _pid(second, one)
        assert started != killed
        second.close()
        monkeypatch.setenv("INVENTORY_WORKER_TIMEOUT", "123")
        third = Pool(tmp_path)
        assert _pid(third, one) != started  # a worker of another timeout is not this one's
        assert third.first(one).timeout == 123
        third.close()


def test_outside_the_block_a_closed_pool_ends_its_workers(
    env: Callable[[str], Env], tmp_path: Path
) -> None:
    one = env(RELEASE)
    pool = Pool(tmp_path)
    _pid(pool, one)
    worker = pool.first(one)
    pool.close()
    assert not _alive(worker)


def test_a_kept_worker_serves_a_pool_on_another_store_with_its_files_in_that_store(
    env: Callable[[str], Env], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The suite's runs each have a store of their own: one worker answers both, and each
    store's temp files (the worker's TMPDIR, where the runtime compiles) and log are its own."""
    one = env(RELEASE)
    a, b = tmp_path / "a", tmp_path / "b"
    with shared_workers():
        monkeypatch.setenv("INVENTORY_CACHE", str(a))
        first = Pool(a / "logs")
        answer = first.worker(one).call({"op": "hello"})
        worker = first.first(one)
        assert Path(answer["tmp"]).parent == a / "tmp"
        first.close()
        assert not Path(answer["tmp"]).exists()  # kept, idle: nothing of it in the store
        monkeypatch.setenv("INVENTORY_CACHE", str(b))
        second = Pool(b / "logs")
        moved = second.worker(one).call({"op": "hello"})
        assert second.first(one) is worker and moved["pid"] == answer["pid"]  # no new start
        assert Path(moved["tmp"]).parent == b / "tmp" and Path(moved["tmp"]).is_dir()
        log = b / "logs" / f"{one.name}.worker.log"
        assert worker.log == log
        assert f"temp folder now {moved['tmp']}" in log.read_text()  # its stderr is there
        assert moved["tmp"] not in (a / "logs" / f"{one.name}.worker.log").read_text()
        second.close()
        assert _alive(worker)
        assert not list((b / "tmp").iterdir())  # its run over: the store as if it were closed
    assert not _alive(worker)


def test_a_worker_started_in_another_process_environment_is_not_kept_for_this_one(
    env: Callable[[str], Env], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A variable the worker's process inherits (a fault double's, a library's setting) makes
    another worker; one the block ignores, or the store's, does not."""
    one = env(RELEASE)
    with shared_workers(ignoring=frozenset({"INVENTORY_TEST_NOISE"})):
        first = Pool(tmp_path)
        pid = _pid(first, one)
        first.close()
        monkeypatch.setenv("INVENTORY_TEST_NOISE", "1")
        monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "other"))
        second = Pool(tmp_path)
        assert _pid(second, one) == pid
        second.close()
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        third = Pool(tmp_path)
        assert _pid(third, one) != pid
        third.close()


def test_own_workers_inside_the_block_starts_and_ends_its_own(
    env: Callable[[str], Env], tmp_path: Path
) -> None:
    one = env(RELEASE)
    with shared_workers():
        first = Pool(tmp_path)
        pid = _pid(first, one)
        kept = first.first(one)
        first.close()
        with own_workers():
            cold = Pool(tmp_path)
            assert _pid(cold, one) != pid  # a cold start, though one is kept
            own = cold.first(one)
            cold.close()
            assert not _alive(own)  # ended with its pool
        assert _alive(kept)
        after = Pool(tmp_path)
        assert _pid(after, one) == pid  # kept for after
        after.close()


def test_a_block_keeps_at_most_its_most_idle_workers_closing_the_oldest(
    env: Callable[[str], Env], tmp_path: Path
) -> None:
    old, new = env("0.4.1"), env("0.4.2")
    with shared_workers(most=1):
        first = Pool(tmp_path)
        _pid(first, old)
        older = first.first(old)
        first.close()
        second = Pool(tmp_path)
        _pid(second, new)
        newer = second.first(new)
        second.close()
        assert _alive(newer) and not _alive(older)  # one kept: the one kept last


def test_a_worker_whose_environment_was_found_at_fault_is_not_kept(
    env: Callable[[str], Env], tmp_path: Path
) -> None:
    """The environment may be repaired before the next run: the next pool starts a worker in
    it as it is then (a kept one would answer with the fault it measured)."""
    one = env(RELEASE)
    with shared_workers():
        first = Pool(tmp_path)
        pid = _pid(first, one)
        worker = first.first(one)
        worker._fault, worker._fault_checked = "environment fault: a test says so", True
        first.close()
        assert not _alive(worker)
        second = Pool(tmp_path)
        assert _pid(second, one) != pid
        second.close()
