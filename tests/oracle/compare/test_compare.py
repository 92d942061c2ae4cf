"""Probe comparisons across real converter releases, measured on the real runtime."""

from __future__ import annotations

from pathlib import Path

import pytest
from safetensors.numpy import load_file

from inventory.policy import load_policy
from inventory.verdict import judge
from oracle.clients.worker_pool import Pool
from oracle.compare.spec import ProbeSpec
from oracle.executors.comparison import compare


def conv_t(dim: int, **kw) -> ProbeSpec:
    params = {
        "dim": dim,
        "in_channels": 8,
        "out_channels": 4,
        "kernel": [4] * dim,
        "stride": [2] * dim,
        "padding": [0] * dim,
        "output_padding": [0] * dim,
        "input_shape": [1, 8] + [6] * dim,
    }
    params.update(kw)
    return ProbeSpec("conv_transpose", params)


def test_1d_output_padding_above_padding_changes_shape_0_4_1_to_0_4_2(env, pool):
    result = compare(
        conv_t(1, output_padding=[1]), env("0.4.1"), env("0.4.2"), pool, use_cache=False
    )
    assert result.old.ok and result.new.ok
    assert result.old.digest == result.new.digest  # both converted the same module
    assert result.emitted == "differs" and result.shipped == "differs"
    m = result.measurement
    assert m is not None and m.ok and m.runtime == "linux-cpu, coreai-core 1.0.0b2"
    s = m.stats
    assert s is not None
    # k4 s2 p0 op1 on length 6: torch gives (6-1)*2 + 4 + 1 = 15; 0.4.1 pre-pads and ships 16.
    assert s.shapes_ref == s.shapes_new == [[1, 4, 15]]
    assert s.shapes_old == [[1, 4, 16]]
    assert s.maxabs_old_new is None  # no elementwise distance between different shapes
    verdict = judge(result, load_policy())
    assert (verdict.verdict, verdict.reexport) == ("shape-change", "required")
    assert "[[1, 4, 16]] is wrong, torch gives [[1, 4, 15]]" in verdict.reason
    evidence = Path(result.evidence)
    assert (evidence / "shipped.diff").exists()
    for name in ("inputs", "reference", "old", "new"):
        assert load_file(m.files[name])  # every tensor stored as safetensors


def test_1d_output_padding_below_padding_is_measured_against_torch(env, pool):
    result = compare(
        conv_t(1, padding=[2], output_padding=[1]),
        env("0.4.1"),
        env("0.4.2"),
        pool,
        use_cache=False,
    )
    assert result.old.ok and result.new.ok
    # Padding above output_padding: the programs differ, yet compute the same bits as torch's
    # shape; re-exporting is optional.
    assert (result.emitted, result.shipped, result.outputs) == (
        "differs",
        "differs",
        "bit-identical",
    )
    assert result.measurement is not None
    s = result.measurement.stats
    assert s is not None
    assert s.shapes_old == s.shapes_new == s.shapes_ref == [[1, 4, 11]]
    assert s.maxabs_old_new == 0.0
    verdict = judge(result, load_policy())
    assert (verdict.verdict, verdict.reexport) == ("values-identical", "optional")


def test_2d_conv_transpose_with_output_padding(env, pool):
    result = compare(
        conv_t(2, output_padding=[1, 1]), env("0.4.1"), env("0.4.2"), pool, use_cache=False
    )
    assert result.new.ok, result.new.error
    # 0.4.1 cannot convert the 2-D form: its pre-padding makes the output one row too long.
    # A conversion error is a verdict of its own, with its error line and traceback kept.
    assert not result.old.ok and result.old.stage == "convert"
    assert result.old.error == "ValueError: convolution[0]: dim[2] 16 vs 15"
    assert Path(result.old.files["traceback"]).exists()
    assert result.emitted == result.shipped == "old-cannot-convert"
    assert result.measurement is None and result.outputs == "not-run"
    verdict = judge(result, load_policy())
    assert verdict.verdict == "old-cannot-convert" and verdict.reexport == "inconclusive"


# Twice, as two tests: each is a run of its own, so the second tries b2 again (a pool shared by
# the session carried the first's abort into the next test, which then read "not retried").
@pytest.mark.parametrize("run", ["a-run", "the-next-run"])
def test_one_runtime_for_both_sides_when_cores_differ(env, pool, run):
    """0.4.0 pins coreai-core b1, 0.4.2 pins b2: both assets must run on one of them."""
    result = compare(
        conv_t(1, output_padding=[1]), env("0.4.0"), env("0.4.2"), pool, use_cache=False
    )
    m = result.measurement
    assert m is not None and m.ok, m and m.attempts
    # coreai-core b2 aborts natively on a 0.4.0 asset: the abort is contained, reported as an
    # attempt, and both assets are measured on b1 (the old side's runtime) instead.
    assert m.runtime == "linux-cpu, coreai-core 1.0.0b1"
    (attempt,) = m.attempts
    assert attempt.startswith(
        "linux-cpu, coreai-core 1.0.0b2: coreai-torch-0.4.2 worker died of SIGABRT"
    )
    assert judge(result, load_policy()).reason.endswith("(linux-cpu, coreai-core 1.0.0b1)")


