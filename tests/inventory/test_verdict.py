"""The re-export policy applied to measured numbers (synthetic results, no converter)."""

from __future__ import annotations

from typing import Any

from inventory.policy import load_policy
from inventory.verdict import judge, worst
from oracle.compare.results import Alone, Identity, Measurement, ProbeResult, Side
from oracle.compare.spec import ProbeSpec
from oracle.compare.stats import OutputStats, SideStats

SPEC = ProbeSpec("conv_transpose", {"dim": 1}, dtype="float16")
OK = Side("0.4.1", {}, True)
NEW = Side("0.4.2", {}, True)


def _stats(**kw) -> OutputStats:
    base: dict[str, Any] = dict(
        bit_identical=False,
        shapes_old=[[1, 4]],
        shapes_new=[[1, 4]],
        shapes_ref=[[1, 4]],
        maxabs_old_new=0.1,
        maxabs_old_ref=0.1,
        maxabs_new_ref=0.001,
        ref_magnitude=1.0,
        nonfinite_old=0,
        nonfinite_new=0,
    )
    base.update(kw)
    return OutputStats(**base)


def _result(stats: OutputStats | None, shipped: str = "differs", old: Side = OK) -> ProbeResult:
    m = Measurement("linux-cpu, coreai-core 1.0.0b2", [], True, stats=stats) if stats else None
    return ProbeResult(SPEC, old, NEW, Identity(shipped), Identity(shipped), m, "/evidence")


def test_wrong_where_the_new_one_is_right_is_required_and_names_the_runtime():
    v = judge(_result(_stats()), load_policy())
    assert (v.verdict, v.reexport) == ("values-move", "required")
    assert "coreai-core 1.0.0b2" in v.reason


def test_moving_within_tolerance_is_optional_and_says_which_side_is_closer():
    v = judge(_result(_stats(maxabs_old_ref=0.004, maxabs_new_ref=0.002)), load_policy())
    assert (v.verdict, v.reexport) == ("values-move", "optional")
    assert "new side closer" in v.reason


def test_tolerance_override_changes_the_decision():
    stats = _stats(maxabs_old_ref=0.004, maxabs_new_ref=0.0001)
    assert judge(_result(stats), load_policy()).reexport == "optional"
    assert judge(_result(stats), load_policy(override=0.001)).reexport == "required"


def test_nan_in_the_shipped_output_is_wrong():
    v = judge(_result(_stats(maxabs_old_ref=0.0, nonfinite_old=3)), load_policy())
    assert v.reexport == "required"


def test_shape_change_against_torch():
    stats = _stats(shapes_old=[[1, 5]], maxabs_old_new=None, maxabs_old_ref=None)
    assert judge(_result(stats), load_policy()).verdict == "shape-change"
    assert judge(_result(stats), load_policy()).reexport == "required"


def test_identical_programs_need_nothing_and_bit_identical_outputs_are_optional():
    assert judge(_result(None, shipped="identical"), load_policy()).reexport == "no"
    v = judge(_result(_stats(bit_identical=True, maxabs_old_new=0.0)), load_policy())
    assert (v.verdict, v.reexport) == ("values-identical", "optional")


def test_a_failed_run_is_never_a_pass():
    failed = Side("0.4.1", {}, False, "worker", "worker died of SIGABRT")
    assert (
        judge(_result(None, shipped="old-cannot-convert", old=failed), load_policy()).reexport
        == "inconclusive"
    )
    unmeasured = ProbeResult(
        SPEC,
        OK,
        NEW,
        Identity.DIFFERS,
        Identity.DIFFERS,
        Measurement("none", ["b2: aborted"], False, "no runtime"),
        "/e",
    )
    assert judge(unmeasured, load_policy()).verdict == "inconclusive"
    assert worst(["no", "inconclusive", "optional"]) == "inconclusive"
    assert worst(["optional", "required"]) == "required"


def test_nan_fixed_but_still_off_is_required_and_says_so():
    stats = _stats(maxabs_old_ref=None, maxabs_new_ref=0.4, nonfinite_old=10, nonfinite_new=0)
    v = judge(_result(stats), load_policy())
    assert v.reexport == "required" and "10 NaN/inf" in v.reason
    both = _stats(maxabs_old_ref=None, maxabs_new_ref=None, nonfinite_old=10, nonfinite_new=3)
    assert judge(_result(both), load_policy()).reexport == "optional"


def _alone(stats: SideStats | None, side: str = "new") -> ProbeResult:
    """One side cannot convert; the other ran alone against torch fp32 (or could not run)."""
    failed = Side("0.4.1" if side == "new" else "0.4.2", {}, False, "convert", "unsupported op")
    old, new = (failed, NEW) if side == "new" else (OK, failed)
    shipped = "old-cannot-convert" if side == "new" else "new-cannot-convert"
    alone = Alone(
        side, "linux-cpu, coreai-core 1.0.0b2", stats is not None, "" if stats else "aborted", stats
    )
    return ProbeResult(
        SPEC, old, new, Identity(shipped), Identity(shipped), None, "/evidence", alone=alone
    )


def _side(**kw) -> SideStats:
    base: dict[str, Any] = dict(
        shapes=[[1, 4]], shapes_ref=[[1, 4]], maxabs_ref=1e-5, ref_magnitude=1.0, nonfinite=0
    )
    base.update(kw)
    return SideStats(**base)


def test_the_one_side_that_converts_is_judged_against_torch_and_the_reason_says_so():
    right = judge(_alone(_side()), load_policy())
    assert (right.verdict, right.reexport, right.alone) == (
        "old-cannot-convert",
        "inconclusive",
        "right",
    )
    assert "0.4.2's program matches torch fp32" in right.reason
    wrong = judge(_alone(_side(maxabs_ref=1.57, ref_magnitude=3.14)), load_policy())
    assert (wrong.verdict, wrong.alone) == ("old-cannot-convert", "wrong")
    assert "0.4.2's program is WRONG against torch fp32" in wrong.reason
    assert "coreai-core 1.0.0b2" in wrong.reason
    nan = judge(_alone(_side(maxabs_ref=None, nonfinite=2)), load_policy())
    assert nan.alone == "wrong" and "2 NaN/inf" in nan.reason
    shape = judge(_alone(_side(shapes=[[1, 5]], maxabs_ref=None)), load_policy())
    assert shape.alone == "wrong" and "[[1, 5]]" in shape.reason


def test_a_shipped_program_the_new_release_cannot_rebuild_is_still_checked():
    v = judge(_alone(_side(maxabs_ref=0.5), side="old"), load_policy())
    assert (v.verdict, v.alone) == ("new-cannot-convert", "wrong")
    assert "0.4.1's program is WRONG" in v.reason


def test_a_side_that_could_not_run_alone_is_not_run_never_right():
    v = judge(_alone(None), load_policy())
    assert v.alone == "not-run" and "could not be checked against torch fp32: aborted" in v.reason
    stored_before = ProbeResult(
        SPEC,
        Side("0.4.1", {}, False, "convert", "x"),
        NEW,
        Identity.OLD_CANNOT_CONVERT,
        Identity.OLD_CANNOT_CONVERT,
        None,
        "/e",
    )
    assert judge(stored_before, load_policy()).alone == "not-run"
