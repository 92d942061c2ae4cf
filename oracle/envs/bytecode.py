"""The bytecode of a new environment, written in the background while the run goes on.

uv installs no bytecode, and a worker's first export imports about 2,500 modules, 1,200 of them
only when `torch.export` first runs (torch._dynamo, sympy, mpmath): without their bytecode every
worker start compiled them from source (a start and first export: 6.3 s of CPU, 3.6 s with it).
A new environment therefore runs `oracle/workers/warm_up.py` once (a tiny probe converted,
saved and run), which writes it; compiling every file instead (pip's way, uv's
--compile-bytecode) costs four times the CPU.

The warm-up does not hold the environment back: it is ready at once, and only a worker of it
waits for its warm-up (it would otherwise compile the same modules beside it). A run that needs
no worker (every answer stored) does not wait: a warm-up still running when the process exits is
stopped, and what it wrote stays (each file is written atomically); workers write the rest
(`oracle/clients/worker_pool.py`).
"""

from __future__ import annotations

import atexit
import os
import secrets
import shutil
import signal
import subprocess
import threading
from pathlib import Path

from oracle.infra.paths import TEMP, cache_root, in_store

# an in-environment script, run by the environment's python (never imported here)
_WARM_UP = Path(__file__).resolve().parent.parent / "workers" / "warm_up.py"

_lock = threading.Lock()
_running: dict[str, tuple[subprocess.Popen[str], threading.Thread, str]] = {}
# A worker waits this long at most for its environment's warm-up (it takes seconds).
_WAIT = 600.0


def environ(tmp: Path | str) -> dict[str, str]:
    """The environment of a process run in a converter environment (the warm-up, a worker):
    bytecode written (the machine may say otherwise: PYTHONDONTWRITEBYTECODE), and its own
    TMPDIR, where the runtime compiles assets."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "TMPDIR": str(tmp)}


def start(python: Path, log: Path) -> None:
    """Warm up the environment of `python` in the background; its outcome goes to `log`."""
    # in the store's scratch, never the system's temp directory: a run killed mid-warm-up
    # leaves it where the next run and `cache prune` reclaim it (its pid is gone)
    folder = in_store(cache_root() / TEMP / f"{os.getpid()}-warm-up-{secrets.token_hex(4)}")
    folder.mkdir(parents=True)
    tmp = str(folder)
    try:
        proc = subprocess.Popen(
            [str(python), "-I", str(_WARM_UP)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=environ(tmp),
            start_new_session=True,  # stopped as a group at exit, with what it starts
        )
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return  # no interpreter: the worker's environment check reports it

    def finish() -> None:
        said = (proc.communicate()[0] or "").strip().splitlines()
        shutil.rmtree(tmp, ignore_errors=True)
        line = f"bytecode of a worker's imports written (exit {proc.returncode})"
        if proc.returncode and said:
            line += f" {said[-1]}"
        try:
            with open(log, "a") as handle:
                handle.write(f"# {line}\n")
        except OSError:
            pass  # the log is a record, never needed

    waiter = threading.Thread(target=finish, name=f"warm-up {python}", daemon=True)
    with _lock:
        _running[str(python)] = (proc, waiter, tmp)
    waiter.start()


def wait(python: Path) -> None:
    """Before a worker of this environment starts: its warm-up, if one runs, has finished."""
    with _lock:
        running = _running.get(str(python))
    if running is not None:
        running[1].join(timeout=_WAIT)


def stop(python: Path) -> None:
    """Before the environment of `python` is removed or rebuilt: its warm-up, if one runs, is
    stopped (it would write into the folder being removed)."""
    with _lock:
        running = _running.pop(str(python), None)
    if running is not None:
        _kill(*running)


def _kill(proc: subprocess.Popen[str], _: threading.Thread, tmp: str) -> None:
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
    shutil.rmtree(tmp, ignore_errors=True)


@atexit.register
def _stop_all() -> None:
    with _lock:
        running = list(_running.values())
        _running.clear()
    for each in running:
        _kill(*each)
