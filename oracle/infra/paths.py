"""Where the oracle keeps environments, runs and cached results, and how a name from data
becomes a path inside the store.

A registry or fix field reaches a path only through `safe_name` (one path component, no `..`, no
separator), and every folder a result is built in is checked by `in_store` to lie inside
`$INVENTORY_CACHE`: a bundle named `../../../../outside/evil` or an instance dtype of
`../../x` can never make the tool write outside its store.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Any

from oracle.errors import OracleUserError
from oracle.infra.store_setting import local_setting

# What a name from data keeps; anything else becomes "_". 80 characters keep a folder name
# (name, releases, a 20-digit key) under any file system's 255-byte limit.
_UNSAFE = re.compile(r"[^A-Za-z0-9_.+-]+")
_NAME_MAX = 80
TEMP = "tmp"  # the store's folder of temp folders (workers', scratch), each named by its pid


class StorePathError(OracleUserError):
    """A path built from data would leave the store (a defect guarded against, or a hostile
    registry); one line for the user, nothing written."""


# Resolved once per raw setting: a warm answer asks for the store's root about three times per
# stored result it reads (thousands of times for a plan), and each resolve() is a system call per
# path component. Keyed by the setting itself, so a changed INVENTORY_CACHE, INVENTORY_STORE or
# HOME is resolved afresh; a failure is not remembered (an exception is never cached).
@functools.lru_cache(maxsize=64)
def _resolved(raw: str, name: str) -> Path:
    """A store path from the environment, resolved; StorePathError (one line) for a symlink
    loop or a path that cannot be resolved."""
    try:
        return Path(raw).expanduser().resolve()
    except (RuntimeError, OSError) as exc:  # Python 3.11 raises RuntimeError for a loop
        raise StorePathError(f"{name} {raw}: cannot be a store ({exc})") from None


def cache_root() -> Path:
    """The user cache dir; INVENTORY_CACHE overrides it (tests and CI point it elsewhere)."""
    env = os.environ
    return _cache_root(env.get("INVENTORY_CACHE"), env.get("XDG_CACHE_HOME"), env.get("HOME"))


@functools.lru_cache(maxsize=64)
def _cache_root(override: str | None, xdg: str | None, home: str | None) -> Path:
    # every variable the answer depends on is an argument (Path.home() reads HOME)
    if override:
        return _resolved(override, "INVENTORY_CACHE")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return _resolved(str(base / "inventory"), "the cache")


def store_root() -> Path:
    """Where results live: the folder `--store` or INVENTORY_STORE names (a folder several
    drivers share, e.g. on a shared file system: each publishes by rename under a lock, so two
    writers keep one result), else the cache itself, also when they name a URL (the remote tier
    stands behind the cache's results: `oracle/store/remote.py`). Environments, logs and runs
    stay in the cache."""
    override = local_setting()
    if override:
        return _resolved(override, "INVENTORY_STORE")
    return cache_root()


def envs_dir() -> Path:
    return cache_root() / "envs"


def runs_dir() -> Path:
    return cache_root() / "runs"


def safe_name(text: str) -> str:
    """`text` as one path component: letters, digits and `_.+-` kept, any other run of
    characters (a separator, a space) and any `..` one `_`, no leading dot (so never `.`, `..`
    or a hidden name), at most 80 characters."""
    name = re.sub(r"_+", "_", re.sub(r"\.{2,}", "_", _UNSAFE.sub("_", text)))
    name = name.lstrip(".")[:_NAME_MAX]
    return name or "_"


def in_store(path: Path) -> Path:
    """`path` if it lies inside the store once resolved (symlinks and `..` followed), else
    StorePathError: the last guard before anything is written there."""
    root, results = cache_root(), store_root()
    try:
        resolved = path.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError for a symlink loop
        raise StorePathError(f"refusing to write {path}: a symlink loop in the store") from None
    if not (resolved.is_relative_to(root) or resolved.is_relative_to(results)):
        where = f"{root} (INVENTORY_CACHE)" + (
            f" or {results} (INVENTORY_STORE)" if results != root else ""
        )
        raise StorePathError(f"refusing to write {path}: outside the store {where}")
    return path


def inside(path: Path, root: Path) -> Path:
    """`path` if it resolves inside `root` (resolved too: a store whose folder is a symlink is
    the user's choice), else StorePathError: the guard of code that empties, replaces or locks
    a folder whose name came from data."""
    try:
        resolved, base = path.resolve(), root.resolve()
    except (RuntimeError, OSError):  # Python 3.11 raises RuntimeError for a symlink loop
        raise StorePathError(f"refusing to touch {path}: a symlink loop in the store") from None
    if not resolved.is_relative_to(base) or resolved == base:
        raise StorePathError(f"refusing to touch {path}: it lies outside {root}")
    return path


def moved(value: Any, prefixes: dict[str, str]) -> Any:
    """Every string of a JSON value that is one of `prefixes`' paths, or lies under one, moved
    to the path it maps to (a worker's answer names the files it wrote; a stored part's record
    names its own under a placeholder)."""
    if isinstance(value, dict):
        return {k: moved(v, prefixes) for k, v in value.items()}
    if isinstance(value, list):
        return [moved(v, prefixes) for v in value]
    if isinstance(value, str):
        # the longest first: a folder inside another maps by its own entry
        for old, new in sorted(prefixes.items(), key=lambda kv: -len(kv[0])):
            if value == old or value.startswith(old + "/"):
                return new + value[len(old) :]
    return value
