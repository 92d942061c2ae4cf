"""Converted sides: one probe converted under one release, stored once by what determines it.

A comparison takes its two sides from here (`executors/sides.py`), so a side shared by several
comparisons (0.4.2 in 0.4.1 -> 0.4.2 and in 0.4.2 -> 0.4.3, a probe asked for by a record and by
a sweep) is converted once. A side is keyed by the probe program (the spec, with its weights'
and inputs' digests and its pipeline: decomposition table, optimize), the release environment's
catalog pins (`key_identity`, known before it is built) and the code that converts it: the
probe worker, the probe builders it shares, and the construct module of its own kind only, so
that editing one construct re-converts that kind's sides alone.

Each side is a folder `sides/side-<kind>-<release>-<key>` holding what the converter made (aten
graph, emitted and shipped IR, the `.aimodel`, the log, a failure's traceback) and `result.json`,
its record with the manifest of every file: written, verified, taken in from the remote tier and
published to it by the result store's own functions, so a damaged side is refused (and
converted again) exactly as a damaged result is.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from oracle.compare.results import Side
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.infra.paths import cache_root, in_store, safe_name, store_root
from oracle.store.result_store import (
    SHAPE_ERRORS,
    install,
    key_identity,
    read_record,
    write_record,
)

SIDES = "sides"
PREFIX = "side-"
# The shape of a side's record: a change of it is a new key, not a misread record.
LAYOUT = 1
_ORACLE = Path(__file__).resolve().parents[1]
# What converts a side, beside the construct module of its kind (`side_code`): the worker's
# request loop and convert, the probe builders every kind shares, a checkpoint's reader.
_SIDE_CODE = (
    "workers/probe_worker.py",
    "workers/worker_io.py",
    "workers/probes.py",
    "workers/asset_probe.py",
    "infra/checkpoint.py",
    "compare/spec.py",
)


def sides_root() -> Path:
    return store_root() / SIDES


def sides_folder() -> Path:
    """The store's sides folder, checked to lie in the store once per store."""
    return _checked_sides(cache_root(), store_root())


@functools.lru_cache(maxsize=16)
def _checked_sides(cache: Path, store: Path) -> Path:
    del cache  # a key only: a changed INVENTORY_CACHE is checked afresh
    return in_store(store / SIDES)


@functools.cache
def side_code(construct: str) -> str:
    """The digest of the code a side of `construct` is converted by: the worker, the shared
    probe builders (`constructs/_*.py`, the package's registry) and `constructs/<kind>.py`
    (none for the asset probe, which the worker builds itself). Once per process."""
    constructs = _ORACLE / "constructs"
    shared = sorted(p for p in constructs.glob("*.py") if p.name.startswith("_"))
    own = constructs / f"{safe_name(construct)}.py"
    h = hashlib.sha256()
    for path in [_ORACLE / name for name in _SIDE_CODE] + shared + ([own] if own.is_file() else []):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def side_key(spec: ProbeSpec, env: Env) -> str:
    payload = {
        "layout": LAYOUT,
        "spec": spec.key_json(),
        "env": key_identity(env),
        "code": side_code(spec.construct),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def side_dir(spec: ProbeSpec, env: Env) -> Path:
    """Where `spec` converted under `env` is stored (names from data only sanitised)."""
    name = f"{PREFIX}{safe_name(spec.construct)}-{safe_name(env.converter)}-"
    return sides_folder() / f"{name}{side_key(spec, env)}"


def load_side(path: Path) -> Side | None:
    """A stored side with its files' absolute paths, or None if absent, unreadable or damaged
    (any file differing from the record's manifest): then it is converted again."""
    data = read_record(path)
    if data is None or data.get("layout") != LAYOUT:
        return None
    try:
        side = Side(**data["side"])
        files = {key: _absolute(value, path) for key, value in side.files.items()}
    except SHAPE_ERRORS:
        return None
    return replace(side, files=files)


def publish_side(
    side: Side, spec: ProbeSpec, work: Path, final: Path, replace_stored: bool = False
) -> Side:
    """Record the side converted in `work` and move it into place; another process's, if it got
    there first, is kept and returned (unless `replace_stored`: --no-cache, ours replaces it)."""
    files = {key: _relative(value, work) for key, value in side.files.items()}
    record: dict[str, Any] = {
        "layout": LAYOUT,
        "key": final.name,
        "code": side_code(spec.construct),
        "spec": spec.to_json(),
        "side": asdict(replace(side, files=files)),
        "failed": not side.ok,
    }
    write_record(work, record)
    theirs = install(work, final, load_side, replace_stored)
    if theirs is not None:
        return theirs
    return replace(side, files={key: _absolute(value, final) for key, value in files.items()})


def _relative(value: str, folder: Path) -> str:
    path = Path(value) if value else None
    if path is not None and path.is_absolute() and path.is_relative_to(folder):
        return str(path.relative_to(folder))
    return value


def _absolute(value: str, folder: Path) -> str:
    return str(folder / value) if value and not Path(value).is_absolute() else value
