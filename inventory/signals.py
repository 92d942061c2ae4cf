"""SIGTERM is handled like Ctrl-C: the run stops where it is and cleans up the same way.

The default SIGTERM kills the process at once, leaving its temp folder in the store and its
workers running. The handler raises `SystemExit(143)` instead, which unwinds exactly as a
KeyboardInterrupt does (`oracle.executors.comparison` stops the workers,
`oracle.store.result_store.building` removes its
temp folder, the session closes its pools), and the process exits with 143.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType

from inventory.errors import ExitCode
from oracle.clients import kill_all


def _terminate(signum: int, frame: FrameType | None) -> None:
    # Once is enough: a second SIGTERM during the cleanup must not interrupt the cleanup.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.stderr.write("error: stopped by SIGTERM; nothing answered\n")
    # Every worker now, calls in progress included: unwinding alone waits for the pool threads,
    # which wait for their worker's job to end (7.5 s for a probe, minutes for a bundle).
    kill_all()
    raise SystemExit(ExitCode.TERMINATED)


def stop_on_sigterm() -> None:
    """Install the handler (signals can only be handled in the main thread)."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminate)
