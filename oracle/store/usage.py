"""What the store holds (`inventory cache list`) and what it takes on disk (`inventory cache du`).

Results live in `$INVENTORY_STORE/results` (the cache itself unless a shared store is set), one
folder per result, named by what made it: a probe comparison `<construct>-<old>-<new>-<key>`, a
load check `load-...`, a part of a whole-bundle check `verify-<part>-<bundle>-...`, a repair run
`repair-...`; the converted sides the comparisons are made over live beside them in
`$INVENTORY_STORE/sides`, one folder per probe and release, `side-<construct>-<release>-<key>`
(`oracle/store/sides.py`). A folder whose name starts with a dot is a run's temp folder (in
progress, or left by an interrupted run until the next run or `cache prune` reclaims it).
Environments, logs, runs and the workers' temp folders live in `$INVENTORY_CACHE`.

Sizes are disk usage (allocated blocks, as `du` counts them): a file hard-linked from two places
counts once (a side's files, linked into each comparison made over it, count with the side), a
symbolic link is not followed (an environment reached through one is another store's, and counts
there).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from oracle.clients.worker_pool import TEMP
from oracle.infra.paths import cache_root, envs_dir, runs_dir
from oracle.store.result_store import RESULT_FILE, results_root
from oracle.store.sides import PREFIX, sides_root

# What a result folder's first name component says it is, and its name in a listing.
KINDS = {
    "probe": "probe comparisons",
    "side": "converted sides (a probe under one release)",
    "load": "load checks",
    "verify": "whole-bundle check parts",
    "repair": "repair runs",
    "temp": "temp folders (a run in progress or interrupted)",
}
# Upper bounds in days of the age columns of `cache list` (the last is everything older).
AGES = (("today", 1.0), ("this week", 7.0), ("this month", 30.0), ("older", float("inf")))
DAY = 86400.0
BUILD_LOG = ".build.log"  # beside each environment: `envs/<name>.build.log`


@dataclass(frozen=True)
class Entry:
    """One stored result (or temp folder)."""

    name: str
    kind: str  # a key of KINDS
    part: str  # probe, side: the construct; verify: the part (build, side, pair, run, cut, ...)
    age_days: float  # since its result was written (the folder's own time if it has none)


@dataclass(frozen=True)
class KindSummary:
    kind: str
    count: int
    ages: tuple[int, ...]  # how many fall in each of AGES
    newest_days: float
    oldest_days: float

    @property
    def label(self) -> str:
        return KINDS[self.kind]


@dataclass(frozen=True)
class Listing:
    """`cache list`: every stored result by kind and age."""

    results: str  # the results folder
    entries: tuple[Entry, ...]

    def kinds(self) -> tuple[KindSummary, ...]:
        out = []
        for kind in KINDS:
            ages = [e.age_days for e in self.entries if e.kind == kind]
            if not ages:
                continue
            counts = tuple(
                sum(1 for a in ages if low <= a < high)
                for low, high in zip(
                    (0.0, *(b for _, b in AGES[:-1])), (b for _, b in AGES), strict=True
                )
            )
            out.append(KindSummary(kind, len(ages), counts, min(ages), max(ages)))
        return tuple(out)


def kind_of(name: str) -> tuple[str, str]:
    """(kind, part) of a result folder's name."""
    if name.startswith("."):
        return "temp", ""
    head, _, rest = name.partition("-")
    if name.startswith(PREFIX):
        return "side", rest.partition("-")[0]
    if head in ("load", "repair"):
        return head, ""
    if head == "verify":
        return "verify", rest.partition("-")[0]
    return "probe", head


def _age_days(folder: Path, now: float) -> float:
    for path in (folder / RESULT_FILE, folder):
        try:
            return max(0.0, (now - path.stat().st_mtime) / DAY)
        except OSError:
            continue
    return 0.0


def listing(now: float | None = None) -> Listing:
    """Every folder in the results and sides folders, by kind, with its age."""
    root = results_root()
    now = time.time() if now is None else now
    entries = []
    for folder in [*_folders(root), *_folders(sides_root())]:
        kind, part = kind_of(folder.name)
        entries.append(Entry(folder.name, kind, part, _age_days(folder, now)))
    return Listing(str(root), tuple(entries))


