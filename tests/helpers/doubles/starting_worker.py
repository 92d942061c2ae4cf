"""A worker (`oracle/clients/worker_pool.py`) whose start never ends until the test says so,
and whose process is never started: a real start (importing torch and the converter in a
converter environment, after its warm-up) takes seconds, and the moment it ends cannot be
chosen. `started` is set when a start begins; the start ends when `release` is set."""

from __future__ import annotations

import threading

from oracle.clients.worker_pool import Worker


class StartingWorker(Worker):
    started = threading.Event()
    release = threading.Event()

    def call(self, request: dict, timeout: float | None = None) -> dict:
        type(self).started.set()
        type(self).release.wait(timeout=60)
        return {"ok": True, "op": request.get("op")}
