"""What the in-environment scripts (probe_worker.py, scan_worker.py, asset_worker.py,
program_worker.py) share: the request loop, per-request logs, one-line errors, and the MLIR
module under a program. Stdlib only (coreai is reached through the objects passed in).

Kept beside them so each script imports it without the rest of the project.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:500]


@contextlib.contextmanager
def logged(path: Path) -> Iterator[None]:
    """Send fd 1 and fd 2 (Python and native writes alike) to a log file for one request."""
    path.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


_placed: dict[str, Any] = {}  # where this process's files go now (`place`)


def place(where: dict[str, Any]) -> None:
    """Where this call's files go, as its client says with each call: the log taking fd 1 and
    fd 2, and the variables naming the scratch folders (TMPDIR, torch's). A kept worker serves
    runs of several stores one after another (`oracle.clients.worker_pool.shared_workers`), and
    each run's temp files and log belong in its own store. Changed only when they differ."""
    log = where.get("log")
    if log and log != _placed.get("log"):
        sys.stdout.flush()
        sys.stderr.flush()
        with open(log, "a") as file:
            os.dup2(file.fileno(), 1)
            os.dup2(file.fileno(), 2)
        _placed["log"] = log
    environ = where.get("environ") or {}
    if environ != _placed.get("environ"):
        os.environ.update(environ)  # native code (the runtime) reads them afresh too
        tempfile.tempdir = None  # Python's cached temp dir: read TMPDIR again
        if "environ" in _placed:  # moved, not started: the log says where to
            print(f"worker {os.getpid()}: temp folder now {environ.get('TMPDIR')}", file=sys.stderr)
        _placed["environ"] = environ


def serve(handle: Callable[[dict], dict]) -> None:
    """The JSON-lines loop: one request per stdin line, one answer per protocol line."""
    # Keep the real stdout for the protocol; everything else printed goes to stderr.
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            place(request.pop("place", None) or {})
            answer = handle(request)
        except Exception as exc:  # noqa: BLE001 - the worker survives a bad request
            answer = {
                "ok": False,
                "stage": "worker",
                "error": one_line(exc),
                "traceback": traceback.format_exc(),
            }
        answer["id"] = request.get("id")
        protocol.write(json.dumps(answer) + "\n")


def mlir_module(program: Any) -> Any:  # the environment's AIProgram and MLIR module
    """The MLIR module under an AIProgram: `_mlir_module` up to 1.0.0b2, `_module` from b3."""
    module = getattr(program, "_mlir_module", None)
    if module is None:
        module = program._module._mlir_module  # noqa: SLF001 - 1.0.0b3 wraps an authoring Module
    return module
