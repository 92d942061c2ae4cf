"""One answer: a record the whole program answers reads the drift `verify` measured, and a
record the asset probe answered alone says so. Both halves of the matrix (tests/golden/answers.py):
the suite's store without checks, and the one that holds every bundle's check (`plan --to V
--verify` for every V, then the plans and the pipeline records read them).
"""

from __future__ import annotations

from typing import Any

import answers
import pytest

LEVELS = ("required", "inconclusive", "unchecked", "optional", "not_affected", "ignored")
PLANS = [e for e in answers.checked_entries() if e.section == "plan"]
PIPELINE = [e for e in answers.checked_entries() if e.section == "affected"]


def _items(bundle: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    """fix -> (its level's key, the plan item)."""
    return {i["fix"]: (level, i) for level in LEVELS for i in bundle[level]}


def _reexport(level_key: str) -> str:
    return "no" if level_key == "not_affected" else level_key


@pytest.mark.parametrize("entry", PLANS, ids=lambda e: e.key)
def test_every_record_a_stored_check_credits_has_verifys_level_for_its_step(entry, matrix):
    """For every bundle and every record its stored check credits with a region, the plan's
    item for the record is at the level `verify` gives that record's step, with its verdict:
    the item and the whole-program line cannot disagree."""
    data = matrix.run_entry(entry).data["result"]
    checked = [b for b in data["bundles"] if b["verify"] is not None]
    assert checked, f"{entry.key}: no bundle's check was read from the checked store"
    credited = 0
    for b in checked:
        steps = {s["step"]: s for s in b["verify"]["steps"]}
        items = _items(b)
        for region in b["verify"]["regions"]:
            step = steps[region["step"]]
            for fix in region["explained_by"]:
                level, item = items[fix]
                credited += 1
                assert (_reexport(level), item["verdict"]) == (step["reexport"], step["verdict"]), (
                    f"{entry.key} {b['bundle']} {fix}: {item['reason']} vs {step['reason']}"
                )
                # the drift it rests on, and says which (the runs, or the regions' own cuts)
                assert step["drift_source"] in ("model-level run", "region cuts")
                assert step["reason"] in item["reason"]
        # its check covers every step of its range: no record is left to the asset probe
        assert b["not_checked"] == []
    assert credited  # sam3's core-b2 regions in every plan (and #54's from 0.4.2 on)


@pytest.mark.parametrize("entry", PIPELINE, ids=lambda e: e.key)
def test_a_pipeline_record_is_answered_on_the_bundles_own_program_with_verifys_drift(entry, matrix):
    """On the store holding every check, a pipeline record is answered on each bundle's own
    program: the level and the drift source of the step `verify BUNDLE --to <its release>`
    gives (the plan of that release embeds exactly that check)."""
    data = matrix.run_entry(entry).data["result"]
    fix = entry.args[2]
    plan = matrix.run_entry(
        answers.Entry(
            f"checked/plan/{data['ships_in']}", ("plan", "--to", data["ships_in"]), answers.CHECKED
        )
    ).data["result"]
    checks = {b["bundle"]: b["verify"] for b in plan["bundles"]}
    answered = [b for b in data["bundles"] if b["verdict"] != "not-affected"]
    assert answered
    for b in answered:
        whole = b["whole_program"]
        assert whole is not None and b["not_checked"] is None, (b["bundle"], b["reason"])
        assert b["verdict"] != "asset-probe-same-program" and b["probes"] == []
        step = next(s for s in checks[b["bundle"]]["steps"] if s["step"] == whole["step"])
        assert whole["to"] == data["ships_in"]
        assert whole["drift_source"] == step["drift_source"]
        if any(fix in r["explained_by"] for r in whole["regions"]):
            assert (b["verdict"], b["reexport"]) == (step["verdict"], step["reexport"])


def test_sam3s_core_b2_reads_the_drift_at_its_regions_cuts(matrix):
    """The case that found it: sam3's 23 optimizer regions of 0.4.0 -> 0.4.1 are core-b2's,
    its model-level runs are over the run budget, so both `verify` and `affected` judge the
    step at the regions' own cuts (values move, within fp16's tolerance), never inconclusive
    for want of a run the cuts already replace."""
    data = matrix.run_entry(
        answers.Entry("checked/affected/core-b2", ("affected", "--fix", "core-b2"), answers.CHECKED)
    ).data["result"]
    sam3 = next(b for b in data["bundles"] if b["bundle"] == "sam3")
    assert sam3["whole_program"]["drift_source"] == "region cuts"
    assert sam3["verdict"] == "values-move" and sam3["reexport"] == "optional"
    assert "region(s)' own cuts" in sam3["reason"]
    bare = matrix.run_cli(("affected", "--fix", "core-b2")).data["result"]
    assert (
        next(b for b in bare["bundles"] if b["bundle"] == "sam3")["verdict"]
        == "asset-probe-same-program"
    )


@pytest.mark.parametrize("to", answers.releases()[1:])
def test_a_plan_without_checks_lists_the_records_not_checked_on_their_own_program(to, matrix):
    """Without a stored check every pipeline record in range is answered by the asset probe:
    the plan lists it per bundle and ends with one line saying how to check them."""
    data = matrix.run_cli(("plan", "--to", to)).data["result"]
    listed = {b["bundle"]: b["not_checked"] for b in data["bundles"]}
    pipeline = set(answers.pipeline_ids())
    for b in data["bundles"]:
        for level in LEVELS:
            for item in b[level]:
                if item["kind"] == "pipeline" and item["verdict"] != "not-affected":
                    assert item["fix"] in listed[b["bundle"]] and item["not_checked"]
        assert set(listed[b["bundle"]]) <= pipeline
    if any(listed.values()):
        assert data["suggest"] is not None and f"plan --to {to} --verify" in data["suggest"]
    else:
        assert data["suggest"] is None
