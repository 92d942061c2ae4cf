"""Housekeeping of the result store: what `inventory cache prune` removes."""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass

from oracle.store import code_digest, load_result, results_root, stored_code


@dataclass(frozen=True)
class Pruned:
    removed: tuple[str, ...]  # folder names, with why
    kept: int


def prune(older_than_days: float | None = None, everything: bool = False) -> Pruned:
    """Remove leftovers of interrupted runs, damaged results, results of older oracle code, and
    (with --older-than) results older than that; --all empties the store."""
    root = results_root()
    removed: list[str] = []
    kept = 0
    if not root.exists():
        return Pruned((), 0)
    code = code_digest()
    now = time.time()
    for folder in sorted(root.iterdir()):
        why = ""
        if everything:
            why = "--all"
        elif folder.name.startswith("."):
            why = "left by an interrupted run"
        elif load_result(folder) is None:
            why = "damaged or unreadable"
        else:
            if stored_code(folder) != code:
                why = "made by other oracle code"
            elif older_than_days is not None and (
                    now - (folder / "result.json").stat().st_mtime) > older_than_days * 86400:
                why = f"older than {older_than_days:g} days"
        if why:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(f"{folder.name}: {why}")
        else:
            kept += 1
    return Pruned(tuple(removed), kept)
