"""The `--json` documents are strict JSON (RFC 8259): no bare NaN or Infinity tokens."""

from __future__ import annotations

import json
import math

from inventory.output import envelope


def _strict(text: str):
    def reject(token: str) -> None:
        raise AssertionError(f"{token} is not JSON")

    return json.loads(text, parse_constant=reject)["result"]


def test_non_finite_measurements_are_written_as_strings():
    doc = {
        "maxabs_old_new": math.inf,
        "values": [-math.inf, math.nan, 0.5],
        "nested": {"ref_magnitude": 7.9, "none": None},
    }
    assert _strict(envelope("release-notes", doc)) == {
        "maxabs_old_new": "inf",
        "values": ["-inf", "nan", 0.5],
        "nested": {"ref_magnitude": 7.9, "none": None},
    }


def test_finite_documents_are_unchanged():
    doc = {"a": [1, 2.5, "x", True, None], "b": {"c": [[1, 4, 15]]}}
    assert _strict(envelope("release-notes", doc)) == doc
