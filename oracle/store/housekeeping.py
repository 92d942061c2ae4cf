"""Housekeeping of the result store: what `inventory cache prune` removes (`--dry-run`: what it
would remove, nothing removed).

A temp folder is removed only when the lock its run holds on it (`store.lock_path`) can be
taken: a live run's folder is never touched, a dead run's (its lock released by the kernel) is.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oracle.clients.worker_pool import TEMP, reclaim_temp
from oracle.infra.paths import in_store
from oracle.store import load_records
from oracle.store.result_store import (
    LOCKS,
    RESULT_FILE,
    StoreError,
    code_digest,
    load_result,
    lock_path,
    results_root,
    stored_code,
    stored_failure,
)


def _read_only(folder: Path) -> bool:
    """A read-only file system (root passes os.access even there): statvfs says."""
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _rmtree(folder: Path) -> None:
    """Remove a folder; a file that cannot be removed is one line, not a silent leftover."""

    def failed(_fn: object, path: str, info: tuple[type, BaseException, object]) -> None:
        raise StoreError(
            f"cannot remove {path} from the store: {getattr(info[1], 'strerror', None) or info[1]}"
        )

    shutil.rmtree(folder, onerror=failed)  # `onerror`: Python 3.11 (onexc is 3.12's)


@dataclass(frozen=True)
class Pruned:
    removed: tuple[str, ...]  # folder names, with why
    kept: int
    in_use: tuple[str, ...] = ()  # temp folders a live run holds: never removed


def _remove_unless_held(folder: Path, dry_run: bool = False) -> bool:
    """Remove a temp folder unless a live run holds its lock; True if removed (`dry_run`: if
    it would be: the lock is taken and given back, nothing removed)."""
    lock = lock_path(folder)
    try:
        fd = os.open(lock, os.O_RDWR)
    except FileNotFoundError:  # no lock: left by a run that is gone (or by older code)
        if not dry_run:
            shutil.rmtree(folder, ignore_errors=True)
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    if dry_run:
        os.close(fd)  # closing releases the lock
        return True
    try:
        if folder.is_dir():
            shutil.rmtree(folder, ignore_errors=True)
        else:
            folder.unlink(missing_ok=True)
        lock.unlink(missing_ok=True)
    finally:
        os.close(fd)
    return True


def _orphan_locks(root: Path) -> None:
    """Lock files whose folder is gone and whose run is gone (a builder that has just created
    its lock file checks, once it holds it, that the file is still there)."""
    for lock in sorted((root.parent / LOCKS).glob("*.lock")):
        if (root / lock.name.removesuffix(".lock")).exists():
            continue
        try:
            fd = os.open(lock, os.O_RDWR)
        except FileNotFoundError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            lock.unlink(missing_ok=True)
        except BlockingIOError:
            pass
        finally:
            os.close(fd)


def _kind(folder: Path) -> tuple[Callable[[Path], bool], str | None]:
    """How to read a stored entry and the code digest it must carry: load checks have their own
    reader and digest; repair runs are a record of what was done, and whole-bundle checks are
    keyed on their code already (no digest to match)."""
    kind = folder.name.split("-", 1)[0]
    if kind == "load":
        return (lambda f: load_records.load_stored(f) is not None), load_records.code_digest()
    if kind in ("repair", "verify"):
        return (lambda f: (f / RESULT_FILE).is_file()), None
    return (lambda f: load_result(f) is not None), code_digest()


def _stored_failure(folder: Path) -> bool:
    return folder.name.split("-", 1)[0] not in ("repair", "verify") and stored_failure(folder)


def reclaim() -> list[str]:
    """What runs killed with SIGKILL left: their temp folders in the store (their locks died
    with them) and their workers' temp folders. Every run does this when it opens its session,
    and `cache prune` too. Returns what was removed, with why."""
    removed: list[str] = []
    root = results_root()
    if root.is_dir():
        # only the hidden names are temp folders: they are picked out before sorting (every
        # session opens with this, and a store holds thousands of results)
        hidden = sorted(name for name in os.listdir(root) if name.startswith("."))
        for folder in (root / name for name in hidden):
            if _remove_unless_held(folder):
                removed.append(f"{folder.name}: left by an interrupted run")
    removed += [f"{TEMP}/{name}: left by an interrupted run" for name in reclaim_temp()]
    return removed


def prune(
    older_than_days: float | None = None,
    everything: bool = False,
    failures: bool = False,
    dry_run: bool = False,
) -> Pruned:
    """Remove leftovers of interrupted runs (never a live run's temp folder), damaged results,
    results of older oracle code, and (with --older-than) results older than that; with
    --failures, results that record a failure; --all empties the store. `dry_run`: the same
    decisions, nothing removed."""
    root = results_root()
    removed: list[str] = []
    in_use: list[str] = []
    kept = 0
    if not root.is_dir():  # no results yet: a killed run's scratch may still be there
        return Pruned(
            tuple(f"{TEMP}/{name}: left by an interrupted run" for name in reclaim_temp()), 0
        )
    # A read-only store used to be reported as pruned (rmtree ignored its errors): say so first.
    if root.is_symlink():
        in_store(root)  # a results folder that links out of the store is never emptied
    if not dry_run and (not os.access(root, os.W_OK | os.X_OK) or _read_only(root)):
        raise StoreError(f"cannot prune the store {root}: it is read-only; nothing removed")
    now = time.time()
    for folder in sorted(root.iterdir()):
        if folder.name.startswith("."):
            if _remove_unless_held(folder, dry_run):
                removed.append(f"{folder.name}: left by an interrupted run")
            else:
                in_use.append(folder.name)
            continue
        why = ""
        readable, code = _kind(folder)
        recorded = stored_code(folder) if folder.is_dir() else None
        if everything:
            why = "--all"
        elif recorded is None and code is not None:
            why = "damaged or unreadable"
        elif code is not None and recorded != code:
            why = "made by other oracle code"
        elif not folder.is_dir() or not readable(folder):
            why = "damaged or unreadable"
        else:
            if failures and _stored_failure(folder):
                why = "records a failure"
            elif (
                older_than_days is not None
                and (now - (folder / RESULT_FILE).stat().st_mtime) > older_than_days * 86400
            ):
                why = f"older than {older_than_days:g} days"
        if why:
            if dry_run:
                pass
            elif folder.is_dir() and not folder.is_symlink():
                _rmtree(folder)
            else:
                folder.unlink(missing_ok=True)
            removed.append(f"{folder.name}: {why}")
        else:
            kept += 1
    if not dry_run:
        _orphan_locks(root)
    removed += [f"{TEMP}/{name}: left by an interrupted run" for name in reclaim_temp(dry_run)]
    return Pruned(tuple(removed), kept, tuple(in_use))
