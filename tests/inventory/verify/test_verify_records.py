"""verify's typed records: each built once, frozen, written to JSON by its own `to_json` in
the form `schemas/verify.schema.json` states; the helpers that add to a step's regions return
new values and leave what they were given as it was."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from inventory.policy import Policy
from inventory.sweep import Sweep
from inventory.verdict import Reexport, Verdict
from inventory.verify import service
from inventory.verify.step_check import StepCheck

SCHEMA = Path(__file__).resolve().parents[3] / "schemas" / "verify.schema.json"


def _validator(definition: str) -> Draft202012Validator:
    schema = json.loads(SCHEMA.read_text())
    return Draft202012Validator({"$defs": schema["$defs"], "$ref": f"#/$defs/{definition}"})


def _row(output: str, bit_identical: bool) -> dict[str, Any]:
    return {"output": output, "bit_identical": bit_identical}


def _step(**changes: Any) -> StepCheck:
    given: dict[str, Any] = {
        "step": "0.4.0->0.4.1",
        "old": "0.4.0",
        "new": "0.4.1",
        "emitted": {"identity": "differs", "changed_lines": 3},
        "shipped": {"identity": "differs", "changed_lines": 2},
        "regions": 1,
        "unrecorded_regions": 0,
        "records": ("13",),
        "runtime": None,
        "drift": None,
        "evidence": "E",
        "verdict": Verdict.SAME_PROGRAM,
        "reexport": Reexport.NO,
        "reason": "r",
        "drift_source": None,
    }
    return StepCheck(**{**given, **changes})


def _region(**changes: Any) -> dict[str, Any]:
    return {
        "step": "0.4.0->0.4.1",
        "stage": "lowering",
        "graph": "main",
        "constructs": ["softmax"],
        "composite": None,
        "modules": ["m"],
        "unrecorded": False,
        "explained_by": ["13"],
        **changes,
    }


def test_a_steps_json_is_the_schemas_step_in_its_order() -> None:
    step = _step()
    written = step.to_json()
    schema = json.loads(SCHEMA.read_text())["$defs"]["step"]
    assert list(written) == schema["required"]
    # the form the command prints: enum members serialise as their values
    assert json.loads(json.dumps(written))["verdict"] == "same-program"
    assert written["from"] == "0.4.0" and written["to"] == "0.4.1"
    assert written["records"] == ["13"]
    _validator("step").validate(json.loads(json.dumps(written)))


def test_a_steps_drift_is_written_as_the_rows_it_was_given() -> None:
    rows = (_row("audio", True), _row("codes", False))
    assert _step(drift=rows).to_json()["drift"] == [_row("audio", True), _row("codes", False)]
    assert _step(drift=None).to_json()["drift"] is None
    assert _step(drift=()).to_json()["drift"] == []


def test_reconciling_a_step_returns_new_regions_and_leaves_the_given_ones() -> None:
    regions = [_region(), _region(constructs=["matmul"])]
    before = copy.deepcopy(regions)
    probes = Sweep("0.4.0", "0.4.1", probed=2, changed=(), unchanged=2)
    summary, inconsistencies, limitations, out = service.reconcile_step(
        _step(), regions, probes, {"softmax", "matmul"}
    )
    assert regions == before
    assert [r["explained_by_probes"] for r in out] == [[], []]
    assert summary == {"step": "0.4.0->0.4.1", "probed": 2, "changed": [], "failing_both": []}
    assert (inconsistencies, limitations) == ([], [])


def test_a_steps_region_runs_are_added_to_new_regions() -> None:
    regions = [_region(), _region()]
    before = copy.deepcopy(regions)
    record = {
        "region_runs": [
            {
                "step": "0.4.0->0.4.1",
                "evidence": "cut",
                "regions": [{"region": 1, "reproduces": True, "why": "w", "drift": None}],
            }
        ]
    }
    out = service._with_region_drift(regions, record, "0.4.0->0.4.1")
    assert regions == before
    assert out[0]["region_run"] == {"reproduces": None, "why": "not cut"}
    assert out[1]["region_run"]["reproduces"] is True
    assert out[1]["region_run"]["cut"] == "cut"


def test_a_steps_level_without_a_model_level_run_comes_from_its_region_cuts() -> None:
    policy = Policy({"float32": 1e-2})
    verdict, source = service.step_verdict(
        {}, "0.4.0->0.4.1", "identical", None, None, policy, "float32"
    )
    assert (verdict.verdict, source) == (Verdict.SAME_PROGRAM, None)
    verdict, source = service.step_verdict(
        {}, "0.4.0->0.4.1", "cannot-convert", None, None, policy, "float32"
    )
    assert (verdict.reexport, source) == (Reexport.INCONCLUSIVE, None)
    assert "cannot be compared across 0.4.0->0.4.1 (cannot-convert)" in verdict.reason
    verdict, source = service.step_verdict(
        {}, "0.4.0->0.4.1", "differs", None, None, policy, "float32"
    )
    assert (verdict.reexport, source) == (Reexport.INCONCLUSIVE, service.REGION_CUTS)
    assert verdict.reason.endswith("no region run")
