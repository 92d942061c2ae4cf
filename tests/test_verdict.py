"""The re-export policy applied to measured numbers (synthetic results, no converter)."""

from __future__ import annotations

from inventory.policy import load_policy
from inventory.verdict import judge, worst
from oracle.results import Measurement, ProbeResult, Side
from oracle.spec import ProbeSpec
from oracle.stats import OutputStats

SPEC = ProbeSpec("conv_transpose", {"dim": 1}, dtype="float16")
OK = Side("0.4.1", {}, True)
NEW = Side("0.4.2", {}, True)


def _stats(**kw) -> OutputStats:
    base = dict(bit_identical=False, shapes_old=[[1, 4]], shapes_new=[[1, 4]],
                shapes_ref=[[1, 4]], maxabs_old_new=0.1, maxabs_old_ref=0.1,
                maxabs_new_ref=0.001, ref_magnitude=1.0, nonfinite_old=0, nonfinite_new=0)
    base.update(kw)
    return OutputStats(**base)


def _result(stats: OutputStats | None, shipped: str = "differs", old: Side = OK) -> ProbeResult:
    m = Measurement("linux-cpu, coreai-core 1.0.0b2", [], True, stats=stats) if stats else None
    return ProbeResult(SPEC, old, NEW, shipped, shipped, m, "/evidence")


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
    assert judge(_result(None, shipped="old-cannot-convert", old=failed),
                 load_policy()).reexport == "inconclusive"
    unmeasured = ProbeResult(SPEC, OK, NEW, "differs", "differs",
                             Measurement("none", ["b2: aborted"], False, "no runtime"), "/e")
    assert judge(unmeasured, load_policy()).verdict == "inconclusive"
    assert worst(["no", "inconclusive", "optional"]) == "inconclusive"
    assert worst(["optional", "required"]) == "required"


def test_nan_fixed_but_still_off_is_required_and_says_so():
    stats = _stats(maxabs_old_ref=None, maxabs_new_ref=0.4, nonfinite_old=10, nonfinite_new=0)
    v = judge(_result(stats), load_policy())
    assert v.reexport == "required" and "10 NaN/inf" in v.reason
    both = _stats(maxabs_old_ref=None, maxabs_new_ref=None, nonfinite_old=10, nonfinite_new=3)
    assert judge(_result(both), load_policy()).reexport == "optional"
