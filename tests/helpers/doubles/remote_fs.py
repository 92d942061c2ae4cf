"""A test double of the remote tier's file system (`RemoteStore.fs`): the real fsspec file system,
wrapped to record every read asked of it, and, where a test needs what no real bucket does on
demand, to read slowly or to grow an object between its listing and its read. Nothing of the
product reads a variable for it.

- In a test's own process: `RecordingFileSystem(store.fs)` put in place of `store.fs`; it also
  keeps the most reads and listings it had in progress at once (`most_at_once`: 1 for reads made
  one after the other).
- In a process a test starts: `INVENTORY_REMOTE_FAULT=slow:SECONDS` with `fault_env()` (this
  folder's `sitecustomize.py`) wraps the file system of every remote tier the run connects, each
  path of a batched read then taking SECONDS; `INVENTORY_FAULT_DIR`, if set, gets a file
  `remote-read` when the first read starts.
"""

from __future__ import annotations

import contextlib
import math
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

REMOTE_FAULT = "INVENTORY_REMOTE_FAULT"


class RecordingFileSystem:
    """The real file system `inner`, each read recorded as (path, bytes asked for): an
    unbounded read (a whole object) asks for infinity."""

    def __init__(
        self,
        inner: Any,
        delay: float = 0.0,
        grow: dict[str, int] | None = None,
        started: Path | None = None,
    ) -> None:
        self.inner = inner
        self.reads: list[tuple[str, float]] = []
        self.listed: list[str] = []
        self.delay = delay  # seconds per path of a read (a slow backend)
        self.grow = dict(grow or {})  # path -> bytes appended just before its first read
        self.started = started
        self.most_at_once = 0
        self._now = 0
        self._guard = threading.Lock()

    @contextlib.contextmanager
    def _in_progress(self) -> Iterator[None]:
        """A read or listing under way (its delay included), counted while it lasts."""
        with self._guard:
            self._now += 1
            self.most_at_once = max(self.most_at_once, self._now)
        try:
            yield
        finally:
            with self._guard:
                self._now -= 1

    def __getattr__(self, name: str) -> Any:  # everything not a read: the real file system's
        return getattr(self.inner, name)

    def _reading(self, path: str, start: int | None, end: int | None) -> None:
        if self.started is not None and not self.started.exists():
            self.started.write_text("reading\n")
        extra = self.grow.pop(path, 0)
        if extra:  # the object grows after it was listed, before it is read
            with open(path, "ab") as handle:
                handle.truncate(os.path.getsize(path) + extra)
        asked = math.inf if end is None else end - (start or 0)
        with self._guard:  # reads may come from several threads at once
            self.reads.append((path, asked))
        if self.delay:
            time.sleep(self.delay)

    def cat_file(
        self, path: str, start: int | None = None, end: int | None = None, **kw: Any
    ) -> Any:
        with self._in_progress():
            self._reading(path, start, end)
            return self.inner.cat_file(path, start=start, end=end, **kw)

    def cat_ranges(self, paths: list[str], starts: Any, ends: Any, **kw: Any) -> Any:
        with self._in_progress():
            for i, path in enumerate(paths):
                start = starts[i] if isinstance(starts, list) else starts
                end = ends[i] if isinstance(ends, list) else ends
                self._reading(path, start, end)
            return self.inner.cat_ranges(paths, starts, ends, **kw)

    def cat(self, path: Any, *args: Any, **kw: Any) -> Any:
        with self._in_progress():
            for p in path if isinstance(path, list) else [path]:
                self._reading(str(p), None, None)
            return self.inner.cat(path, *args, **kw)

    def open(self, path: str, *args: Any, **kw: Any) -> Any:
        with self._in_progress():
            self._reading(path, None, None)
            return self.inner.open(path, *args, **kw)

    def find(self, path: str, *args: Any, **kw: Any) -> Any:
        with self._in_progress():
            with self._guard:
                self.listed.append(path)
            return self.inner.find(path, *args, **kw)

    def largest_read(self) -> float:
        return max((asked for _, asked in self.reads), default=0)


def install() -> None:
    """`INVENTORY_REMOTE_FAULT=slow:SECONDS`: every remote tier this process connects reads
    slowly (the product's `connect`, wrapped)."""
    fault = os.environ.get(REMOTE_FAULT, "")
    if not fault.startswith("slow:"):
        return
    try:
        from oracle.store import remote
    except ImportError:
        return
    delay = float(fault.split(":", 1)[1])
    folder = os.environ.get("INVENTORY_FAULT_DIR")
    started = Path(folder) / "remote-read" if folder else None
    real = remote.connect

    def slow_connect(url: str) -> Any:
        made = real(url)
        made.fs = RecordingFileSystem(made.fs, delay=delay, started=started)
        return made

    remote.connect = slow_connect
