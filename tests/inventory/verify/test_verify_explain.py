"""A whole-program region's stage and the record that explains it (inventory.verify.explain),
and the re-export policy applied to a whole program's drift, on synthetic regions. No converter
runs here: tests/inventory/verify/test_verify.py measures them end to end."""

from __future__ import annotations

from typing import Any

from inventory.verify.explain import (
    LOWERING,
    OPTIMIZER,
    attributed,
    judge_drift,
    stage_of,
    unrecorded,
)
from inventory.verify.regions import Region, shape
from inventory.verify.step_check import StepCheck
from inventory.verify.step_region import StepRegion
from oracle.catalog.fixes import Fix


def region(nodes: set[str], **kw) -> Region:
    return Region(
        "main", "", lines_old=kw.pop("old", []), lines_new=kw.pop("new", []), nodes=nodes, **kw
    )


def texts(
    shipped_old: list[str], shipped_new: list[str], emitted_old: list[str], emitted_new: list[str]
) -> dict:
    return {
        "shipped": {"old": shipped_old, "new": shipped_new},
        "emitted": {
            "old": {shape(ln) for ln in emitted_old},
            "new": {shape(ln) for ln in emitted_new},
        },
        "by_node": {"old": {}, "new": {}},
    }


SAME = texts([], [], ["%1 = coreai.add %0"], ["%1 = coreai.add %0"])


def test_a_region_whose_nodes_the_lowering_changed_is_of_the_lowering():
    emitted = [region({"bn_1", "relu_2"})]
    assert stage_of(region({"bn_1"}), emitted, SAME) == LOWERING


def test_a_region_whose_nodes_were_emitted_the_same_is_the_optimizers():
    emitted = [region({"relu_2"})]
    assert stage_of(region({"bn_1"}), emitted, SAME) == OPTIMIZER
    assert stage_of(region({"bn_1"}), [], SAME) == OPTIMIZER


def test_a_region_is_the_lowerings_when_what_was_emitted_for_its_nodes_differs():
    t = texts([], [], [], [])
    t["by_node"] = {
        "old": {"squeeze_1": ["% = coreai.shrink_dims %, %"]},
        "new": {"squeeze_1": ["% = coreai.reshape %, %"]},
    }
    assert stage_of(region({"squeeze_1"}), [], t) == LOWERING
    # the same ops emitted for them on both sides: the optimizer made the difference, whatever
    # unattributed emitted regions elsewhere say
    t["by_node"]["new"] = {"squeeze_1": ["% = coreai.shrink_dims %, %"]}
    assert stage_of(region({"squeeze_1"}), [region({"squeeze_1"})], t) == OPTIMIZER


def test_a_composite_body_is_the_lowerings_when_its_emitted_body_differs():
    body = Region("batch_norm_G3", "batch_norm", lines_old=[3], lines_new=[3], nodes={"bn_1"})
    emitted_body = Region("batch_norm_G1", "batch_norm", lines_old=[2], lines_new=[2])
    t = texts([], [], [], [])
    # the call site's invoke line is the same on both sides: not what decides a body
    t["by_node"] = {
        "old": {"bn_1": ["% = coreai.invoke @batch_norm(%)"]},
        "new": {"bn_1": ["% = coreai.invoke @batch_norm(%)"]},
    }
    assert stage_of(body, [emitted_body], t) == LOWERING
    assert stage_of(body, [], t) == OPTIMIZER


def test_without_a_comparable_emitted_program_nothing_is_put_on_the_optimizer():
    assert stage_of(region({"bn_1"}), [], None) == LOWERING


def test_an_unlocated_constant_is_the_lowerings_only_if_one_side_emitted_it():
    folded = "%3 = coreai.constant dense<[1, 16, 5184, 32]> : tensor<4xui32>"
    hoisted = "%9 = coreai.constant dense<6.281250e+00> : tensor<f16>"
    lowered = "%4 = coreai.constant dense<2.0> : tensor<f16>"
    # made by the optimizer: in neither emitted program
    t = texts([], [folded], ["%1 = coreai.add %0"], ["%1 = coreai.add %0"])
    assert stage_of(region(set(), new=[1]), [], t) == OPTIMIZER
    # in both emitted programs: the optimizer kept it, or moved it
    t = texts(
        [],
        [hoisted],
        ["%2 = coreai.constant dense<6.281250e+00> : tensor<f16>"],
        ["%5 = coreai.constant dense<6.281250e+00> : tensor<f16>"],
    )
    assert stage_of(region(set(), new=[1]), [], t) == OPTIMIZER
    # the new lowering emits it, the old did not
    t = texts([], [lowered], [], ["%0 = coreai.constant dense<2.0> : tensor<f16>"])
    assert stage_of(region(set(), new=[1]), [], t) == LOWERING


def fix(
    id_: str,
    kind: str = "lowering",
    constructs: tuple[str, ...] = (),
    touches: tuple[str, ...] = (),
) -> Fix:
    return Fix(id_, "t", "0.4.1", "", constructs, kind=kind, touches=touches)


def as_json(stage: str, **kw) -> dict:
    base: dict[str, Any] = {
        "constructs": [],
        "composite": None,
        "ops": [],
        "coreai_ops": [],
        "stage": stage,
    }
    return {**base, **kw}


