"""What both in-environment scripts (worker.py, scan_worker.py) need: stdlib only.

Kept beside them so each script imports it without the rest of the project.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    first = text[0] if text else ""
    return f"{type(exc).__name__}: {first}"[:500]


@contextlib.contextmanager
def logged(path: Path):
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
