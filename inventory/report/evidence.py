"""Evidence named as a reader of another machine can use: by its id in the result store.

An answer's evidence is a folder of the store (`results/<id>`) or a file inside one; the id (the
path below `results/`) names it on every machine that holds the same store, where an absolute
path names it on this one only.
"""

from __future__ import annotations

import json
from pathlib import Path, PurePath
from typing import Any


def evidence_id(path: str) -> str:
    """`/home/u/.cache/inventory/results/conv_transpose-0.4.1-0.4.3-7e64` ->
    `conv_transpose-0.4.1-0.4.3-7e64`; a path outside a store is given as it is."""
    parts = PurePath(path).parts
    if "results" in parts:
        at = len(parts) - 1 - parts[::-1].index("results")
        rest = parts[at + 1 :]
        if rest:
            return str(PurePath(*rest))
    return path


def evidence_dir(ref: str) -> Path | None:
    """The folder of a piece of evidence on this machine: an absolute path as given, an id under
    this store's results; None when neither is here (the report says so)."""
    from oracle.store import results_root

    path = Path(ref)
    if not path.is_absolute():
        path = results_root() / ref
    return path if path.exists() else None


def normalised_ir(folder: Path) -> tuple[str, str] | None:
    """The old and the new shipped program of a probe comparison, normalised (as compared)."""
    old, new = folder / "shipped.old.normalised.mlir", folder / "shipped.new.normalised.mlir"
    if not (old.is_file() and new.is_file()):
        return None
    return _bounded(old), _bounded(new)


def _bounded(path: Path, limit: int = 1 << 20) -> str:
    with open(path, encoding="utf-8", errors="replace") as handle:
        return handle.read(limit)


def measured_tensors(folder: Path) -> list[tuple[str, Any, Any, Any]]:
    """(output name, reference, old, new) arrays a probe comparison measured on its runtime,
    from the tensors it kept (empty when it kept none: an identical program is never run)."""
    from safetensors.numpy import load_file

    data = read_json(folder / "result.json")
    files = ((data or {}).get("measurement") or {}).get("files") or {}
    try:
        ref = load_file(folder / files["reference"])
    except (KeyError, OSError, ValueError):
        return []
    sides = {}
    for side in ("old", "new"):
        try:
            sides[side] = load_file(folder / files[side])
        except (KeyError, OSError, ValueError):
            sides[side] = {}
    return [
        (name, ref[name], sides["old"].get(name), sides["new"].get(name)) for name in sorted(ref)
    ]


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
