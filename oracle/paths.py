"""Where the oracle keeps environments, runs and cached results."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root() -> Path:
    """The user cache dir; INVENTORY_CACHE overrides it (tests and CI point it elsewhere)."""
    override = os.environ.get("INVENTORY_CACHE")
    if override:
        return Path(override).expanduser().resolve()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return (base / "inventory").resolve()


def envs_dir() -> Path:
    return cache_root() / "envs"


def runs_dir() -> Path:
    return cache_root() / "runs"
