"""What the terminal table says of a bundle besides its level, the reports built from its JSON
record say too: an exporter the registry does not record is "(assumed)", a measurement moved to
another runtime says which and why, and a load that depends on the exporter is that state, not
the oldest candidate's crash. Made-up documents shaped like the real records (only the
renderers are under test; tests/inventory/report/test_parity.py holds the same over the
session's real answers)."""

from __future__ import annotations

import json
from typing import Any

from pages import Page

from inventory.report.cyclonedx_report import render_cyclonedx
from inventory.report.html_report import render_html

B1, B2, B3 = (f"linux-cpu, coreai-core 1.0.0b{n}" for n in (1, 2, 3))
DIED = "linux-cpu, coreai-core 1.0.0b2: coreai-torch-0.4.2 worker died of SIGABRT (log: w.log)"


def _affected() -> dict[str, Any]:
    """`affected --fix 54` of a bundle with no recorded exporter, its probe measured on b1
    because the b2 worker aborted."""
    return {
        "fix": "54",
        "kind": "lowering",
        "title": "t",
        "ships_in": "0.4.2",
        "to": "0.4.2",
        "runtime": B1,
        "reexport": "optional",
        "bundles": [
            {
                "bundle": "lfm_audio",
                "exporter": "0.4.0",
                "exporter_recorded": "unknown",
                "exporter_source": "not stated",
                "instances": [],
                "verdict": "values-move",
                "reexport": "optional",
                "reason": "outputs move within tolerance",
                "chain": [],
                "runtime": B1,
                "deployment": None,
                "load": None,
                "remedies": [],
                "probes": [
                    {
                        "probe": "p",
                        "runtime": B1,
                        "runtime_attempts": [DIED],
                        "evidence": "/nowhere/batch_norm-0.4.0-0.4.2-x",
                        "verdict": "values-move",
                        "reexport": "optional",
                    }
                ],
            }
        ],
    }


def _outcomes(*found: str) -> list[dict[str, Any]]:
    return [
        {"core": f"1.0.0b{n}", "runtime": rt, "outcome": o, "deployment": n == 3}
        for n, (rt, o) in enumerate(zip((B1, B2, B3), found, strict=True), start=1)
    ]


def _plan() -> dict[str, Any]:
    """`plan`: a bundle whose exporter is not recorded, each candidate release's asset checked
    (0.4.0's crashes on b2 and b3, 0.4.1's loads everywhere)."""
    return {
        "to": "0.4.3",
        "bundles": [
            {
                "bundle": "lfm_audio",
                "exporter": "0.4.0",
                "exporter_assumed": True,
                "reexport": "inconclusive",
                "required": [],
                "optional": [],
                "not_affected": [],
                "ignored": [],
                "inconclusive": [],
                "unexplained": [],
                "load_explained_by": ["28"],
                "load": {
                    "verdict": "depends-on-exporter",
                    "reexport": "inconclusive",
                    "reason": "exporter not recorded",
                    "checks": [
                        {"exporter": "0.4.0", "outcomes": _outcomes("loads", "crashes", "crashes")},
                        {"exporter": "0.4.1", "outcomes": _outcomes("loads", "loads", "loads")},
                    ],
                },
            }
        ],
    }


def test_the_html_report_says_an_assumed_exporter_and_where_a_measurement_moved():
    for command, doc in (("affected", _affected()), ("plan", _plan())):
        page = Page.of(render_html(command, doc))
        assert "coreai-torch 0.4.0 (assumed)" in page.text, command
    page = Page.of(render_html("affected", _affected()))
    assert f"measured on {B1} after {DIED}" in page.text


def test_the_html_load_matrix_shows_a_load_that_depends_on_the_exporter_as_that():
    page = Page.of(render_html("plan", _plan()))
    row = page.raw[page.raw.index("<tr><td>lfm_audio</td>") :].split("</tr>")[0]
    # b1: every candidate's asset loads there, so it loads; b2 and b3: it depends
    assert '<td class="outcome-loads">loads</td>' in row
    assert row.count('class="outcome-depends-on-exporter"') == 2
    assert "depends on the exporter: 0.4.0 crashes, 0.4.1 loads" in row
    assert "depends on the exporter (deployment): 0.4.0 crashes, 0.4.1 loads" in row
    assert "outcome-crashes" not in row


def test_the_vex_says_an_assumed_exporter_and_where_a_measurement_moved():
    bom = json.loads(render_cyclonedx("affected", _affected()))
    [model] = [c for c in bom["components"] if c["name"] == "lfm_audio"]
    props = {p["name"]: p["value"] for p in model["properties"]}
    assert props["inventory:exporter"] == "0.4.0 (assumed)"
    # an assumed exporter is not stated as a dependency
    deps = {d["ref"]: d.get("dependsOn", []) for d in bom.get("dependencies", [])}
    assert "pkg:pypi/coreai-torch@0.4.0" not in deps.get("bundle:lfm_audio", [])
    [entry] = bom["vulnerabilities"]
    said = {(p["name"], p["value"]) for p in entry["properties"]}
    assert ("inventory:runtime", B1) in said
    assert ("inventory:measured_after", f"measured on {B1} after {DIED}") in said