def test_a_runtime_that_aborted_is_not_asked_again_in_its_run_but_is_in_the_next(
    env, pool, tmp_path
):
    """A run remembers that b2 aborted on a b1 asset (each abort costs a worker restart); the
    next run, on the same warm workers, does not inherit that memory."""
    spec = conv_t(1, output_padding=[1])
    first = compare(spec, env("0.4.0"), env("0.4.2"), pool, use_cache=False).measurement
    again = compare(spec, env("0.4.0"), env("0.4.2"), pool, use_cache=False).measurement
    with Pool(tmp_path / "next-run") as next_run:
        fresh = compare(spec, env("0.4.0"), env("0.4.2"), next_run, use_cache=False).measurement
    b2 = "linux-cpu, coreai-core 1.0.0b2: "
    died = "coreai-torch-0.4.2 worker died of SIGABRT"
    assert first is not None and again is not None and fresh is not None
    for m in (first, again, fresh):
        assert m.ok and m.runtime == "linux-cpu, coreai-core 1.0.0b1", m
    assert len(first.attempts) == 1 and first.attempts[0].startswith(b2 + died)
    assert again.attempts == [
        f"{b2}not retried (earlier in this run: {first.attempts[0][len(b2) :]})"
    ]
    assert len(fresh.attempts) == 1 and fresh.attempts[0].startswith(b2 + died)


def test_0_4_3_converts_and_its_shipped_stage_is_compared(env, pool):
    result = compare(conv_t(1), env("0.4.2"), env("0.4.3"), pool, use_cache=False)
    assert result.old.ok and result.new.ok
    assert result.new.emitted_is_optimized and not result.old.emitted_is_optimized
    # the emitted stages have no counterpart; the shipped programs are the same
    assert (result.emitted, result.shipped) == ("not-comparable", "identical")


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
        result = compare(conv_t(1, kernel=[5]), env("0.4.1"), env("0.4.2"), pool, use_cache=False)
    assert not result.old.ok and "SIGABRT" in result.old.error
    verdict = judge(result, load_policy())
    assert verdict.reexport == "inconclusive"


def test_when_only_the_new_release_converts_its_program_is_run_against_torch(env, pool):
    """0.4.1 has no atan2 lowering. 0.4.2's program for the upstream tests' pairs is right, and
    for every pair of specials it is not: +-pi at x = -0.0, y != 0, where torch gives +-pi/2."""
    from oracle.catalog.regimes import load_regimes

    regimes = {r.id: r for r in load_regimes()}
    policy = load_policy()
    checked = {}
    for name in ("fp32-upstream-pairs", "fp32-specials"):
        result = compare(
            regimes[f"atan2/{name}"].spec, env("0.4.1"), env("0.4.2"), pool, use_cache=False
        )
        assert result.shipped == "old-cannot-convert" and result.measurement is None
        a = result.alone
        assert a is not None and a.side == "new" and a.ok
        assert a.runtime == "linux-cpu, coreai-core 1.0.0b2"
        new = load_file(a.files["new"])["out0"]
        ref = load_file(a.files["reference"])["out0"]
        assert new.shape == ref.shape == (8, 8)
        checked[name] = (judge(result, policy), new, ref, load_file(a.files["inputs"]))
    assert checked["fp32-upstream-pairs"][0].alone == "right"
    verdict, new, ref, inputs = checked["fp32-specials"]
    assert verdict.alone == "wrong" and "is WRONG against torch fp32" in verdict.reason
    # the wrong elements, read off the stored tensors: x = -0.0 with a finite non-zero y
    import numpy as np

    y, x = inputs["y"].ravel(), inputs["x"].ravel()
    off = ~np.isclose(new.ravel(), ref.ravel(), atol=1e-4, equal_nan=True)
    assert off.any()
    assert all(x[i] == 0.0 and np.signbit(x[i]) and y[i] != 0.0 for i in np.flatnonzero(off))


def test_a_program_torch_itself_cannot_run_is_not_checked_and_says_why(env, pool):
    """output_padding equal to the stride: torch.export exports it and 0.4.2 converts it, yet
    torch refuses to run it (0.4.3 refuses to convert it, as torch does). The one program there
    is has no reference to be checked against: not run, never right."""
    from oracle.catalog.regimes import load_regimes

    spec = {r.id: r for r in load_regimes()}["conv_transpose/1d-op-eq-stride"].spec
    result = compare(spec, env("0.4.2"), env("0.4.3"), pool, use_cache=False)
    assert result.shipped == "new-cannot-convert"
    a = result.alone
    assert a is not None and a.side == "old" and not a.ok
    assert a.error.startswith("torch cannot run the probe in fp32: RuntimeError: output padding")
    assert judge(result, load_policy()).alone == "not-run"
