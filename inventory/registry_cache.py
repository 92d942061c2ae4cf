"""The parsed registry, kept under `$INVENTORY_CACHE/registry/` so that a warm answer does not
parse and check `recipes.toml` again (about a tenth of a warm `affected`).

An entry is keyed by everything a parse depends on: the file's content, the parser's code (its
modules' source) and the catalog it checks releases against. It is one file per registry path,
written whole to a temp file and renamed into place, so a concurrent reader sees the old entry
or the new one, never half of one; and its first line is the sha256 of the rest, so a damaged
entry is never read as a registry. An entry that cannot be read, is damaged or is keyed
otherwise is ignored and written again from the parse; a cache that cannot be written is no
cache at all, never an error. It is written only into a cache folder that exists (a store
that some run made): a run refused on a new store leaves nothing there.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import secrets
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from pathlib import Path
from typing import Any, TypeVar

from oracle.infra import cache_root

T = TypeVar("T")
FOLDER = "registry"
_FORMAT = 1
_HERE = Path(__file__).resolve().parent
_ORACLE = _HERE.parent / "oracle"
# The code a parse runs: the registry's reader and its types, the checks of every value, the
# pipeline, the construct kinds and the catalog's reader.
_PARSER = (
    _HERE / "registry.py",
    _HERE / "registry_cache.py",
    _ORACLE / "catalog" / "schema.py",
    _ORACLE / "catalog" / "releases.py",
    _ORACLE / "compare" / "spec.py",
)


@functools.cache
def parser_version() -> str:
    """The digest of the parser's code: an entry written by other code is never read."""
    h = hashlib.sha256()
    for path in (*_PARSER, *sorted((_ORACLE / "constructs").glob("*.py"))):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def entry_key(text: str, catalog: str) -> str:
    """What a parse depends on: the file's content, the parser's code, the catalog."""
    return hashlib.sha256(
        json.dumps([text, parser_version(), catalog]).encode(), usedforsecurity=False
    ).hexdigest()


def entry_path(registry: Path) -> Path:
    """One entry per registry file (its resolved path), replaced when the file changes."""
    name = hashlib.sha256(str(registry.resolve()).encode()).hexdigest()[:20]
    return cache_root() / FOLDER / f"{name}.json"


def cached(
    registry: Path, text: str, catalog: str, parse: Callable[[], list[T]], types: tuple[type, ...]
) -> list[T]:
    """The registry `text` (read from `registry`) as `parse` gives it: from the cache when an
    intact entry of the same key is there, else parsed and kept. `types`: the dataclasses a
    parsed registry is made of, its bundles' first (nothing else is built from an entry)."""
    key = entry_key(text, catalog)
    where = entry_path(registry)
    found = read_entry(where, key, types)
    if found is not None:
        return found
    bundles = parse()
    write_entry(where, key, bundles, types)
    return bundles


def read_entry(where: Path, key: str, types: tuple[type, ...]) -> list[Any] | None:
    """The bundles of an intact entry of `key`; None for anything else (absent, unreadable,
    damaged, of another key or format)."""
    try:
        digest, _, body = where.read_bytes().partition(b"\n")
        if hashlib.sha256(body).hexdigest().encode() != digest:
            return None
        doc = json.loads(body)
        if doc.get("format") != _FORMAT or doc.get("key") != key:
            return None
        bundles = _decoded(doc["bundles"], {t.__name__: t for t in types})
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None
    if not isinstance(bundles, list) or not all(isinstance(b, types[0]) for b in bundles):
        return None
    return bundles


def write_entry(where: Path, key: str, bundles: list[Any], types: tuple[type, ...]) -> None:
    """The entry, written whole and renamed into place; nothing when it cannot be (a value
    JSON cannot hold, a read-only cache): the next run parses again."""
    try:
        body = json.dumps(
            {"format": _FORMAT, "key": key, "bundles": _encoded(bundles, types)},
            separators=(",", ":"),
            allow_nan=True,
        ).encode()
    except (TypeError, ValueError):
        return
    digest = hashlib.sha256(body).hexdigest().encode()
    tmp = where.with_name(f".{where.name}.{os.getpid()}.{secrets.token_hex(4)}")
    if not where.parent.parent.is_dir():
        return  # the cache never makes the store: a refused run on a new one leaves nothing
    try:
        where.parent.mkdir(exist_ok=True)
        tmp.write_bytes(digest + b"\n" + body)
        tmp.replace(where)
    except OSError:
        with contextlib.suppress(OSError):  # no folder for it: then there is no temp file
            tmp.unlink(missing_ok=True)


# A value's JSON form: each dataclass, tuple, frozenset and dict tagged, so that the entry reads
# back as the same objects (a tuple is not a list, a frozenset not a sorted list).


def _encoded(value: Any, types: tuple[type, ...]) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        if type(value) not in types:
            raise TypeError(f"not a registry type: {type(value).__name__}")
        inner = {f.name: _encoded(getattr(value, f.name), types) for f in fields(value)}
        return {"t": type(value).__name__, "v": inner}
    if isinstance(value, tuple):
        return {"t": "tuple", "v": [_encoded(v, types) for v in value]}
    if isinstance(value, frozenset):
        return {"t": "frozenset", "v": sorted(_encoded(v, types) for v in value)}
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            raise TypeError("a table key that is not a string")
        return {"t": "dict", "v": {k: _encoded(v, types) for k, v in value.items()}}
    if isinstance(value, list):
        return [_encoded(v, types) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"a value JSON cannot hold: {type(value).__name__}")  # a TOML date


def _decoded(value: Any, types: dict[str, type]) -> Any:
    if isinstance(value, list):
        return [_decoded(v, types) for v in value]
    if not isinstance(value, dict):
        return value
    tag, inner = value["t"], value["v"]
    if tag == "tuple":
        return tuple(_decoded(v, types) for v in inner)
    if tag == "frozenset":
        return frozenset(_decoded(v, types) for v in inner)
    if tag == "dict":
        return {k: _decoded(v, types) for k, v in inner.items()}
    return types[tag](**{k: _decoded(v, types) for k, v in inner.items()})
