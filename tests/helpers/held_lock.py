"""The shared torch's build lock held by another process, so that every environment a run
builds in a fresh cache fails to build when it is first needed (with `INVENTORY_LOCK_TIMEOUT`
short): a real build failure, reached without any network or broken package."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from oracle.catalog.releases import load_catalog

ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def torch_lock_held(cache: Path, timeout: int = 2) -> Iterator[str]:
    """Holds the lock in `cache` while the body runs; yields the one line a build that waited
    `timeout` seconds for it ends with."""
    torch = f"torch-{load_catalog().torch}"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom oracle.envs.environment import locked\n"
            f"with locked({torch!r}):\n    print('held', flush=True)\n    time.sleep(300)\n",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "INVENTORY_CACHE": str(cache)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        yield (f"environment {torch} is still locked by pid {holder.pid} (-c) after {timeout} s")
    finally:
        holder.kill()
        holder.wait()
