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


def is_bundle(path: Path) -> bool:
    return path.is_dir() and (path.suffix == ".aimodel" or (path / "main.mlirb").exists()
                              or (path / "metadata.json").exists())


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


# ---- reading what needs no core ----------------------------------------------------------------


def core_of_producer(producer: str | None) -> str | None:
    if not producer:
        return None
    found = re.search(r"coreai-core\s+(\S+)", producer)
    return found.group(1) if found else None


def iso_date(raw: Any) -> str | None:
    if isinstance(raw, int | float):
        return datetime.fromtimestamp(raw, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if not isinstance(raw, str) or not raw:
        return None
    for fmt in ("%Y%m%dT%H%M%SZ", "%Y-%m-%dT%H:%M:%SZ"):
        try:
            return datetime.strptime(raw, fmt).strftime("%Y-%m-%dT%H:%M:%SZ")
        except ValueError:
            continue
    return raw


def read_metadata(bundle: Path) -> dict[str, Any]:
    path = bundle / "metadata.json"
    if not path.exists() and not path.is_symlink():
        raise BundleError(f"{bundle}: not a bundle: no metadata.json")
    if not path.is_file():
        raise BundleError(f"{path}: not a regular file")
    try:
        data = json.loads(path.read_bytes())
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise BundleError(f"{path}: not valid JSON ({exc.msg}, line {exc.lineno} column "
                          f"{exc.colno}): truncated or corrupt") from None
    if not isinstance(data, dict):
        raise BundleError(f"{path}: not a JSON object")
    return data


def check_program(bundle: Path) -> str:
    """`main.mlirb` is MLIR bytecode and matches `main.hash` when the bundle has one."""
    program = bundle / "main.mlirb"
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
        raise BundleError(f"{program}: not MLIR bytecode (starts {head!r})")
    stored = bundle / "main.hash"
    if not stored.is_file():
        return "no main.hash: program integrity not checked"
    expected = stored.read_bytes()
    if expected != digest.digest():
        raise BundleError(f"{program}: does not match main.hash ({size} bytes, sha256 "
                          f"{digest.hexdigest()[:16]}..., stored {expected.hex()[:16]}...): "
                          f"truncated or modified")
    return f"main.mlirb matches main.hash (sha256 {digest.hexdigest()[:16]}..., {size} bytes)"

