"""A VEX consumer tells the levels apart: required, optional, inconclusive and no each read as
their own state, justification, severity and response in the CycloneDX 1.6 document (validated
by cyclonedx-python-lib's strict validator as it is written); and a bundle a scan finds not
loading where it is deployed is a vulnerability entry, not a property alone. Made-up documents
shaped like the real records (only the renderer is under test; tests/inventory/report/
test_reports.py and test_parity.py hold the same over the session's real answers)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from inventory.report.cyclonedx_report import render_cyclonedx

# level -> (state, justification, severity, responses), as docs/reports.md maps them
EXPECTED = {
    "required": ("exploitable", None, "high", ["update"]),
    "optional": ("not_affected", "requires_configuration", "low", []),
    "inconclusive": ("in_triage", None, "unknown", []),
    # told apart from inconclusive by `inventory:level`: neither is a pass
    "unchecked": ("in_triage", None, "unknown", []),
    "no": ("not_affected", "code_not_reachable", "none", []),
}


def _item(fix: str, verdict: str, reason: str) -> dict[str, Any]:
    return {
        "fix": fix,
        "kind": "lowering",
        "title": f"record {fix}",
        "verdict": verdict,
        "reason": reason,
        "remedies": [],
        "evidence": [],
        "runtime": "linux-cpu, coreai-core 1.0.0b2",
    }


def _plan() -> dict[str, Any]:
    """One bundle with a finding at each level."""
    return {
        "to": "0.4.3",
        "bundles": [
            {
                "bundle": "b",
                "exporter": "0.4.1",
                "exporter_assumed": False,
                "reexport": "required",
                "required": [_item("1", "values-move", "beyond tolerance")],
                "optional": [_item("2", "values-move", "within tolerance 0.01")],
                "inconclusive": [_item("3", "inconclusive", "a worker died")],
                "unchecked": [_item("5", "asset-probe-same-program", "the asset probe alone")],
                "not_affected": [_item("4", "same-program", "the same program")],
                "ignored": [],
                "unexplained": [],
                "load": None,
            }
        ],
    }


def _analysis(text: str) -> dict[str, dict[str, Any]]:
    """Fix id -> its entry."""
    bom = json.loads(text)
    return {v["id"].rsplit("#", 1)[-1]: v for v in bom["vulnerabilities"]}


@pytest.mark.parametrize(
    "level,fix",
    [("required", "1"), ("optional", "2"), ("inconclusive", "3"), ("unchecked", "5"), ("no", "4")],
)
def test_each_level_reads_as_its_own_state_and_severity(level: str, fix: str):
    text = render_cyclonedx("plan", _plan())
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    entry = _analysis(text)[fix]
    state, justification, severity, responses = EXPECTED[level]
    analysis = entry["analysis"]
    assert analysis["state"] == state
    assert analysis.get("justification") == justification
    assert analysis.get("response", []) == responses
    [rating] = entry["ratings"]
    assert (rating["severity"], rating["method"], rating["source"]["name"]) == (
        severity,
        "other",
        "inventory",
    )
    assert analysis["detail"].startswith(f"{level}: ")
    props = {p["name"]: p["value"] for p in entry["properties"]}
    assert props["inventory:level"] == level


def test_an_optional_finding_says_why_it_is_not_urgent():
    entries = _analysis(render_cyclonedx("plan", _plan()))
    optional, required = entries["2"], entries["1"]
    # the four levels other than unchecked are four different readings (unchecked reads as
    # inconclusive does, in triage), the two a consumer acts on most of all
    readings = {
        (e["analysis"]["state"], e["analysis"].get("justification"), e["ratings"][0]["severity"])
        for e in entries.values()
    }
    assert len(readings) == 4
    assert optional["analysis"]["state"] != required["analysis"]["state"]
    assert "within tolerance 0.01" in optional["analysis"]["detail"]
    assert "not urgent" in optional["analysis"]["detail"]
    assert "tolerance" in optional["ratings"][0]["justification"]


def _scan(not_loading: bool) -> dict[str, Any]:
    outcome = "crashes" if not_loading else "loads"
    loads = [
        {"core": "1.0.0b1", "runtime": "rt b1", "outcome": "loads", "error": None, "signal": None},
        {
            "core": "1.0.0b3",
            "runtime": "rt b3",
            "outcome": outcome,
            "error": "error: expected AICode versioned location" if not_loading else None,
            "signal": "SIGABRT" if not_loading else None,
        },
    ]
    return {
        "bundles": [
            {
                "name": "a.aimodel",
                "path": "/x/a.aimodel",
                "error": None,
                "files": [{"path": "main.mlirb", "sha256": "0" * 64}],
                "exporter": "coreai-torch 0.4.0",
                "producer_core": "1.0.0b1",
                "weights": {},
                "entries": [],
                "loads": loads,
            }
        ],
        "not_loading": [
            {
                "bundle": "a.aimodel",
                "path": "/x/a.aimodel",
                "deployment": ["1.0.0b3"],
                "deployment_source": "the registry",
                "runtimes": [{"core": "1.0.0b3", "outcome": "crashes"}],
            }
        ]
        if not_loading
        else [],
    }


def test_a_scanned_bundle_that_does_not_load_where_it_is_deployed_is_a_vulnerability():
    text = render_cyclonedx("scan", _scan(not_loading=True))
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    [entry] = json.loads(text)["vulnerabilities"]
    assert entry["id"] == "asset-load"
    assert entry["affects"] == [{"ref": "bundle:a.aimodel"}]
    assert (entry["analysis"]["state"], entry["ratings"][0]["severity"]) == ("exploitable", "high")
    assert entry["analysis"]["response"] == ["update"]
    detail = entry["analysis"]["detail"]
    assert "(the registry)" in detail
    assert (
        "coreai-core 1.0.0b3 crashes (SIGABRT): error: expected AICode versioned location" in detail
    )
    assert "1.0.0b1" not in detail  # the runtime it loads on is no part of the finding


def test_a_scanned_bundle_that_loads_everywhere_is_no_vulnerability():
    assert "vulnerabilities" not in json.loads(render_cyclonedx("scan", _scan(not_loading=False)))
