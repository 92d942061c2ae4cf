"""The values each probe regime claims are really there: trained-looking parameters, adversarial
inputs, integer extremes, the probe's own interface. Split out of test_probes.py (which checks the
graphs); the quantize probes are built where coreai-torch is, as there."""

from __future__ import annotations

import inspect
import json
import math
import subprocess
from typing import Any

import pytest
import torch
from cli import ROOT
from regimes import needs_converter

from oracle import constructs
from oracle.catalog.regimes import Regime, load_regimes
from oracle.workers import probes

REGIMES = load_regimes()


# ---- what the values claim ----------------------------------------------------------------------


def _state(probe: probes.Probe) -> dict[str, torch.Tensor]:
    """The values as the builder made them (fp32), before the recipe's cast."""
    assert probe.original is not None
    return dict(probe.original.state_dict())


def _values_batch_norm(r: Regime, probe: probes.Probe) -> None:
    state = _state(probe)
    mean = state["bn.running_mean"]
    var = state["bn.running_var"].double()
    weight, bias = state["bn.weight"], state["bn.bias"]
    if r.spec.values == "init":
        # a freshly built module, as the converter's own batch-norm tests export it
        assert (mean == 0).all() and (var == 1).all()
        assert (weight == 1).all() and (bias == 0).all()
        return
    assert (mean != 0).all() and not torch.allclose(weight, torch.ones_like(weight))
    assert (bias != 0).all()
    regime = r.spec.params.get(
        "running_var", {"trained": "spread", "adversarial": "mixed"}[r.spec.values]
    )
    tiny, huge = var < probes.FP16_TINY, var > probes.FP16_MAX
    if regime == "spread":
        assert not tiny.any() and not huge.any()
        assert var.max() / var.min() > 100  # orders of magnitude apart
    elif regime == "tiny":
        assert tiny.all() and (var < 6e-8).any()  # some even below fp16's smallest subnormal
    elif regime == "huge":
        assert huge.all()
    else:
        assert tiny.any() and huge.any() and (~tiny & ~huge).any()
    assert probe.inputs["x"].dtype == probes.DTYPES[r.spec.dtype]
    pd = probes.DTYPES[r.spec.params.get("param_dtype", r.spec.dtype)]
    module: Any = probe.module  # the construct's own module: its parts are typed as Modules
    assert module.bn.running_var.dtype == pd
    if r.spec.params.get("depthwise_kernel"):
        assert module.conv.weight.dtype == probes.DTYPES[r.spec.dtype]


def _values_atan2(r: Regime, probe: probes.Probe) -> None:
    if r.spec.values != "adversarial":
        return
    y, x = (probe.inputs[k] for k in ("y", "x"))
    if y.is_floating_point():
        for t in (y, x):
            assert ((t == 0) & ~t.signbit()).any() and ((t == 0) & t.signbit()).any()
            assert (t == math.inf).any() and (t == -math.inf).any() and t.isnan().any()
        # every pair: NaN against +-0, +-0 against +-0, +-inf against +-inf
        assert (y.isnan() & (x == 0)).any() and ((y == 0) & (x == 0) & x.signbit()).any()
        assert (y.isinf() & x.isinf()).any()
    else:
        assert ((y == 0) & (x == 0)).any()


def _values_min_dim(r: Regime, probe: probes.Probe) -> None:
    x = probe.inputs["x"]
    int_dtype = r.spec.params.get("int_dtype")
    if int_dtype:
        assert x.dtype == torch.int32  # graph inputs are int32; int8 is a cast inside
        extremal = (x == probes.INT_MIN[int_dtype]).any(dim=r.spec.params["dim"])
        assert extremal.all() == (r.spec.values == "adversarial")
        assert x.min() >= probes.INT_MIN[int_dtype] and x.max() <= probes.INT_MAX[int_dtype]
    else:
        assert (x == -math.inf).any(dim=r.spec.params["dim"]).all() == (
            r.spec.values == "adversarial"
        )


