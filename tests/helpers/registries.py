"""Test registries: a copy of one shipped bundle's entry (recipes.toml), changed as a test
needs (another verify form, an instance removed, another exporter)."""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import tomli_w

REGISTRY = Path(__file__).resolve().parents[2] / "recipes.toml"


def registry_with(tmp_path: Path, name: str, change: Callable[[dict[str, Any]], None]) -> Path:
    """A registry holding the shipped registry's bundle `name`, changed by `change(raw)`."""
    raw = tomllib.loads(REGISTRY.read_text())["bundles"][name]
    change(raw)
    path = tmp_path / f"{name}.toml"
    path.write_text(tomli_w.dumps({"bundles": {name: raw}}))
    return path


EVIL_REGISTRY = """\
[bundles.evil]
files = ["evil.aimodel"]
dtype = "float32"
[bundles.evil.exporter]
converter = "0.4.0"
core = "1.0.0b1"
source = "test"
{trace}
"""


def evil_registry(tmp_path: Path, trace: str) -> Path:
    path = tmp_path / "recipes.toml"
    path.write_text(EVIL_REGISTRY.format(trace=trace))
    return path


def conv_transpose_registry(tmp_path: Path, channels: int = 4) -> Path:
    """One bundle exported with 0.4.1 holding one conv_transpose whose shape fix #40 changes;
    `channels` makes a probe no other test stored. Imported by the reliability tests."""
    registry = tmp_path / f"r{channels}.toml"
    registry.write_text(
        '[bundles.a]\nfiles = ["a"]\ndtype = "float32"\n'
        '[bundles.a.exporter]\nconverter = "0.4.1"\nsource = "test"\n'
        '[[bundles.a.instances]]\nkind = "conv_transpose"\ndtype = "float32"\nsource = "test"\n'
        f"params = {{ dim = 1, in_channels = {channels}, out_channels = 2, kernel = [4], "
        f"stride = [2], padding = [0], output_padding = [1], "
        f"input_shape = [1, {channels}, 11] }}\n"
    )
    return registry
