"""Helpers of the tests that compare one answer across result stores (a Ray cluster's, a bucket's
drivers'): a fresh store that borrows the built environments, and an answer read with the
store's own paths and a run-dependent key left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oracle.infra.paths import envs_dir


def borrowing_store(tmp: Path, name: str) -> Path:
    """A fresh result store (an INVENTORY_CACHE) that borrows the built environments."""
    store = tmp / name
    store.mkdir()
    (store / "envs").symlink_to(envs_dir())
    return store


def answer_in(stdout: str, store: Path) -> Any:
    """The JSON a run printed, its store's paths named `<store>`."""
    return json.loads(stdout.replace(str(store), "<store>"))


def without(data: Any, key: str) -> Any:
    """`data` with every `key` left out, at any depth (`cached`: read back or made now)."""
    if isinstance(data, dict):
        return {k: without(v, key) for k, v in data.items() if k != key}
    if isinstance(data, list):
        return [without(v, key) for v in data]
    return data
