"""release-notes and sweep over real conversions (conv-transpose regimes, 0.4.1 -> 0.4.2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from answers import alone_entry

from inventory.policy import load_policy
from inventory.registry import load_registry
from inventory.release_notes import release_notes
from inventory.report.notes_report import notes_json, notes_markdown, sweep_json
from inventory.sweep import sweep
from oracle.catalog.fixes import load_fixes
from oracle.catalog.regimes import load_regimes
from oracle.catalog.releases import load_catalog

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden"


@pytest.fixture(scope="module")
def conv_regimes():
    return [r for r in load_regimes() if r.construct == "conv_transpose"]


def test_release_notes_answer_each_regime_with_evidence(env, conv_regimes):
    env("0.4.1")
    env("0.4.2")
    fixes = [f for f in load_fixes() if f.id == "40"]
    notes = release_notes(
        "0.4.1", "0.4.2", fixes, conv_regimes, load_registry(), load_catalog(), load_policy()
    )
    (fix,) = notes.fixes
    assert len(fix.outcomes) == len(conv_regimes)
    assert set(fix.bundles) == {"mimi", "sam3"}  # the registry's traced holders
    data = json.loads(notes_json(notes))["result"]
    # each regime's answer is the one measured and reviewed in the golden release notes (the
    # same conversions, through the CLI): the service gives it field for field
    golden = json.loads((GOLDEN / "release-notes" / "0.4.1-0.4.2.json").read_text())
    measured = golden["fixes"]["40"]["probes"]
    assert len(measured) == len(conv_regimes)
    for probe in data["fixes"][0]["probes"]:
        assert {
            **{k: probe[k] for k in ("emitted", "shipped", "outputs", "verdict", "runtime")},
            **alone_entry(probe),
        } == measured[probe["probe"]], probe["probe"]
    text = notes_markdown(notes)
    # the summary table first; each shipped IR diff named by its evidence folder, quoted only
    # with details (a release page stays readable)
    assert text.index("| record | library probe cases |") < text.index(
        "## #40 Fix conv transpose lowering"
    )
    assert "```diff" not in text and "/shipped.diff`" in text
    assert "```diff" in notes_markdown(notes, details=True)


def test_sweep_surfaces_a_change_that_no_fix_record_explains(env, conv_regimes):
    every = load_fixes()
    without_40 = [f for f in every if f.id != "40"]
    found = sweep("0.4.1", "0.4.2", without_40, conv_regimes, load_catalog(), load_policy())
    assert found.probed == len(conv_regimes)
    assert found.changed, "0.4.1 -> 0.4.2 changes conv transpose programs"
    assert found.unexplained == found.changed  # nothing else in 0.4.2 touches conv_transpose
    explained = sweep("0.4.1", "0.4.2", every, conv_regimes, load_catalog(), load_policy())
    assert not explained.unexplained
    assert all(f.explained_by == ("40",) for f in explained.changed)
    assert json.loads(sweep_json(explained))["result"]["unexplained"] == []


def test_release_notes_answer_asset_and_pipeline_records_with_the_asset_probe(env):
    env("0.4.0")
    env("0.4.1")
    fixes = [f for f in load_fixes() if f.id in ("28", "core-b2")]
    notes = release_notes(
        "0.4.0", "0.4.1", fixes, [], load_registry(), load_catalog(), load_policy()
    )
    by = {f.fix.id: f for f in notes.fixes}
    # #28 (asset): the 0.4.0 asset probe is refused by 1.0.0b2 and b3, the 0.4.1 one is not.
    asset = by["28"]
    assert not asset.outcomes and {a.spec.dtype for a, _b in asset.loads} == {"float32", "float16"}
    assert set(asset.bundles) == {"sam3", "lfm_audio"}  # exported before 0.4.1, or unknown
    for old, new in asset.loads:
        assert [o.outcome for o in old.outcomes] == ["loads", "crashes", "crashes"]
        assert [o.outcome for o in new.outcomes] == ["loads", "loads", "loads"]
    # core-b2 (pipeline): the asset probe's programs, compared like a lowering probe.
    pin = by["core-b2"]
    assert [o.regime.name for o in pin.outcomes] == ["asset-probe-float32", "asset-probe-float16"]
    # measured: the 1.0.0b2 pin leaves the asset probe's shipped programs identical (the golden
    # release notes 0.4.0 -> 0.4.1 pin the same answer through the CLI)
    assert [(o.result.emitted, o.result.shipped) for o in pin.outcomes] == [
        ("identical", "identical")
    ] * 2
    data = json.loads(notes_json(notes))["result"]
    (entry,) = [f for f in data["fixes"] if f["fix"] == "28"]
    assert entry["kind"] == "asset"
    assert "expected AICode versioned location" in entry["loads"][0]["old"]["outcomes"][1]["error"]
    assert (
        "A change of the asset: it concerns every bundle exported before 0.4.1"
        in notes_markdown(notes)
    )
