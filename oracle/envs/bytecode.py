"""The bytecode of new environments, written in the background while the run goes on.

uv installs no bytecode, and a worker's first export imports about 2,500 modules, 1,200 of them
only when `torch.export` first runs (torch._dynamo, sympy, mpmath): without their bytecode every
worker start compiled them from source (a start and first export: 6.3 s of CPU, 3.6 s with it).
So the bytecode of what a worker imports is written once, by warm-ups that import it: compiling
every file instead (pip's way, uv's --compile-bytecode) costs four times the CPU.

Most of those modules are torch's, and every environment holds one torch (`held_torch.py`):
its bytecode is written beside its files and serves every environment. So the held torch is
warmed up once, as soon as it is installed (`oracle/workers/warm_up_torch.py`: a tiny module
exported and decomposed, by this interpreter), while the converter environments are being built.
What is each environment's own (the converter, coreai-core, its sympy and numpy) is compiled by
its first worker, which runs with bytecode writing on: a warm-up of each environment ran beside
the others as each was ready, compiled the same torch files again (three environments built
side by side: three times), and held its worker back for an import that worker then did again.
Only an environment built ahead of time (`inventory envs build`), whose first worker may be
days away, is warmed up whole (`oracle/workers/warm_up.py`: a tiny probe converted, saved and
run), after the held torch's warm-up.

A warm-up does not hold an environment back: it is ready at once, and a worker starts as soon
as its environment is, beside the held torch's warm-up if that still runs (it uses what the
warm-up has written and compiles the rest itself: waiting for it held every worker back by
20 s and more, measured); only an environment's own warm-up (built ahead of time) is waited
for. A run that needs no worker (every answer stored) does not wait: a warm-up
still running when the process exits is stopped, and what it wrote stays (each file is written
atomically); workers write the rest (`oracle/clients/worker_pool.py`).
"""

from __future__ import annotations

import atexit
import os
import shutil
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path

from oracle.infra.scratch_dirs import scratch_environ, warm_up_dir

# in-environment scripts, run by an environment's python (never imported here)
_WARM_UP = Path(__file__).resolve().parent.parent / "workers" / "warm_up.py"
_WARM_UP_TORCH = Path(__file__).resolve().parent.parent / "workers" / "warm_up_torch.py"

# A worker waits this long at most for its environment's warm-up (it takes seconds).
_WAIT = 600.0


@dataclass
class _WarmUp:
    """One warm-up: its process once started, the thread that starts and waits for it."""

    tmp: str
    thread: threading.Thread | None = None
    proc: subprocess.Popen[str] | None = None
    stopped: threading.Event = field(default_factory=threading.Event)


_lock = threading.Lock()
# keyed by the environment's python, or the held torch's folder
_running: dict[str, _WarmUp] = {}


def environ(tmp: Path | str) -> dict[str, str]:
    """The environment of a process run in a converter environment (the warm-up, a worker):
    bytecode written (the machine may say otherwise: PYTHONDONTWRITEBYTECODE), and its own
    TMPDIR, where the runtime compiles assets and torch keeps its scratch."""
    env = scratch_environ(Path(tmp))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def start_held(torch_site: Path, log: Path) -> None:
    """Warm up the held torch at `torch_site` in the background (by this interpreter, which has
    torch's own requirements: the project depends on torch); its outcome goes to `log`."""
    _launch(
        str(torch_site),
        [sys.executable, "-I", str(_WARM_UP_TORCH), str(torch_site)],
        log,
        "bytecode of the held torch's imports written",
        after=None,
    )


def start(python: Path, log: Path, held: Path | None = None) -> None:
    """Warm up the environment of `python` in the background, once the warm-up of the torch it
    holds (`held`, its folder) has finished if one runs; its outcome goes to `log`."""
    _launch(
        str(python),
        [str(python), "-I", str(_WARM_UP)],
        log,
        "bytecode of a worker's imports written",
        after=None if held is None else str(held),
    )


def _launch(key: str, cmd: list[str], log: Path, what: str, after: str | None) -> None:
    warm = _WarmUp(str(warm_up_dir()))  # the store's, like every scratch folder

    def run() -> None:
        if after is not None:
            _wait(after)
        with _lock:
            if warm.stopped.is_set():
                return
            try:
                warm.proc = subprocess.Popen(
                    cmd,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                    env=environ(warm.tmp),
                    start_new_session=True,  # stopped as a group at exit, with what it starts
                )
            except OSError:
                shutil.rmtree(warm.tmp, ignore_errors=True)
                return  # no interpreter: the worker's environment check reports it
        proc = warm.proc
        said = (proc.communicate()[0] or "").strip().splitlines()
        shutil.rmtree(warm.tmp, ignore_errors=True)
        # the script's last line: how many modules it compiled, or where it stopped
        line = f"{what} (exit {proc.returncode})" + (f" {said[-1]}" if said else "")
        try:
            with open(log, "a") as handle:
                handle.write(f"# {line}\n")
        except OSError:
            pass  # the log is a record, never needed

    warm.thread = threading.Thread(target=run, name=f"warm-up {key}", daemon=True)
    with _lock:
        _running[key] = warm
    warm.thread.start()


def wait(python: Path, held: Path | None = None) -> None:
    """Before a command that built environments ahead of time ends (`warmed_up`): the warm-up
    of the torch the environment of `python` holds (`held`, its folder) and its own, if they
    run, have finished (they would be stopped at its exit)."""
    if held is not None:
        _wait(str(held))
    _wait(str(python))


def before_worker(python: Path) -> None:
    """Before a worker of the environment of `python` starts: its environment's own warm-up, if
    one runs (one built ahead of time), has finished. The held torch's is not waited for: in a
    run it began when the torch was installed, and workers that waited for it started 22 to 24 s
    after their environments were ready, one core idle or the run's share of a loaded machine
    one process's (`scripts/bench --cold`'s timeline); started beside it, a worker finds the
    bytecode it has written and compiles what it has not yet."""
    _wait(str(python))


def _wait(key: str) -> None:
    with _lock:
        running = _running.get(key)
    if running is not None and running.thread is not None:
        running.thread.join(timeout=_WAIT)


def stop(python: Path) -> None:
    """Before the environment of `python` (or the held torch at a folder) is removed or
    rebuilt: its warm-up, if one runs, is stopped (it would write into the folder being
    removed), and one still waiting to start never starts."""
    with _lock:
        running = _running.pop(str(python), None)
        if running is not None:
            running.stopped.set()
    if running is not None:
        _kill(running)


def _kill(warm: _WarmUp) -> None:
    proc = warm.proc
    if proc is not None and proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            pass
    shutil.rmtree(warm.tmp, ignore_errors=True)


@atexit.register
def _stop_all() -> None:
    with _lock:
        running = list(_running.values())
        _running.clear()
        for each in running:
            each.stopped.set()
    for each in running:
        _kill(each)
