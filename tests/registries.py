"""Test registries: a copy of one shipped bundle's entry (recipes.toml), changed as a test
needs (another verify form, an instance removed, another exporter)."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomli_w

REGISTRY = Path(__file__).resolve().parent.parent / "recipes.toml"


def registry_with(tmp_path: Path, name: str, change: Callable[[dict[str, Any]], None]) -> Path:
    """A registry holding the shipped registry's bundle `name`, changed by `change(raw)`."""
    raw = tomllib.loads(REGISTRY.read_text())["bundles"][name]
    change(raw)
    path = tmp_path / f"{name}.toml"
    path.write_text(tomli_w.dumps({"bundles": {name: raw}}))
    return path
