"""Scratch folders in the store, never in the system temp directory: named `<pid>-<kind>-...`
under the store's `tmp/` like a worker's temp folder, removed when done, and a killed run's
reclaimed by the next run and by `cache prune` (`client.reclaim_temp`: its pid is gone)."""

from __future__ import annotations

import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from oracle.infra.paths import TEMP, cache_root, in_store


@contextmanager
def scratch(kind: str) -> Iterator[Path]:
    folder = in_store(cache_root() / TEMP / f"{os.getpid()}-{kind}-{secrets.token_hex(4)}")
    folder.mkdir(parents=True)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
