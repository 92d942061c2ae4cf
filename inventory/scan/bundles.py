"""Finding bundles and reading what needs no core: `metadata.json` as JSON, `main.mlirb` checked
against `main.hash`."""

from __future__ import annotations

import hashlib
import json
import os
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from inventory.scan.model import BundleError, ScanError

BYTECODE_MAGIC = b"ML\xefR"
# metadata.json is a few hundred bytes; anything this large or this deep is not one, and would
# exhaust the parser (RecursionError) or the report that echoes it.
METADATA_MAX_BYTES = 16 << 20
METADATA_MAX_DEPTH = 64


def is_bundle(path: Path) -> bool:
    return path.is_dir() and (
        path.suffix == ".aimodel"
        or (path / "main.mlirb").exists()
        or (path / "metadata.json").exists()
    )


def find_bundles(paths: list[Path]) -> list[Path]:
    """Each path is a bundle folder or a folder holding bundles (at any depth)."""
    if not paths:
        raise ScanError("give a bundle folder or a folder of bundles")
    found: list[Path] = []
    for path in paths:
        if not path.exists():
            raise ScanError(f"{path}: no such file or directory")
        if not path.is_dir():
            raise ScanError(f"{path}: not a folder (a bundle is a .aimodel folder)")
        if is_bundle(path):
            found.append(path)
            continue
        inner = []
        for root, dirs, _files in os.walk(path):
            here = Path(root)
            for d in sorted(dirs):
                if is_bundle(here / d):
                    inner.append(here / d)
            dirs[:] = sorted(d for d in dirs if not is_bundle(here / d))
        if not inner:
            raise ScanError(f"{path}: no .aimodel bundle in this folder")
        found += sorted(inner)
    seen: set[Path] = set()
    unique = []
    for p in found:
        if p.resolve() not in seen:
            seen.add(p.resolve())
            unique.append(p)
    return unique


def outside_roots(paths: list[Path], found: list[Path]) -> dict[Path, Path]:
    """Bundles found inside a scanned folder that resolve outside it (a symlinked bundle folder
    pointing elsewhere), each with the folder it leaves. A path given on the command line is
    its own root: the user named it."""
    roots = [p.resolve() for p in paths]
    out = {}
    for bundle in found:
        real = bundle.resolve()
        if not any(real == r or real.is_relative_to(r) for r in roots):
            out[bundle] = next((p for p in paths if bundle.is_relative_to(p)), paths[0])
    return out


def check_contained(bundle: Path) -> None:
    """Nothing in the bundle is a symlink that leaves it: the scan reads (and the core parser
    opens) only the bundle's own files, never what a link points to elsewhere (`main.mlirb ->
    /etc/shadow`)."""
    real = bundle.resolve()
    for root, dirs, files in os.walk(bundle):  # never descends into a symlinked folder
        here = Path(root)
        for name in dirs + files:
            path = here / name
            if path.is_symlink() and not _inside(path, real):
                raise BundleError(
                    f"{path}: is a symlink out of the bundle; a bundle is read "
                    f"only from its own folder"
                )


def _inside(path: Path, real: Path) -> bool:
    """A symlink's target lies in the bundle; a loop has none (Python 3.11 raises
    RuntimeError for one: it was exit 4)."""
    try:
        return path.resolve().is_relative_to(real)
    except (RuntimeError, OSError):
        raise BundleError(
            f"{path}: is a symlink loop; a bundle is read only from its own files"
        ) from None


def _contained_file(bundle: Path, name: str) -> Path:
    path = bundle / name
    if path.is_symlink() and not _inside(path, bundle.resolve()):
        raise BundleError(
            f"{path}: is a symlink out of the bundle; a bundle is read only from its own folder"
        )
    return path


# ---- reading what needs no core ----------------------------------------------------------------


def core_of_producer(producer: str | None) -> str | None:
    if not producer:
        return None
    found = re.search(r"coreai-core\s+(\S+)", producer)
    return found.group(1) if found else None


