"""sha256 over a set of files, each as its path relative to a root and its bytes: what a source
tree, an installed package or the oracle's own code is, for keys and identity checks."""

from __future__ import annotations

import hashlib
from pathlib import Path


def files_digest(root: Path, files: list[Path]) -> str:
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()