def _folders(root: Path) -> list[Path]:
    return sorted(root.iterdir()) if root.is_dir() else []


# ---- sizes --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Usage:
    """One line of `cache du`: a part of the store, or one item of it."""

    name: str
    path: str
    bytes: int
    count: int = 0  # results of a kind; 0 where counting means nothing
    note: str = ""  # e.g. "symbolic link to ...: counted where it points"
    items: tuple[Usage, ...] = ()


@dataclass(frozen=True)
class DiskUsage:
    """`cache du`: results by kind, environments, logs, runs, temp folders; and the total."""

    store: str  # $INVENTORY_STORE (or the cache)
    cache: str  # $INVENTORY_CACHE
    parts: tuple[Usage, ...]

    @property
    def total(self) -> int:
        return sum(p.bytes for p in self.parts)


class _Counter:
    """Disk usage of trees, each inode counted once over the whole count."""

    def __init__(self) -> None:
        self.seen: set[tuple[int, int]] = set()

    def size(self, path: Path) -> int:
        try:
            st = path.lstat()
        except OSError:
            return 0
        total = self._once(st)
        if stat.S_ISDIR(st.st_mode):
            total += sum(self._tree(path))
        return total

    def _once(self, st: os.stat_result) -> int:
        key = (st.st_dev, st.st_ino)
        if key in self.seen:
            return 0
        self.seen.add(key)
        return st.st_blocks * 512

    def _tree(self, folder: Path) -> Iterable[int]:
        try:
            with os.scandir(folder) as it:
                children = list(it)
        except OSError:
            return
        for child in children:
            try:
                st = child.stat(follow_symlinks=False)
            except OSError:
                continue
            yield self._once(st)
            if stat.S_ISDIR(st.st_mode):
                yield from self._tree(Path(child.path))


def _environments(folder: Path, counter: _Counter) -> tuple[Usage, ...]:
    """One item per environment, its build log counted with it."""
    children = sorted(folder.iterdir()) if folder.is_dir() else []
    names = {c.name for c in children}
    out = []
    for child in children:
        if child.name.startswith(".") or child.name.removesuffix(BUILD_LOG) in names - {child.name}:
            continue  # a build lock (an empty file), or a log counted with its environment
        size = counter.size(child) + counter.size(folder / f"{child.name}{BUILD_LOG}")
        note = f"symbolic link to {os.readlink(child)}" if child.is_symlink() else ""
        out.append(Usage(child.name, str(child), size, note=note))
    return tuple(out)


def _results(counter: _Counter, root: Path, name: str) -> Usage:
    sizes: dict[str, list[int]] = {k: [0, 0] for k in KINDS}
    for folder in _folders(root):
        kind, _ = kind_of(folder.name)
        sizes[kind][0] += 1
        sizes[kind][1] += counter.size(folder)
    items = tuple(Usage(KINDS[k], "", b, n) for k, (n, b) in sizes.items() if n)
    own = counter.size(root) if root.is_dir() else 0  # the folder itself: its children are seen
    return Usage(
        name,
        str(root),
        sum(i.bytes for i in items) + own,
        sum(i.count for i in items),
        items=items,
    )


def disk_usage() -> DiskUsage:
    """The store's parts and their sizes."""
    counter = _Counter()
    # sides first: their files, linked into each comparison made over them, count there
    sides = _results(counter, sides_root(), "sides")
    parts = [_results(counter, results_root(), "results"), sides]
    envs = envs_dir()
    items = _environments(envs, counter)
    parts.append(
        Usage(
            "environments",
            str(envs),
            sum(i.bytes for i in items) + (counter.size(envs) if envs.is_dir() else 0),
            len(items),
            items=items,
        )
    )
    for name, folder in (
        ("logs", cache_root() / "logs"),
        ("runs", runs_dir()),
        ("temp", cache_root() / TEMP),
    ):
        parts.append(Usage(name, str(folder), counter.size(folder)))
    return DiskUsage(str(results_root().parent), str(cache_root()), tuple(parts))