def iso_date(raw: Any) -> str | None:
    """creationDate as an ISO date; a number out of datetime's range is a BundleError."""
    if isinstance(raw, int | float) and not isinstance(raw, bool):
        try:
            return datetime.fromtimestamp(raw, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        except (OverflowError, ValueError, OSError):
            raise BundleError(
                f"creationDate {raw!r} is not a date (a timestamp out of range)"
            ) from None
    if not isinstance(raw, str) or not raw:
        return None
    for fmt in ("%Y%m%dT%H%M%SZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(raw, fmt).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            continue
    return raw


def _not_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest (iteratively: the value may be deep)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack += [(v, level + 1) for v in (item.values() if isinstance(item, dict) else item)]
    return deepest


# What the scanner reads from metadata.json, and the JSON types each may have (absent or null
# is always allowed). bool is excluded from the numbers: json gives True for `true`.
_FIELDS: dict[str, tuple[type, ...]] = {
    "producer": (str,),
    "creationDate": (str, int, float),
    "assetVersion": (str, int, float),
    "creatorDefinedMetadata": (dict,),
}
_JSON_TYPES = {
    str: "a string",
    int: "a number",
    float: "a number",
    dict: "an object",
    list: "an array",
    bool: "a boolean",
}


def _check_fields(path: Path, data: dict[str, Any]) -> None:
    for key, types in _FIELDS.items():
        value = data.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, types):
            wanted = " or ".join(dict.fromkeys(_JSON_TYPES[t] for t in types))
            raise BundleError(
                f"{path}: {key} must be {wanted}, not "
                f"{_JSON_TYPES.get(type(value), type(value).__name__)}"
            )
    try:
        iso_date(data.get("creationDate"))
    except BundleError as exc:
        raise BundleError(f"{path}: {exc}") from None


def read_metadata(bundle: Path) -> dict[str, Any]:
    """metadata.json as a JSON object of the expected shape; every failure is a BundleError
    whose line never quotes the file's bytes."""
    path = _contained_file(bundle, "metadata.json")
    if not path.exists() and not path.is_symlink():
        raise BundleError(f"{bundle}: not a bundle: no metadata.json")
    if not path.is_file():
        raise BundleError(f"{path}: not a regular file")
    try:
        if path.stat().st_size > METADATA_MAX_BYTES:
            raise BundleError(
                f"{path}: larger than {METADATA_MAX_BYTES >> 20} MiB, not a bundle's metadata"
            )
        data = json.loads(path.read_bytes(), parse_constant=_not_json_constant)
    except OSError as exc:
        raise BundleError(f"{path}: cannot read: {exc.strerror or type(exc).__name__}") from None
    except UnicodeDecodeError as exc:
        raise BundleError(
            f"{path}: not UTF-8 text (byte {exc.start}): truncated or corrupt"
        ) from None
    except json.JSONDecodeError as exc:
        raise BundleError(
            f"{path}: not valid JSON ({exc.msg}, line {exc.lineno} column "
            f"{exc.colno}): truncated or corrupt"
        ) from None
    except ValueError as exc:  # NaN, Infinity
        raise BundleError(f"{path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise BundleError(f"{path}: nested too deeply to be a bundle's metadata") from None
    if not isinstance(data, dict):
        raise BundleError(f"{path}: not a JSON object")
    if _depth(data) > METADATA_MAX_DEPTH:
        raise BundleError(
            f"{path}: nested deeper than {METADATA_MAX_DEPTH} levels, not a bundle's metadata"
        )
    _check_fields(path, data)
    return data


def check_program(bundle: Path) -> str:
    """`main.mlirb` is MLIR bytecode and matches `main.hash` when the bundle has one."""
    program = _contained_file(bundle, "main.mlirb")
    if not program.exists() and not program.is_symlink():
        raise BundleError(f"{bundle}: not a bundle: no main.mlirb")
    if not program.is_file():
        raise BundleError(f"{program}: not a regular file")
    digest = hashlib.sha256()
    size = 0
    with open(program, "rb") as handle:
        head = handle.read(4)
        digest.update(head)
        size += len(head)
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
            size += len(chunk)
    if size == 0:
        raise BundleError(f"{program}: empty file")
    if head != BYTECODE_MAGIC:
        # the bytes themselves are never quoted: the file may be anything
        raise BundleError(f"{program}: not MLIR bytecode (no MLIR bytecode magic number)")
    stored = _contained_file(bundle, "main.hash")
    if not stored.is_file():
        return "no main.hash: program integrity not checked"
    expected = stored.read_bytes()
    if expected != digest.digest():
        raise BundleError(
            f"{program}: does not match main.hash ({size} bytes, sha256 "
            f"{digest.hexdigest()[:16]}..., stored {expected.hex()[:16]}...): "
            f"truncated or modified"
        )
    return f"main.mlirb matches main.hash (sha256 {digest.hexdigest()[:16]}..., {size} bytes)"


def file_digests(bundle: Path) -> list[dict[str, Any]]:
    """Each regular file of a (contained) bundle with its size and SHA-256, in path order; a
    symlink inside the bundle is digested once, where it lies."""
    out = []
    for root, dirs, files in os.walk(bundle):  # never descends into a symlinked folder
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            if not path.is_file():
                continue
            digest, size = hashlib.sha256(), 0
            with open(path, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
                    size += len(chunk)
            out.append(
                {
                    "path": path.relative_to(bundle).as_posix(),
                    "bytes": size,
                    "sha256": digest.hexdigest(),
                }
            )
    return out