def test_rule_a_a_record_naming_a_detected_construct():
    r = as_json(LOWERING, constructs=["batch_norm"])
    assert attributed(
        r, [fix("54", constructs=("batch_norm",)), fix("40", constructs=("conv_transpose",))]
    ) == {"54": "construct batch_norm"}
    # a composite's body is its construct's too
    r = as_json(LOWERING, composite="batch_norm")
    assert attributed(r, [fix("54", constructs=("batch_norm",))]) == {"54": "construct batch_norm"}


def test_rule_a_never_credits_a_lowering_record_with_the_optimizers_change():
    """The region holds the record's construct, yet the lowerings emitted the same program
    there: only a record of a kind that changes the optimizer's output can explain it."""
    bn = fix("54", constructs=("batch_norm",))
    r = as_json(OPTIMIZER, constructs=["batch_norm"])
    assert attributed(r, [bn]) == {}
    assert attributed(r, [bn, fix("core-b2", kind="pipeline")]) == {
        "core-b2": "pipeline record, optimizer stage"
    }


def test_rule_b_a_pipeline_record_explains_only_the_optimizers_regions():
    pin = fix("core-b2", kind="pipeline")
    assert attributed(as_json(OPTIMIZER), [pin]) == {"core-b2": "pipeline record, optimizer stage"}
    assert attributed(as_json(LOWERING), [pin]) == {}


def test_rule_c_touches_names_an_aten_target_or_a_core_ai_op():
    rec = fix("13", constructs=("view_dynamic",), touches=("aten.squeeze.dims",))
    assert attributed(as_json(LOWERING, ops=["aten.squeeze.dims"]), [rec]) == {
        "13": "touches aten.squeeze.dims"
    }
    rec = fix("99", touches=("coreai.decomposable.broadcasting_mul",))
    assert attributed(
        as_json(LOWERING, coreai_ops=["coreai.decomposable.broadcasting_mul"]), [rec]
    ) == {"99": "touches coreai.decomposable.broadcasting_mul"}
    assert attributed(as_json(LOWERING, ops=["aten.mul.Tensor"]), [rec]) == {}


def row(old: float, new: float, moved: float, bit: bool = False, nonfinite_old: int = 0) -> dict:
    return {
        "output": "y",
        "shape": [2],
        "bit_identical": bit,
        "rel_old": old,
        "rel_new": new,
        "maxabs_old_new": moved,
        "nonfinite_old": nonfinite_old,
        "nonfinite_new": 0,
    }


def test_whole_program_drift_is_judged_by_the_policy_worst_output_first():
    assert judge_drift([row(0, 0, 0, bit=True)], "rt", 1e-2).verdict == "values-identical"
    assert judge_drift([row(0.001, 0.002, 0.001)], "rt", 1e-2).reexport == "optional"
    # the shipped program is wrong where the new one is right
    wrong = judge_drift([row(0.001, 0.001, 0.0), row(0.5, 0.001, 0.4)], "rt", 1e-2)
    assert wrong.reexport == "required" and "shipped outputs wrong" in wrong.reason
    assert judge_drift([row(0.0, 0.0, 0.0, nonfinite_old=3)], "rt", 1e-2).reexport == "required"
    assert judge_drift(None, None, 1e-2, "no runtime").reexport == "inconclusive"


def test_unrecorded_regions_are_grouped_by_step_stage_and_ops_with_their_drift():
    def r(step: str, stage: str, ops: list[str], recorded: bool = False) -> StepRegion:
        region = Region(
            "main", "", [1, 2], [3, 4], modules=["m"], ops=["aten.mul.Tensor"], coreai_ops=ops
        )
        return StepRegion.of(region, step, stage, {"13": "touches"} if recorded else {}, "E")

    regions = [
        r("0.4.0->0.4.1", OPTIMIZER, ["coreai.mul"]),
        r("0.4.0->0.4.1", OPTIMIZER, ["coreai.mul"]),
        r("0.4.0->0.4.1", LOWERING, ["coreai.mul"]),
        r("0.4.0->0.4.1", LOWERING, ["coreai.add"], recorded=True),
    ]
    verdict = judge_drift([row(0.1, 0.1, 0.01)], "rt", 1e-2)
    step = StepCheck(
        step="0.4.0->0.4.1",
        old="0.4.0",
        new="0.4.1",
        emitted=None,
        shipped={"identity": "differs"},
        regions=len(regions),
        unrecorded_regions=3,
        records=("13", "54"),
        runtime="rt",
        drift=(row(0.1, 0.1, 0.01),),
        evidence=None,
        verdict=verdict.verdict,
        reexport=verdict.reexport,
        reason=verdict.reason,
        drift_source="model-level run",
    )
    found = unrecorded(regions, {step.step: step}, [fix("13"), fix("54")], verdict)
    assert [(u["stage"], u["regions"], u["changed_lines"]) for u in found] == [
        (OPTIMIZER, 2, 8),
        (LOWERING, 1, 4),
    ]
    assert found[0]["records_of_step"] == ["13", "54"]
    assert found[0]["drift"] == [row(0.1, 0.1, 0.01)]
    assert found[0]["reexport"] == verdict.reexport