def _values_true_divide(r: Regime, probe: probes.Probe) -> None:
    a = probe.inputs["a"]
    if r.spec.params["operands"] == "int32":
        assert a.dtype == torch.int32
        if "b" in probe.inputs:
            assert probe.inputs["b"].dtype == torch.int32
        if r.spec.values == "adversarial":
            assert (a == probes.INT_MAX["int32"]).any() and (a == probes.INT_MIN["int32"]).any()
            assert (a.abs() > 2**24).any()  # beyond fp32's exact integers
        if r.spec.params.get("divide_by_zero"):
            b = probe.inputs["b"]
            assert ((b == 0) & (a != 0)).any() and ((b == 0) & (a == 0)).any()
        else:  # results that are not integers: truncation shows
            b = probe.inputs.get("b", torch.tensor(r.spec.params.get("divisor", 7)))
            assert (torch.remainder(a, b) != 0).any()


def _values_mean_dtype(r: Regime, probe: probes.Probe) -> None:
    x = probe.inputs["x"]
    if r.spec.params["operand"] == "int32":
        assert x.dtype == torch.int32
        if r.spec.values == "adversarial":  # the sum does not fit int32
            assert x.long().sum(dim=-1).abs().max() > 2**31
    elif r.spec.values == "adversarial":  # the sum does not fit fp16
        assert x.float().sum(dim=-1).abs().max() > probes.FP16_MAX


def _values_max_pool2d(r: Regime, probe: probes.Probe) -> None:
    if r.spec.values == "adversarial":
        x = probe.inputs["x"]
        assert (x < 0).all() and (x == -math.inf).any()


def _values_norm(r: Regime, probe: probes.Probe) -> None:
    for name, t in _state(probe).items():
        if name.endswith("weight"):
            assert not torch.allclose(t, torch.ones_like(t))
        if name.endswith("bias"):
            assert (t != 0).all()


def _values_rotary(r: Regime, probe: probes.Probe) -> None:
    x = probe.reference_inputs["x"]
    # outlier features near fp16's largest where adversarial; the tables are a cos and a sin
    assert (x.abs() > 1e4).any() == (r.spec.values == "adversarial")
    cos, sin = probe.reference_inputs["cos"], probe.reference_inputs["sin"]
    assert torch.allclose(
        cos.double() ** 2 + sin.double() ** 2, torch.ones_like(cos.double()), atol=2e-3
    )


def _values_glu(r: Regime, probe: probes.Probe) -> None:
    # gates far out on both sides, where the sigmoid saturates, where adversarial
    x = probe.reference_inputs["x"]
    assert ((x > 30).any() and (x < -30).any()) == (r.spec.values == "adversarial")


def _values_cache_update(r: Regime, probe: probes.Probe) -> None:
    # the state and the step's input carry a few outlier activations where adversarial
    for name in ("state", "x"):
        t = probe.reference_inputs[name]
        assert (t.abs() > 20).any() == (r.spec.values == "adversarial"), name


def _values_embedding(r: Regime, probe: probes.Probe) -> None:
    # every index a row of the table, its first and last rows among them where adversarial
    p, indices = r.spec.params, probe.reference_inputs["indices"]
    assert int(indices.min()) >= 0 and int(indices.max()) < p["num_embeddings"]
    edges = {0, p["num_embeddings"] - 1} <= set(indices.view(-1).tolist())
    assert edges or r.spec.values != "adversarial"


VALUE_CHECKS = {
    "embedding": _values_embedding,
    "cache_update": _values_cache_update,
    "rotary": _values_rotary,
    "glu": _values_glu,
    "batch_norm": _values_batch_norm,
    "atan2": _values_atan2,
    "min_dim": _values_min_dim,
    "true_divide": _values_true_divide,
    "mean_dtype": _values_mean_dtype,
    "max_pool2d": _values_max_pool2d,
    "layer_norm": _values_norm,
    "group_norm": _values_norm,
}


# Probes of coreai-torch's own ops are built where coreai-torch is: their values are checked in
# a converter environment by test_quantize_values_in_converter_env.
BUILT_HERE = [r for r in REGIMES if not needs_converter(r)]


