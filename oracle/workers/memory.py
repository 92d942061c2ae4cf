"""A worker process's peak resident memory over one request (Linux /proc; stdlib only, so any
worker imports it, inside a converter environment or out)."""

from __future__ import annotations

import contextlib
from pathlib import Path


def reset_peak() -> None:
    """Start the peak reading here: writing '5' to clear_refs resets VmHWM."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")


def peak_mb() -> float | None:
    """The peak resident set (VmHWM) since the process started or `reset_peak`, in MiB."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None
