"""The reports a team looks at and hands to tools: the HTML report rendered in a real browser
(Debian's Chromium, driven by Playwright), and the CycloneDX 1.6 ML-BOM with VEX validated by
cyclonedx-python-lib, both from the session's real answers (tests/golden: the matrix)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from answers import BARE, CHECKED, on_store, stores
from browser import chromium, render
from cli import invoke
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator

from inventory.report.cyclonedx_report import plan_bom

pytestmark = pytest.mark.slow
_STATE = {
    "required": "exploitable",
    "optional": "not_affected",
    "inconclusive": "in_triage",
    "unchecked": "in_triage",
    "no": "not_affected",
}


def _format(args: tuple[str, ...], fmt: str, out: Path, store: str = BARE) -> Path:
    """The CLI writing one report to a file, on one of the suite's stores (in this process:
    `on_store`)."""
    proc = invoke(*args, "-f", fmt, "-o", str(out), "-q", **on_store(store))
    assert "Traceback" not in proc.stderr, proc.stderr
    assert out.is_file() and out.stat().st_size > 0, proc.stderr
    return out


def _artifact(name: str, tmp_path: Path) -> Path:
    """Where a test keeps what a person looks at afterwards (CI: the run's report folder)."""
    folder = Path(os.environ.get("INVENTORY_TEST_ARTIFACTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)
    return folder / name


def _vex(bom: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """(fix id, bundle) -> its vulnerability entry; each pair once."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for v in bom.get("vulnerabilities", []):
        [target] = v["affects"]
        key = (v["id"], target["ref"].removeprefix("bundle:"))
        assert key not in out, key
        out[key] = v
    return out


def _fix_ref(fix: str) -> str:
    return f"apple/coreai-torch#{fix}" if fix.isdigit() else fix


def test_plan_as_cyclonedx_gives_every_answer_its_vex_state(matrix, tmp_path):
    plan = matrix.run_cli(("plan", "--to", "0.4.3")).data["result"]
    out = _format(("plan", "--to", "0.4.3"), "cyclonedx", tmp_path / "plan.cdx.json")
    text = out.read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    bom = json.loads(text)
    assert bom["specVersion"] == "1.6"
    vex = _vex(bom)
    levels = {
        "required": "required",
        "inconclusive": "inconclusive",
        "unchecked": "unchecked",
        "optional": "optional",
        "not_affected": "no",
    }
    expected = {
        (_fix_ref(i["fix"]), b["bundle"]): level
        for b in plan["bundles"]
        for key, level in levels.items()
        for i in b[key]
    }
    # every finding of every bundle is there, in the state its level maps to, and nothing else
    assert set(vex) == set(expected)
    for key, level in expected.items():
        assert vex[key]["analysis"]["state"] == _STATE[level], key
        assert vex[key]["analysis"]["detail"].startswith(f"{level}: "), key
    sam3 = vex[("apple/coreai-torch#28", "sam3")]
    assert sam3["analysis"]["state"] == "exploitable"
    assert sam3["source"]["url"] == "https://github.com/apple/coreai-torch/pull/28"
    # mimi holds conv transposes whose program #40 leaves the same: reached by no change
    mimi = vex[("apple/coreai-torch#40", "mimi")]["analysis"]
    assert (mimi["state"], mimi["justification"]) == ("not_affected", "code_not_reachable")
    parakeet = vex[("apple/coreai-torch#40", "parakeet")]["analysis"]
    assert (parakeet["state"], parakeet["justification"]) == ("not_affected", "code_not_present")


def test_an_ignored_finding_keeps_its_measured_state_and_says_why():
    """An ignore file changes the decision, not what was measured (a made-up plan document:
    only the renderer is under test)."""
    item = {
        "fix": "28",
        "title": "t",
        "kind": "asset",
        "verdict": "does-not-load",
        "reason": "r",
        "remedies": [],
        "evidence": [],
        "ignored": {"reason": "we ship b1 only", "expires": None, "level": "required"},
    }
    doc = {
        "to": "0.4.3",
        "bundles": [
            {
                "bundle": "b",
                "exporter": "0.4.0",
                "reexport": "no",
                "required": [],
                "inconclusive": [],
                "optional": [],
                "not_affected": [],
                "ignored": [item],
            }
        ],
    }
    [v] = list(plan_bom(doc).vulnerabilities)
    assert v.analysis.state.value == "exploitable"
    assert {r.value for r in v.analysis.responses} == {"update", "will_not_fix"}
    assert "ignored: we ship b1 only" in v.analysis.detail


def test_scan_as_cyclonedx_lists_each_bundle_with_its_files(matrix, tmp_path):
    # the asset coreai-torch 0.4.0 writes for sam3's load probe (the matrix's load checks)
    asset = max(
        (stores()[BARE] / "results").glob("load-0.4.0-float16-*/export-0.4.0/model.aimodel"),
        key=lambda p: p.stat().st_mtime,
        default=None,
    )
    assert asset is not None
    bundle = tmp_path / "probe_float16.aimodel"
    shutil.copytree(asset, bundle)
    out = _format(("scan", str(bundle)), "cyclonedx", tmp_path / "scan.cdx.json")
    text = out.read_text()
    assert JsonStrictValidator(SchemaVersion.V1_6).validate_str(text) is None
    bom = json.loads(text)
    [model] = [c for c in bom["components"] if c["type"] == "machine-learning-model"]
    files = {c["name"]: c["hashes"][0]["content"] for c in model["components"]}
    assert files == {
        p.relative_to(bundle).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in bundle.rglob("*")
        if p.is_file()
    }
    props = {p["name"]: p["value"] for p in model["properties"]}
    assert props["inventory:loads:linux-cpu, coreai-core 1.0.0b3"] == "crashes"
    # not loading where it is deployed is a finding: a vulnerability entry, urgent
    [entry] = bom["vulnerabilities"]
    assert entry["affects"] == [{"ref": model["bom-ref"]}] and entry["id"] == "asset-load"
    assert (entry["analysis"]["state"], entry["ratings"][0]["severity"]) == ("exploitable", "high")
    assert "coreai-core 1.0.0b3 crashes (SIGABRT)" in entry["analysis"]["detail"]
    [deps] = [d for d in bom["dependencies"] if d["ref"] == model["bom-ref"]]
    assert "pkg:pypi/coreai-torch@0.4.0" in deps["dependsOn"]


@pytest.mark.skipif(
    chromium() is None and not os.environ.get("CI"),
    reason="Debian's chromium is not installed (scripts/browser installs it)",
)
@pytest.mark.parametrize(
    "args,store",
    [(("plan", "--to", "0.4.3"), BARE), (("verify", "mimi", "--to", "0.4.3"), CHECKED)],
    ids=["plan-0.4.3", "verify-mimi-0.4.3"],
)
def test_the_html_report_renders_in_a_real_browser(matrix, tmp_path, args, store):
    doc = matrix.run_cli(args, store).data["result"]
    name = "-".join(a.lstrip("-") for a in args)
    page = _format(args, "html", _artifact(f"{name}.html", tmp_path), store)
    shot = _artifact(f"{name}.png", tmp_path)
    seen = render(page, shot)
    assert seen.console_errors == [] and seen.requests == []  # self-contained, no errors
    bundles = [b["bundle"] for b in doc["bundles"]]
    assert sorted(seen.sections) == sorted(f"bundle-{b}" for b in bundles)
    levels = [b["reexport"] if args[0] != "verify" else b["status"] for b in doc["bundles"]]
    for level in set(levels):
        assert f"{levels.count(level)} {level}" in seen.summary, seen.summary
    assert all(w > 0 and h > 0 for w, h in seen.plots), seen.plots
    # whatever the bundle's level: at 0.4.3 the bundles #54 moves are `unchecked` (a pipeline
    # record the asset probe answered alone), their moved probes still drawn
    moved = [
        b
        for b in doc["bundles"]
        if any(i.get("verdict") == "values-move" for i in b.get("optional", []))
    ]
    if args[0] == "plan":  # every bundle whose program moves has its probes drawn
        assert moved and len(seen.plots) >= len(moved)
    assert shot.stat().st_size > 10_000