@pytest.mark.parametrize("regime", BUILT_HERE, ids=[r.id for r in BUILT_HERE])
def test_probe_values_are_what_the_regime_claims(regime: Regime):
    spec = regime.spec.to_json()
    probe = probes.build(spec)
    again = probes.build(spec)
    assert probes.digest(probe.module, probe.inputs) == probes.digest(again.module, again.inputs)
    # forward arguments are the inputs, by name and in order
    names = list(inspect.signature(probe.module.forward).parameters)
    assert names == list(probe.inputs)
    # an input the builder keeps in its dtype (fp32 rotary tables beside an fp16 model, as the
    # model computes them) stays fp32
    kept = constructs.get(regime.construct).build
    assert kept is not None
    fixed = kept(spec["params"], torch.Generator().manual_seed(0), spec["values"]).fixed_dtype
    for name, value in probe.inputs.items():
        if value.is_floating_point() and name in fixed:
            assert value.dtype == torch.float32, name
        elif value.is_floating_point():  # cast to the regime's dtype, as the recipe casts
            assert value.dtype == probes.DTYPES[regime.spec.dtype], name
        else:
            assert value.dtype == torch.int32, f"integer input {name} must be int32"
    trained = regime.spec.values != "init"
    for name, t in _state(probe).items():
        if t.is_floating_point() and t.numel() > 1 and trained:
            assert t.unique().numel() > 1, f"{name} is constant: not trained-looking"
    if regime.construct in VALUE_CHECKS:
        VALUE_CHECKS[regime.construct](regime, probe)
    # The fp32 twin runs (except a conv transpose eager torch itself rejects: #79's regimes).
    p = regime.spec.params
    eager_rejects = regime.construct == "conv_transpose" and any(
        o >= s and o >= d
        for o, s, d in zip(
            p["output_padding"], p["stride"], p.get("dilation", [1] * len(p["stride"])), strict=True
        )
    )
    if not eager_rejects:
        with torch.no_grad():
            probe.reference_module(*probe.reference_inputs.values())


_QUANT_VALUES = """
import json, sys
sys.path.insert(0, {root!r})
import torch
from oracle.workers import probes
out = {{}}
for key, spec in json.loads(sys.stdin.read()).items():
    probe = probes.build(spec)
    x = probe.reference_inputs["x"]
    dq = probe.reference_module(*probe.reference_inputs.values())
    view = [-1 if d == spec["params"]["axis"] % x.dim() else 1 for d in range(x.dim())]
    ratio = x / probe.reference_module.scale.view(view)
    out[key] = {{"dq_dtype": str(dq.dtype),
                "saturated": bool((ratio.abs() > 127.5).any()),
                "ties": bool((ratio - ratio.floor() == 0.5).any()),
                "x": x.tolist(), "scale": probe.reference_module.scale.tolist()}}
print(json.dumps(out))
"""


def test_quantize_values_in_converter_env(newest_env):
    """The quantize probes, built where coreai-torch is: int8 codes, per-channel scales."""
    wanted = {r.id: r for r in REGIMES if r.construct == "quantize"}
    assert wanted
    proc = subprocess.run(
        [str(newest_env.python), "-c", _QUANT_VALUES.format(root=str(ROOT))],
        input=json.dumps({k: r.spec.to_json() for k, r in wanted.items()}),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    for key, regime in wanted.items():
        got = out[key]
        assert got["dq_dtype"] == "torch.float32"
        p = regime.spec.params
        x = torch.tensor(got["x"])
        scale = torch.tensor(got["scale"])
        axis = p["axis"] % len(p["shape"])
        assert list(scale.shape) == [p["shape"][axis]]
        magnitude = x.abs().amax(dim=[d for d in range(x.dim()) if d != axis])
        assert magnitude.max() / magnitude.min() > 10
        if regime.spec.values == "adversarial":  # saturation and exact rounding ties
            assert got["saturated"] and got["ties"]


def test_builders_keep_the_interface():
    """A builder is (params, generator, values) -> Built, fp32 module, inputs named as forward's;
    one whose construct reads a checkpoint (--weights) also takes `tensors`."""
    from oracle import constructs

    for construct, builder in probes.builders().items():
        takes = ["params", "gen", "values"] + (
            ["tensors"] if constructs.get(construct).checkpoint else []
        )
        assert list(inspect.signature(builder).parameters) == takes, construct
