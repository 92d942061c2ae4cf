"""The tool's version is its package metadata's (pyproject.toml's `version`): `inventory
--version` prints it and every JSON envelope carries it."""

from __future__ import annotations

import importlib.metadata
import json
import tomllib
from pathlib import Path

from cli import invoke

ROOT = Path(__file__).resolve().parents[3]
DECLARED = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_installed_metadata_is_the_declared_version():
    assert importlib.metadata.version("inventory") == DECLARED
    assert DECLARED == "0.2.0"


def test_version_prints_the_metadata_version():
    ran = invoke("--version")
    assert ran.returncode == 0 and ran.stdout == f"inventory {DECLARED}\n"


def test_the_json_envelope_carries_the_version_even_for_an_error(json_schema):
    ran = invoke("plan", "--json")  # no --to: a usage error, answered as the error envelope
    assert ran.returncode == 2
    document = json.loads(ran.stdout)
    json_schema(document)
    assert document["version"] == DECLARED and document["schema_version"] == 1


def test_the_version_follows_the_metadata_not_a_copy_in_code(monkeypatch):
    from inventory import version as module
    from inventory.output import envelope

    module.version.cache_clear()
    monkeypatch.setattr(module.importlib.metadata, "version", lambda name: "9.8.7")
    try:
        assert json.loads(envelope("plan", {"to": "0.4.3"}))["version"] == "9.8.7"
        assert invoke("--version").stdout == "inventory 9.8.7\n"
    finally:
        module.version.cache_clear()
