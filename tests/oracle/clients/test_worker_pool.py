"""The pool's leases (`oracle/clients/worker_pool.py`) without a converter: workers stand in as
plain objects the pool was given (`Pool.add`); a lease only hands them out and takes them back.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from oracle.clients.worker_pool import Pool

GUARD = 10.0  # a guard against a hung test only: a woken waiter takes its worker at once


def _stand_in(name: str) -> Any:
    """What a lease reads of a worker: its environment's name, and how it is prepared."""
    return SimpleNamespace(env=SimpleNamespace(name=name), prepare=None)


def _waiting(pool: Pool, env: Any, got: list[str]) -> threading.Thread:
    def take() -> None:
        with pool.lease(env) as worker:
            got.append(worker.env.name)

    thread = threading.Thread(target=take, daemon=True)
    thread.start()
    return thread


def _asleep(pool: Pool, count: int) -> None:
    """Until `count` threads wait for a worker (CPython's Condition keeps its waiters)."""
    waiters = pool._free._waiters  # type: ignore[attr-defined]
    deadline = time.monotonic() + GUARD
    while len(waiters) < count and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(waiters) == count


def test_a_worker_handed_back_wakes_the_waiter_of_its_environment(tmp_path: Path) -> None:
    """Two environments, each with its one worker leased (as a session's start-up call holds
    it); a comparison's two sides wait, 0.4.2's first. When 0.4.1's worker is handed back,
    0.4.1's side takes it at once: a single wake-up went to the first waiter (0.4.2's), which
    found nothing and slept again, so 0.4.1's side started only when 0.4.2's conversion ended
    (a comparison's two sides one after the other)."""
    pool = Pool(tmp_path)
    old, new = _stand_in("0.4.1"), _stand_in("0.4.2")
    pool.add(old)
    pool.add(new)
    held_new, held_old = pool.lease(new.env), pool.lease(old.env)
    assert held_new.__enter__() is new and held_old.__enter__() is old
    got: list[str] = []
    side_new = _waiting(pool, new.env, got)
    _asleep(pool, 1)
    side_old = _waiting(pool, old.env, got)
    _asleep(pool, 2)

    held_old.__exit__(None, None, None)  # 0.4.1's worker back; 0.4.2's still busy
    side_old.join(GUARD)
    assert got == ["0.4.1"]

    held_new.__exit__(None, None, None)
    side_new.join(GUARD)
    assert got == ["0.4.1", "0.4.2"]
