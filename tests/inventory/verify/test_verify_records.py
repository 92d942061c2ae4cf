"""verify's typed records: each built once, frozen, written to JSON by its own `to_json` in
the form `schemas/verify.schema.json` states; what is added to a step's regions later (their
runs, the changing probes' constructs) makes new regions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from inventory.policy import Policy
from inventory.sweep import Sweep
from inventory.verdict import Reexport, Verdict
from inventory.verify import service
from inventory.verify.built_module import BuiltModule
from inventory.verify.compared_pair import ComparedPair
from inventory.verify.converted_side import ConvertedSide
from inventory.verify.decode import RecordError
from inventory.verify.probe_check import ProbeChange, ProbeCheck
from inventory.verify.regions import Region
from inventory.verify.runtime_run import RuntimeRun
from inventory.verify.step_check import StepCheck
from inventory.verify.step_region import RegionRun, StepRegion
from inventory.verify.torch_check import TorchCheck

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


def _region(
    constructs: tuple[str, ...] = ("softmax",), how: dict[str, str] | None = None
) -> StepRegion:
    region = Region(
        "main",
        "",
        [3, 4, 5],
        [7],
        constructs=list(constructs),
        modules=[f"m{i}" for i in range(8)],
        ops=["aten.mul.Tensor"],
        coreai_ops=["coreai.mul"],
        nodes={"mul"},
    )
    return StepRegion.of(region, "0.4.0->0.4.1", "lowering", how or {}, "E")


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


def test_a_regions_json_is_the_schemas_region_and_writes_no_part_not_added() -> None:
    region = _region(how={"54": "construct softmax", "13": "touches coreai.mul"})
    written = region.to_json()
    assert "region_run" not in written and "explained_by_probes" not in written
    assert written["lines_old"] == ["3-5"] and written["lines_new"] == ["7"]
    assert written["changed_lines"] == 4
    assert written["modules"] == [f"m{i}" for i in range(6)] and written["module_count"] == 8
    assert written["explained_by"] == ["13", "54"] and written["unrecorded"] is False
    assert written["composite"] is None
    _validator("region").validate(written)
    assert _region().to_json()["unrecorded"] is True


def test_reconciling_a_step_gives_each_region_the_changing_probes_it_holds() -> None:
    regions = [_region(), _region(constructs=("matmul",))]
    probes = Sweep("0.4.0", "0.4.1", probed=2, changed=(), unchanged=2)
    summary, inconsistencies, limitations, out = service.reconcile_step(
        _step(), regions, probes, {"softmax", "matmul"}
    )
    assert [r.explained_by_probes for r in regions] == [None, None]
    assert [r.explained_by_probes for r in out] == [(), ()]
    assert [r.to_json()["explained_by_probes"] for r in out] == [[], []]
    assert summary == ProbeCheck(probed=2)
    assert (inconsistencies, limitations) == ([], [])
    # identical shipped programs: nothing to reconcile a region with
    *_, same = service.reconcile_step(
        _step(shipped={"identity": "identical"}), regions, probes, set()
    )
    assert [r.explained_by_probes for r in same] == [None, None]


def test_a_steps_region_runs_are_added_to_new_regions() -> None:
    regions = [_region(), _region()]
    record = {
        "region_runs": [
            {
                "step": "0.4.0->0.4.1",
                "evidence": "cut",
                "regions": [
                    {
                        "region": 1,
                        "reproduces": True,
                        "why": "w",
                        "attempts": [{"hops": 1, "nodes": 3}],
                        "reaches_outputs": [0],
                        "drift": [
                            {
                                "output": "o",
                                "graph_name": "o",
                                "shape": [1, 4],
                                "dtype": "float16",
                                "ref_magnitude": 0.5,
                                "ref_nonfinite": 0,
                                "maxabs_old": 0.1,
                                "maxabs_new": 0.1,
                                "rel_old": 0.0,
                                "rel_new": 0.0,
                                "maxabs_old_new": 0.0,
                                "nonfinite_old": 0,
                                "nonfinite_new": 0,
                                "bit_identical": True,
                            }
                        ],
                    }
                ],
            }
        ]
    }
    out = service._with_region_drift(regions, record, "0.4.0->0.4.1")
    assert [r.region_run for r in regions] == [None, None]
    assert out[0].to_json()["region_run"] == {"reproduces": None, "why": "not cut"}
    run = out[1].to_json()["region_run"]
    assert run["reproduces"] is True and run["cut"] == "cut"
    assert run["attempts"] == [{"hops": 1, "nodes": 3}] and run["reaches_outputs"] == [0]
    assert run["drift"]["bit_identical"] is True and run["drift"]["outputs"] == 1
    assert run["cut_from"] == "the region's own aten nodes" and run["nodes_missing"] == []
    _validator("region_run").validate(run)
    # a step no region run names leaves its regions without one
    assert service._with_region_drift(regions, record, "0.4.1->0.4.2") == regions


def test_a_region_run_that_was_not_cut_is_in_the_schema_s_form() -> None:
    """A region the step's runs do not name, and every region of a step whose cuts failed, is
    written `{"reproduces": null, "why": ...}` (as since region runs were first written): the
    schema states that form beside the one of a region that was cut, which keeps every field."""
    record: dict[str, Any] = {"region_runs": [{"step": "0.4.0->0.4.1", "regions": []}]}
    [unnamed] = service._with_region_drift([_region()], record, "0.4.0->0.4.1")
    record["region_runs"][0]["error"] = "cut worker: export failed"
    [failed] = service._with_region_drift([_region()], record, "0.4.0->0.4.1")
    validator = _validator("region_run")
    for region, why in ((unnamed, "not cut"), (failed, "cut worker: export failed")):
        run = region.to_json()["region_run"]
        assert run == {"reproduces": None, "why": why}
        validator.validate(run)
    # the short form is only for a region not cut: one that was keeps its drift, even if null
    cut = RegionRun(reproduces=None, why="nothing to cut").to_json()
    validator.validate(cut)
    assert not validator.is_valid({k: v for k, v in cut.items() if k != "drift"})
    assert not validator.is_valid({"reproduces": True, "why": "w"})


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


def test_a_bundles_probes_are_every_steps_with_a_regime_failing_twice_named_once() -> None:
    def change(probe: str, step: str) -> ProbeChange:
        return ProbeChange(probe, "softmax", Verdict.VALUES_MOVE, ("54",), step)

    first = ProbeCheck(3, (change("softmax-a", "0.4.0->0.4.1"),), ("conv-b", "add-c"))
    second = ProbeCheck(2, (change("softmax-b", "0.4.1->0.4.2"),), ("conv-b",))
    both = ProbeCheck.over([first, second])
    assert both.to_json() == {
        "probed": 5,
        "changed": [
            {
                "probe": "softmax-a",
                "construct": "softmax",
                "verdict": Verdict.VALUES_MOVE,
                "explained_by": ["54"],
                "step": "0.4.0->0.4.1",
            },
            {
                "probe": "softmax-b",
                "construct": "softmax",
                "verdict": Verdict.VALUES_MOVE,
                "explained_by": ["54"],
                "step": "0.4.1->0.4.2",
            },
        ],
        "failing_both": ["add-c", "conv-b"],
    }
    # a bundle whose check has no probes (nothing was built) says so with the same fields
    assert ProbeCheck.over([]).to_json() == {"probed": 0, "changed": [], "failing_both": []}


def test_a_torch_check_reads_back_what_it_wrote_and_refuses_another_form_in_one_line() -> None:
    check = TorchCheck("2.13.0+cpu", "2.9.0", "the recipe's lock", False, "9 of 9 probes")
    assert TorchCheck.from_json(json.loads(json.dumps(check.to_json()))) == check
    unrecorded = TorchCheck("2.13.0+cpu", None, None, None, None)
    assert TorchCheck.from_json(unrecorded.to_json()) == unrecorded
    assert TorchCheck.from_json(None) is None
    without = {k: v for k, v in check.to_json().items() if k != "same"}
    with pytest.raises(RecordError, match=r"^a whole-program check's torch: no field 'same'$"):
        TorchCheck.from_json(without)
    with pytest.raises(RecordError, match=r"field 'built' is int, expected str$"):
        TorchCheck.from_json({**check.to_json(), "built": 213})
    with pytest.raises(RecordError, match=r"expected an object, found str$"):
        TorchCheck.from_json("2.13.0")


def _stored_side(**changes: Any) -> dict[str, Any]:
    """A converted side as its part is stored: the program worker's answer, then what the
    chain adds (converter, packages, seconds, the shipped digest) and the store (code,
    evidence)."""
    files = ("emitted", "emitted_located", "shipped", "located", "nodes", "asset", "log")
    side: dict[str, Any] = {
        "ok": True,
        "emitted_is_optimized": False,
        "emitted_before_rewrite": False,
        "seconds": {"convert": 2.0},
        "peak_mb": 812.5,
        "files": {name: f"/store/side/{name}" for name in files},
        "wall_seconds": 4.25,
        "converter": "0.4.1",
        "packages": {"coreai-torch": "0.4.1", "torch": "2.13.0+cpu"},
        "shipped_digest": "0123456789abcdef0123",
        "code": "c0de",
        "evidence": "/store/side",
    }
    return {**side, **changes}


def test_a_converted_side_is_read_once_and_written_as_verify_json_gives_it() -> None:
    side = ConvertedSide.from_part(_stored_side())
    assert side.files["shipped"] == "/store/side/shipped" and side.evidence == "/store/side"
    assert side.to_json() == {
        "converter": "0.4.1",
        "ok": True,
        "seconds": 4.25,
        "peak_mb": 812.5,
        "packages": {"coreai-torch": "0.4.1", "torch": "2.13.0+cpu"},
    }
    failed = ConvertedSide.from_part(
        {
            "ok": False,
            "stage": "convert",
            "error": "E: x",
            "converter": "0.4.0",
            "packages": {},
            "wall_seconds": 1,
            "code": "c0de",
            "evidence": None,
            "stored": False,
        }
    )
    assert failed.files == {} and failed.shipped_digest is None and failed.evidence is None
    # a whole number stays one: the JSON written from it is the JSON read
    assert failed.to_json() == {
        "converter": "0.4.0",
        "ok": False,
        "seconds": 1,
        "peak_mb": None,
        "packages": {},
        "error": "convert: E: x",
    }
    assert json.dumps(failed.to_json()["seconds"]) == "1"


def test_a_stored_side_not_in_its_form_is_one_record_error_naming_the_field() -> None:
    files = {**_stored_side()["files"]}
    del files["nodes"]
    with pytest.raises(RecordError, match=r"^a converted side's files: no field 'nodes'$"):
        ConvertedSide.from_part(_stored_side(files=files))
    with pytest.raises(RecordError, match=r"^a converted side: field 'wall_seconds' is str"):
        ConvertedSide.from_part(_stored_side(wall_seconds="4"))
    with pytest.raises(RecordError, match=r"^a converted side: no field 'stage'$"):
        ConvertedSide.from_part(_stored_side(ok=False, error="E"))


def _stored_pair(**changes: Any) -> dict[str, Any]:
    """A comparison as its part is stored (`whole.compared`, then the store's code and
    evidence)."""
    normalised = {"old": "/store/pair/shipped.old.normalised.mlir", "new": "/store/pair/n.mlir"}
    pair: dict[str, Any] = {
        "emitted": {"identity": "not-comparable"},
        "shipped": {
            "normalised": normalised,
            "identity": "differs",
            "changed_lines": 4,
            "diff": "/store/pair/shipped.diff",
        },
        "code": "c0de",
        "evidence": "/store/pair",
    }
    return {**pair, **changes}


def test_a_compared_pair_is_read_once_and_its_stages_written_as_stored_and_as_verify_gives_them():
    pair = ComparedPair.from_part(_stored_pair(), "0.4.0", "0.4.1")
    assert pair.label == "0.4.0->0.4.1" and pair.differs and pair.evidence == "/store/pair"
    assert pair.to_json() == {k: v for k, v in _stored_pair().items() if k != "code"}
    # verify --json's stage: no normalised texts
    assert pair.shipped.summary() == {
        "identity": "differs",
        "changed_lines": 4,
        "diff": "/store/pair/shipped.diff",
    }
    assert pair.emitted.summary() == {"identity": "not-comparable"}
    same = {"normalised": {"old": "o", "new": "n"}, "identity": "identical", "changed_lines": 0}
    identical = ComparedPair.from_part(_stored_pair(shipped=same), "0.4.0", "0.4.1")
    assert not identical.differs and identical.shipped.to_json() == same


def test_a_stored_pair_not_in_its_form_is_one_record_error_naming_the_field() -> None:
    with pytest.raises(RecordError, match=r"^a compared pair: no field 'shipped'$"):
        ComparedPair.from_part({"emitted": {"identity": "not-comparable"}}, "a", "b")
    differs = {"identity": "differs", "changed_lines": 4, "normalised": {"old": "o"}}
    with pytest.raises(
        RecordError, match=r"^a compared pair's shipped's normalised: no field 'new'"
    ):
        ComparedPair.from_part(_stored_pair(shipped=differs), "a", "b")
    with pytest.raises(RecordError, match=r"field 'changed_lines' is str, expected int$"):
        ComparedPair.from_part(
            _stored_pair(emitted={"identity": "x", "changed_lines": "4"}), "a", "b"
        )


def test_a_built_module_is_read_once_an_earlier_versions_build_included() -> None:
    stored = {
        "ok": True,
        "params": 1234,
        "nonfinite_state": 0,
        "inputs": [{"name": "x", "values": "seeded", "shape": [1, 4], "dtype": "float32"}],
        "weights": None,
        "wall_seconds": 3.5,
        "peak_mb": 900.0,
        "torch": "2.13.0+cpu",
        "files": {"program": "/store/b/program.pt2", "inputs": "/store/b/main.inputs.safetensors"},
        "code": "c0de",
        "evidence": "/store/b",
    }
    build = BuiltModule.from_part(stored, Path("/store/b"))
    assert (build.program, build.reference) == (
        "/store/b/program.pt2",
        Path("/store/b/reference.safetensors"),
    )
    assert build.to_json() == {
        "params": 1234,
        "seconds": 3.5,
        "peak_mb": 900.0,
        "torch": "2.13.0+cpu",
        "inputs": stored["inputs"],
        "weights": None,
        "nonfinite_state": 0,
        "evidence": "/store/b",
    }
    # stored before the torch and the state's non-finite values were kept: read as unknown
    legacy = {k: v for k, v in stored.items() if k not in ("torch", "nonfinite_state")}
    old = BuiltModule.from_part(legacy, Path("/store/b"))
    assert old.torch is None and old.nonfinite_state is None
    with pytest.raises(RecordError, match=r"^a built module's files: no field 'inputs'$"):
        BuiltModule.from_part({**stored, "files": {"program": "p"}}, Path("/store/b"))
    with pytest.raises(RecordError, match=r"^a built module: field 'params' is str"):
        BuiltModule.from_part({**stored, "params": "1234"}, Path("/store/b"))


def test_a_runtime_s_run_is_read_once_from_its_stored_part() -> None:
    ran = {
        "ok": True,
        "runtime": "linux-cpu, coreai-core 1.0.0b2",
        "outputs_file": "/store/run/main.outputs.safetensors",
        "outputs": ["preds"],
        "seconds": 2.5,
        "code": "c0de",
        "evidence": "/store/run",
    }
    run = RuntimeRun.from_part(ran)
    assert run.outputs_file == Path("/store/run/main.outputs.safetensors")
    assert (run.outputs, run.evidence) == (("preds",), "/store/run")
    refused = {
        "ok": False,
        "runtime": "linux-cpu, coreai-core 1.0.0b2",
        "stage": "worker",
        "error": "asset worker died of SIGABRT",
        "attempts": ["asset worker died of SIGABRT", "asset worker died of SIGABRT"],
        "seconds": 1.0,
        "code": "c0de",
        "evidence": None,
        "stored": False,
    }
    failed = RuntimeRun.from_part(refused)
    assert failed.failure == "worker: asset worker died of SIGABRT" and failed.outputs_file is None
    with pytest.raises(RecordError, match=r"^a runtime's run: no field 'outputs_file'$"):
        RuntimeRun.from_part({k: v for k, v in ran.items() if k != "outputs_file"})
