"""Housekeeping of the result store: what `inventory cache prune` removes."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from oracle import load_check
from oracle.store import RESULT_FILE, code_digest, load_result, results_root, stored_code


@dataclass(frozen=True)
class Pruned:
    removed: tuple[str, ...]  # folder names, with why
    kept: int


def _kind(folder: Path) -> tuple[Callable[[Path], bool], str | None]:
    """How to read a stored entry and the code digest it must carry: load checks have their
    own reader and digest; repair runs are a record of what was done (no digest to match)."""
    kind = folder.name.split("-", 1)[0]
    if kind == "load":
        return (lambda f: load_check.load_stored(f) is not None), load_check.code_digest()
    if kind == "repair":
        return (lambda f: (f / RESULT_FILE).is_file()), None
    return (lambda f: load_result(f) is not None), code_digest()


def prune(older_than_days: float | None = None, everything: bool = False) -> Pruned:
    """Remove leftovers of interrupted runs, damaged results, results of older oracle code, and
    (with --older-than) results older than that; --all empties the store."""
    root = results_root()
    removed: list[str] = []
    kept = 0
    if not root.exists():
        return Pruned((), 0)
    now = time.time()
    for folder in sorted(root.iterdir()):
        why = ""
        readable, code = _kind(folder)
        if everything:
            why = "--all"
        elif folder.name.startswith("."):
            why = "left by an interrupted run"
        elif not readable(folder):
            why = "damaged or unreadable"
        else:
            if code is not None and stored_code(folder) != code:
                why = "made by other oracle code"
            elif older_than_days is not None and (
                    now - (folder / RESULT_FILE).stat().st_mtime) > older_than_days * 86400:
                why = f"older than {older_than_days:g} days"
        if why:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"{folder.name}: {why}")
        else:
            kept += 1
    return Pruned(tuple(removed), kept)
