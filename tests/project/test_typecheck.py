"""The type check's configuration (pyproject.toml [tool.mypy]) covers what it says it does:
every script's module is held to annotated functions as the packages are, and nothing is
ignored wholesale. `scripts/test` runs mypy itself, before the tests."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _mypy() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]


def test_every_script_is_checked_as_strictly_as_the_packages():
    strict = [o for o in _mypy()["overrides"] if o.get("disallow_untyped_defs")]
    assert len(strict) == 1
    modules = set(strict[0]["module"])
    assert {"inventory", "inventory.*", "oracle", "oracle.*"} <= modules
    scripts = {p.stem for p in (ROOT / "scripts").glob("*.py")}
    assert scripts - modules == set(), "add these scripts to the strict override"
    assert modules - scripts - {"inventory", "inventory.*", "oracle", "oracle.*"} == set()


def test_nothing_is_ignored_wholesale():
    config = _mypy()
    assert not config.get("ignore_errors") and not config.get("ignore_missing_imports")
    for override in config["overrides"]:
        assert not override.get("ignore_errors"), override["module"]
        if override.get("ignore_missing_imports"):
            # only packages outside the project: the converters, and untyped third parties
            assert not any(
                m.split(".")[0] in ("inventory", "oracle", "tests") for m in override["module"]
            ), override["module"]
