"""Workers kept between pools (`oracle/clients/worker_pool.py` `shared_workers`), with the real
probe worker in a real converter environment: within the block a closed pool's live worker
answers the next pool's calls on the same store (no second start-up); a worker that was
killed, or another timeout, is never kept; the block's end and a pool closed outside it end
the process."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from oracle.clients.worker_pool import Pool, Worker, shared_workers
from oracle.envs.environment import Env

RELEASE = "0.4.1"


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
