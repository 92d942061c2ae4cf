"""Every schema in schemas/ stands alone: a reader validating one command's output needs that one
file (the `json_schema` fixture validates every real output that way). A definition one schema
shares with another (plan's `verify` is verify's bundle: one answer) is bundled under the other's
name, `verify.<def>`, and must stay the same as the original."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing.exceptions import Unresolvable

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
FILES = sorted(SCHEMAS.glob("*.schema.json"))


def _refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                yield value
            else:
                yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_reference_of_a_schema_resolves_inside_it(path):
    schema = json.loads(path.read_text())
    Draft202012Validator.check_schema(schema)
    resolver = Draft202012Validator(schema)._resolver
    for ref in set(_refs(schema)):
        assert ref.startswith("#/"), f"{path.name}: {ref} points outside the file"
        try:
            resolver.lookup(ref)
        except Unresolvable as exc:  # pragma: no cover - the failure message
            pytest.fail(f"{path.name}: {ref} does not resolve: {exc}")


def _local(node: Any, prefix: str) -> Any:
    """A definition of another schema as bundled: its own references renamed `prefix.<def>`."""
    if isinstance(node, dict):
        return {
            k: (
                f"#/$defs/{prefix}.{v.rsplit('/', 1)[-1]}"
                if k == "$ref" and isinstance(v, str) and v.startswith("#/$defs/")
                else _local(v, prefix)
            )
            for k, v in node.items()
        }
    if isinstance(node, list):
        return [_local(v, prefix) for v in node]
    return node


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_bundled_definition_is_the_same_as_its_original(path):
    defs = json.loads(path.read_text()).get("$defs", {})
    for name, bundled in defs.items():
        if "." not in name:
            continue
        source, original = name.split(".", 1)
        theirs = json.loads((SCHEMAS / f"{source}.schema.json").read_text())["$defs"][original]
        assert bundled == _local(theirs, source), (
            f"{path.name}: $defs/{name} differs from {source}.schema.json's $defs/{original}: "
            "copy it again"
        )
