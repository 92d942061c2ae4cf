"""Test doubles for the faults no real input provokes: the product reads no variable for them.

- `INVENTORY_WORKER_FAULT=crash|hang|gil`: the probe worker (`oracle.clients.worker_pool.Worker`)
runs
  `faulty_worker.py` instead of `oracle/workers/probe_worker.py`: the real worker's requests, but a
  `convert`
  first aborts natively, hangs asleep, or hangs in a native call that holds the GIL, where the
  real one converts.
- `INVENTORY_ASSET_FAULT=abort:N|abort-after-outputs:N` (with `INVENTORY_FAULT_DIR`, where the
  count is kept): the asset worker (`oracle.clients.worker_clients.AssetWorker`, every load check,
  scan,
  verify run and repair check) runs `flaky_asset_worker.py`: a runtime whose first N runs abort
  natively, before loading or after writing the outputs.
- `INVENTORY_FAULT=internal`: every command raises an unexpected exception where its work starts
  (the environment check `inventory.terminal.command` makes first), to show it ends as one line
  and exit code 4.
- `INVENTORY_FAULT=noisy`: where its work starts, every command behaves as a chatty library or
  engine does (Ray printing a dead raylet's log): it prints to `sys.stdout`, writes to file
  descriptor 1, starts a child that inherits it and prints, warns, and prints again at exit;
  none of it may reach the JSON document on standard output.

Both are read when they would act, so a test sets them for one call (`invoke(...,
INVENTORY_FAULT="internal")`, `monkeypatch.setenv`). `install()` puts the doubles in place: the
test process does it in `tests/conftest.py`; a process a test starts does it through
`sitecustomize.py` here, with `fault_env()` in its environment.
"""

from __future__ import annotations

import atexit
import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

DOUBLES = Path(__file__).resolve().parent
FAULTY_WORKER = DOUBLES / "faulty_worker.py"
FLAKY_ASSET_WORKER = DOUBLES / "flaky_asset_worker.py"
WORKER_FAULT = "INVENTORY_WORKER_FAULT"
ASSET_FAULT = "INVENTORY_ASSET_FAULT"
FAULT = "INVENTORY_FAULT"


class _ProbeWorkerScript:
    """`Worker.script` of the probe worker: the faulty double while INVENTORY_WORKER_FAULT is
    set, else the real script (the asset, scan and program workers name their own)."""

    def __init__(self, real: Path) -> None:
        self.real = real

    def __get__(self, obj: object, owner: type | None = None) -> Path:
        return FAULTY_WORKER if os.environ.get(WORKER_FAULT) else self.real


class _AssetWorkerScript:
    """`AssetWorker.script`: the flaky runtime's double while INVENTORY_ASSET_FAULT is set."""

    def __init__(self, real: Path) -> None:
        self.real = real

    def __get__(self, obj: object, owner: type | None = None) -> Path:
        return FLAKY_ASSET_WORKER if os.environ.get(ASSET_FAULT) else self.real


def _faulty(check_all: Callable[[], None]) -> Callable[[], None]:
    def check_all_or_fail() -> None:
        if os.environ.get(FAULT) == "internal":
            raise RuntimeError(f"injected fault [/x] ({FAULT}=internal, tests only)")
        if os.environ.get(FAULT) == "noisy":
            _noise()
        check_all()

    check_all_or_fail.fault_double = True  # type: ignore[attr-defined]
    return check_all_or_fail


NOISE = "injected noise"  # every line the noisy double prints holds this


def _noise() -> None:
    print(f"{NOISE}: print() to sys.stdout (a library)")
    sys.stdout.flush()
    os.write(1, f"{NOISE}: a write to file descriptor 1 (a native engine)\n".encode())
    subprocess.run(["sh", "-c", f"echo '{NOISE}: a child process inheriting stdout'"], check=False)
    warnings.warn(f"{NOISE}: a library warning", UserWarning, stacklevel=1)

    def at_exit() -> None:
        print(f"{NOISE}: print() at exit (Ray's shutdown)")
        sys.stdout.flush()
        os.write(1, f"{NOISE}: fd 1 at exit\n".encode())

    atexit.register(at_exit)


def install() -> None:
    """Put both doubles in place in this process (a process without the project, e.g. a worker
    inside a converter environment, has nothing to replace)."""
    try:
        from oracle.clients import worker_pool as client
    except ImportError:
        return
    if not isinstance(client.Worker.__dict__["script"], _ProbeWorkerScript):
        # a descriptor in the class's Path attribute: reading it still gives a Path
        client.Worker.script = _ProbeWorkerScript(  # type: ignore[assignment]
            client.Worker.__dict__["script"]
        )
    from oracle.clients import worker_clients

    asset = worker_clients.AssetWorker
    if not isinstance(asset.__dict__["script"], _AssetWorkerScript):
        asset.script = _AssetWorkerScript(asset.__dict__["script"])  # type: ignore[assignment]
    try:
        from inventory import terminal
    except ImportError:
        return
    if not getattr(terminal.check_all, "fault_double", False):
        terminal.check_all = _faulty(terminal.check_all)


def fault_env(**faults: str) -> dict[str, str]:
    """The environment of a process a test starts (`spawn`, `subprocess`) with these faults set
    and the doubles installed in it (this folder on PYTHONPATH: `sitecustomize.py`)."""
    path = os.pathsep.join(p for p in (str(DOUBLES), os.environ.get("PYTHONPATH", "")) if p)
    return {**faults, "PYTHONPATH": path}
