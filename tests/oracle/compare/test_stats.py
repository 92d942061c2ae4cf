"""`oracle/compare/stats.py`: the numbers read off stored output tensors (no converter, no runtime).

Each case writes the old, new and reference outputs as safetensors, as a measurement does, and
reads them back through `output_stats`.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from oracle.compare.stats import output_stats, side_stats

NAN, INF = np.nan, np.inf


def stats(tmp_path: Path, old: dict, new: dict, ref: dict):
    paths = []
    for name, tensors in (("old", old), ("new", new), ("reference", ref)):
        path = tmp_path / f"{name}.safetensors"
        save_file({k: np.ascontiguousarray(v) for k, v in tensors.items()}, str(path))
        paths.append(path)
    return output_stats(*paths)


def f32(*values: float) -> np.ndarray:
    return np.array(values, np.float32)


def test_identical_outputs_are_bit_identical_and_zero_apart(tmp_path):
    x = f32(1.0, -2.0, 3.0)
    s = stats(tmp_path, {"y": x}, {"y": x.copy()}, {"y": x.copy()})
    assert s.bit_identical
    assert (s.maxabs_old_new, s.maxabs_old_ref, s.maxabs_new_ref) == (0.0, 0.0, 0.0)
    assert s.shapes_old == s.shapes_new == s.shapes_ref == [[3]]
    assert s.ref_magnitude == 3.0 and s.nonfinite_old == s.nonfinite_new == 0


def test_a_different_dtype_is_not_bit_identical_even_with_equal_values(tmp_path):
    s = stats(
        tmp_path,
        {"y": f32(1.0, 2.0)},
        {"y": np.array([1.0, 2.0], np.float16)},
        {"y": f32(1.0, 2.0)},
    )
    assert not s.bit_identical and s.maxabs_old_new == 0.0


def test_nan_on_both_sides_is_no_distance_on_one_side_infinitely_far(tmp_path):
    both = stats(tmp_path, {"y": f32(NAN, 1.0)}, {"y": f32(NAN, 1.5)}, {"y": f32(1.0, 1.0)})
    assert both.maxabs_old_new == 0.5  # the NaN pair counts as agreeing; 1.0 vs 1.5 does not
    one = stats(tmp_path, {"y": f32(NAN, 1.0)}, {"y": f32(2.0, 1.0)}, {"y": f32(1.0, 1.0)})
    assert one.maxabs_old_new == math.inf
    # vs the finite reference: a NaN output is infinitely far and counted as non-finite
    assert one.maxabs_old_ref == math.inf and one.nonfinite_old == 1
    assert one.maxabs_new_ref == 1.0 and one.nonfinite_new == 0


def test_same_sign_infinities_agree_opposite_signs_do_not(tmp_path):
    same = stats(
        tmp_path, {"y": f32(INF, -INF, 2.0)}, {"y": f32(INF, -INF, 2.0)}, {"y": f32(INF, -INF, 2.0)}
    )
    assert same.maxabs_old_new == 0.0 and same.maxabs_old_ref == 0.0
    # where the reference itself is not finite, a non-finite output is not counted against it
    assert same.nonfinite_old == 0
    opposite = stats(tmp_path, {"y": f32(INF, 2.0)}, {"y": f32(-INF, 2.0)}, {"y": f32(INF, 2.0)})
    assert opposite.maxabs_old_new == math.inf and opposite.maxabs_new_ref == math.inf


def test_reference_values_fp16_cannot_hold_are_left_out_and_counted(tmp_path):
    """torch fp32 gives 70000 where an fp16 program can only give inf (fp16's max is 65504):
    no program could produce it, so it is masked out of the errors, the non-finite counts and
    the magnitude, and counted as unrepresentable."""
    ref = f32(70000.0, 100.0, -3.0)
    old = np.array([INF, 100.0, -3.0], np.float16)
    new = np.array([INF, 100.0, -3.5], np.float16)
    s = stats(tmp_path, {"y": old}, {"y": new}, {"y": ref})
    assert s.unrepresentable == 1
    assert s.nonfinite_old == s.nonfinite_new == 0
    assert s.maxabs_old_ref == 0.0 and s.maxabs_new_ref == 0.5
    assert s.ref_magnitude == 100.0  # not 70000: the masked value is not the scale
    assert s.maxabs_old_new == 0.5  # old vs new has no mask: inf == inf agrees

    # the same reference against fp32 outputs is representable: nothing is masked
    s32 = stats(
        tmp_path, {"y": f32(INF, 100.0, -3.0)}, {"y": f32(70000.0, 100.0, -3.0)}, {"y": ref}
    )
    assert s32.unrepresentable == 0 and s32.ref_magnitude == 70000.0
    assert s32.nonfinite_old == 1 and s32.maxabs_old_ref == math.inf


def test_ref_magnitude_is_the_largest_reference_value_over_all_outputs(tmp_path):
    s = stats(
        tmp_path,
        {"a": f32(1.0), "b": f32(0.0, 0.0)},
        {"a": f32(1.0), "b": f32(0.0, 0.0)},
        {"a": f32(-9.5), "b": f32(2.0, -4.0)},
    )
    assert s.ref_magnitude == 9.5
    # the worst output decides each distance
    assert s.maxabs_old_ref == 10.5 and s.shapes_ref == [[1], [2]]  # outputs in name order


def test_a_shape_mismatch_has_no_elementwise_distance(tmp_path):
    s = stats(
        tmp_path,
        {"y": np.zeros((1, 4, 16), np.float32)},
        {"y": np.zeros((1, 4, 15), np.float32)},
        {"y": np.zeros((1, 4, 15), np.float32)},
    )
    assert not s.bit_identical
    assert s.maxabs_old_new is None and s.maxabs_old_ref is None
    assert s.maxabs_new_ref == 0.0
    assert (s.shapes_old, s.shapes_new) == ([[1, 4, 16]], [[1, 4, 15]])


def test_an_output_missing_from_a_side_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="an output is missing from a side's tensors"):
        stats(tmp_path, {"y": f32(1.0)}, {"other": f32(1.0)}, {"y": f32(1.0)})


def test_one_side_alone_is_read_against_the_reference_by_the_same_rules(tmp_path):
    out, ref = tmp_path / "new.safetensors", tmp_path / "reference.safetensors"
    save_file({"y": f32(math.pi, NAN, 2.0)}, str(out))
    save_file({"y": f32(math.pi / 2, 1.0, 2.0)}, str(ref))
    s = side_stats(out, ref)
    assert s.shapes == s.shapes_ref == [[3]]
    assert s.maxabs_ref == math.inf  # NaN where torch is finite is infinitely far
    assert s.nonfinite == 1 and s.ref_magnitude == 2.0
    save_file({"y": f32(math.pi, 1.0, 2.0)}, str(out))
    assert side_stats(out, ref).maxabs_ref == pytest.approx(math.pi / 2)
    save_file({"y": f32(1.0, 2.0)}, str(out))
    assert side_stats(out, ref).maxabs_ref is None  # shapes differ: no elementwise distance


def test_nan_and_inf_in_the_reference_do_not_make_the_magnitude_nan_or_inf(tmp_path):
    """Errors are read relative to the magnitude: a NaN one made every error fall back to an
    absolute one, an infinite one every relative error 0 (or NaN, which no tolerance refuses)."""
    s = stats(
        tmp_path,
        {"y": f32(1.0, NAN, INF, 3.0)},
        {"y": f32(1.0, NAN, INF, 0.0)},
        {"y": f32(1.0, NAN, INF, 3.0)},
    )
    assert s.ref_magnitude == 3.0
    assert s.maxabs_new_ref == 3.0
