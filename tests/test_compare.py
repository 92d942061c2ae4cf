"""Probe comparisons across real converter releases, measured on the real runtime."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors.numpy import load_file

from inventory.policy import load_policy
from inventory.verdict import judge
from oracle.client import Pool
from oracle.compare import compare
from oracle.spec import ProbeSpec

pytestmark = pytest.mark.slow


def conv_t(dim: int, **kw) -> ProbeSpec:
    params = {"dim": dim, "in_channels": 8, "out_channels": 4, "kernel": [4] * dim,
              "stride": [2] * dim, "padding": [0] * dim, "output_padding": [0] * dim,
              "input_shape": [1, 8] + [6] * dim}
    params.update(kw)
    return ProbeSpec("conv_transpose", params)


def test_1d_output_padding_above_padding_changes_shape_0_4_1_to_0_4_2(env, pool):
    result = compare(conv_t(1, output_padding=[1]), env("0.4.1"), env("0.4.2"), pool,
                     use_cache=False)
    assert result.old.ok and result.new.ok
    assert result.old.digest == result.new.digest  # both converted the same module
    assert result.emitted == "differs" and result.shipped == "differs"
    m = result.measurement
    assert m is not None and m.ok and m.runtime == "linux-cpu, coreai-core 1.0.0b2"
    s = m.stats
    assert s.shapes_new == s.shapes_ref, "0.4.2 should agree with torch"
    verdict = judge(result, load_policy())
    # Whatever 0.4.1 does here, the verdict must follow from the measured shapes and errors.
    if s.shapes_old != s.shapes_ref:
        assert (verdict.verdict, verdict.reexport) == ("shape-change", "required")
    evidence = Path(result.evidence)
    assert (evidence / "shipped.diff").exists()
    for name in ("inputs", "reference", "old", "new"):
        assert load_file(m.files[name])  # every tensor stored as safetensors


def test_1d_output_padding_below_padding_is_measured_against_torch(env, pool):
    result = compare(conv_t(1, padding=[2], output_padding=[1]), env("0.4.1"), env("0.4.2"),
                     pool, use_cache=False)
    assert result.old.ok and result.new.ok
    if result.shipped == "identical":
        assert result.measurement is None and result.outputs == "not-run"
    else:
        assert result.measurement.ok
        assert result.measurement.stats.shapes_new == result.measurement.stats.shapes_ref


def test_2d_conv_transpose_with_output_padding(env, pool):
    result = compare(conv_t(2, output_padding=[1, 1]), env("0.4.1"), env("0.4.2"), pool,
                     use_cache=False)
    assert result.new.ok, result.new.error
    verdict = judge(result, load_policy())
    if not result.old.ok:
        # A conversion error is a verdict of its own, with its error line and traceback kept.
        assert result.emitted == result.shipped == "old-cannot-convert"
        assert result.old.error and Path(result.old.files["traceback"]).exists()
        assert verdict.verdict == "old-cannot-convert" and verdict.reexport == "inconclusive"
    else:
        assert result.shipped in ("identical", "differs")
    if result.shipped == "differs":
        s = result.measurement.stats
        assert s.shapes_new == s.shapes_ref
        assert s.maxabs_new_ref is not None and s.maxabs_new_ref < 1e-4 * max(1, s.ref_magnitude)


def test_one_runtime_for_both_sides_when_cores_differ(env, pool):
    """0.4.0 pins coreai-core b1, 0.4.2 pins b2: both assets must run on one of them."""
    result = compare(conv_t(1, output_padding=[1]), env("0.4.0"), env("0.4.2"), pool,
                     use_cache=False)
    m = result.measurement
    assert m is not None and m.ok, m and m.attempts
    assert m.runtime in ("linux-cpu, coreai-core 1.0.0b1", "linux-cpu, coreai-core 1.0.0b2")
    if m.runtime.endswith("b1"):
        assert m.attempts and "1.0.0b2" in m.attempts[0]  # the b2 attempt and why it was left


def test_0_4_3_converts_and_its_shipped_stage_is_compared(env, pool):
    result = compare(conv_t(1), env("0.4.2"), env("0.4.3"), pool, use_cache=False)
    assert result.old.ok and result.new.ok
    assert result.new.emitted_is_optimized and not result.old.emitted_is_optimized


def test_a_repeat_comes_from_the_store_without_converting(env, tmp_path):
    spec = conv_t(1, kernel=[3], output_padding=[1])
    with Pool(tmp_path / "cold") as pool:
        first = compare(spec, env("0.4.1"), env("0.4.2"), pool)
    with Pool(tmp_path / "warm") as pool:
        again = compare(spec, env("0.4.1"), env("0.4.2"), pool)
        assert not pool._workers, "a stored result must not start a worker"
    assert again.cached and again.shipped == first.shipped and again.outputs == first.outputs


def test_a_crashing_worker_is_contained(env, tmp_path, monkeypatch):
    monkeypatch.setenv("INVENTORY_WORKER_FAULT", "crash")
    with Pool(tmp_path / "logs") as pool:
        result = compare(conv_t(1, kernel=[5]), env("0.4.1"), env("0.4.2"), pool,
                         use_cache=False)
    assert not result.old.ok and "SIGABRT" in result.old.error
    verdict = judge(result, load_policy())
    assert verdict.reexport == "inconclusive"
