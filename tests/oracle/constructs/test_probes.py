"""Every probe regime exercises what it claims.

For each regime in oracle/catalog/regimes.toml: build it with `oracle.workers.probes.build`, export
it the way the
worker does (torch.export, then the regime's decomposition table), and assert the graph the
converter would receive holds the targeted op with the targeted arguments and dtypes; and assert
the values the regime claims (trained-looking parameters, adversarial inputs) are really there.

The coreai table is coreai-torch's own `get_decomp_table()`: the main venv has no coreai-torch, so
it is taken from the newest converter environment's `coreai_torch/_decomp.py` (a file that needs
only torch, and every environment shares the main venv's torch). Probes of coreai-torch's own
custom ops (quantize) cannot even be built without coreai-torch: those are built and exported in
one subprocess of that environment's python, exactly as the worker does. The environment comes
from the session fixture `newest_env` (tests/conftest.py), which builds it if need be. No
converter is run here.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import math
import subprocess
import textwrap
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import torch
from regimes import needs_converter

from oracle import constructs
from oracle.catalog.regimes import Regime, load_regimes
from oracle.envs.environment import Env
from oracle.workers import probes

ROOT = Path(__file__).resolve().parents[3]
REGIMES = load_regimes()
IDS = [r.id for r in REGIMES]

# The constructs the changelog's lowering changes touch (externalization, #18/#53, has none).
CHANGELOG_CONSTRUCTS = {
    "conv_transpose",
    "batch_norm",
    "layer_norm",
    "group_norm",
    "true_divide",
    "mean_dtype",
    "min_dim",
    "max_pool2d",
    "atan2",
    "quantize",
    "pad",
    "arange",
    "repeat_symbolic",
    "cat_dynamic",
    "view_dynamic",
    "masked_scatter",
    "select_dynamic",
}
# Constructs found by tracing the recipes whose lowering a changelog change rewrote, though the
# changelog does not name them: floor division (sam3) is lowered by div.Tensor_mode's function,
# which #32 rewrote.
TRACED_CONSTRUCTS = {"floor_divide"}
# Constructs of the transformer era whose lowering did not change over the catalog's releases
# ([[unchanged]] in oracle/catalog/fixes.toml): probed for the registry sweep and coverage.
UNCHANGED_CONSTRUCTS = {
    "softmax",
    "matmul",
    "sdpa",
    "silu",
    "gelu",
    "rms_norm",
    "glu",
    "rotary",
    "scaled_residual",
    "cache_update",
    "embedding",
}
# Regimes the changelog names as controls, by construct.
CHANGELOG_CONTROLS = {
    "cat_dynamic",
    "repeat_symbolic",
    "arange",
    "pad",
    "true_divide",
    "mean_dtype",
    "min_dim",
    "max_pool2d",
    "batch_norm",
}


# ---- the regimes file -------------------------------------------------------------------------


def test_regimes_cover_every_changelog_construct_and_its_controls():
    regimed = {r.construct for r in REGIMES}
    assert regimed == CHANGELOG_CONSTRUCTS | TRACED_CONSTRUCTS | UNCHANGED_CONSTRUCTS
    assert (
        set(probes.builders())
        == {c.kind for c in constructs.probed()}
        == CHANGELOG_CONSTRUCTS | TRACED_CONSTRUCTS | UNCHANGED_CONSTRUCTS
    )
    controls = {r.construct for r in REGIMES if r.control}
    assert controls >= CHANGELOG_CONTROLS
    for construct in regimed:
        assert any(not r.control for r in REGIMES if r.construct == construct), construct


@pytest.mark.parametrize("regime", REGIMES, ids=IDS)
def test_regime_params_are_the_probes_params(regime: Regime):
    spec = regime.spec
    unknown = set(spec.params) - set(constructs.get(regime.construct).params)
    assert not unknown, f"not in the params of oracle/constructs/{regime.construct}.py: {unknown}"
    assert spec.dtype in probes.DTYPES and probes.DTYPES[spec.dtype].is_floating_point
    assert spec.values in ("init", "trained", "adversarial")
    assert spec.pipeline.decompositions in ("coreai", "default", "none")
    dynamic = any(k.startswith("dynamic_") for k in spec.params)
    assert (spec.pipeline.shapes == "dynamic") == dynamic, "pipeline.shapes must say dynamic"


# ---- building, exporting, describing -----------------------------------------------------------


def describe(graph: Any) -> list[dict[str, Any]]:
    """The call_function nodes of an exported graph as plain data (also run in a subprocess)."""

    import torch

    def meta(v: Any) -> Any:
        if isinstance(v, torch.Tensor):
            return {
                "dtype": str(v.dtype).removeprefix("torch."),
                "shape": [d if isinstance(d, int) else str(d) for d in v.shape],
            }
        if isinstance(v, tuple | list):
            return [meta(x) for x in v]
        if isinstance(v, torch.SymInt):
            return {"sym": str(v)}
        return None

    def arg(a: Any) -> Any:
        if isinstance(a, torch.fx.Node):
            return {
                "node": a.name,
                "op": str(a.target) if a.op == "call_function" else a.op,
                "val": meta(a.meta.get("val")),
            }
        if isinstance(a, tuple | list):
            return [arg(x) for x in a]
        if isinstance(a, torch.dtype):
            return str(a).removeprefix("torch.")
        if isinstance(a, float) and not math.isfinite(a):
            return str(a)
        if a is None or isinstance(a, bool | int | float | str):
            return a
        return str(a)

    return [
        {
            "name": n.name,
            "target": str(n.target),
            "args": [arg(a) for a in n.args],
            "kwargs": {k: arg(v) for k, v in n.kwargs.items()},
            "val": meta(n.meta.get("val")),
        }
        for n in graph.nodes
        if n.op == "call_function"
    ]


@cache
def coreai_table(env_path: Path) -> dict:
    """coreai-torch's get_decomp_table(), from a converter environment's own `_decomp.py` (a
    file that needs only torch, and every environment shares the main venv's torch)."""
    (file,) = sorted(env_path.glob("lib/python*/site-packages/coreai_torch/_decomp.py"))
    spec = importlib.util.spec_from_file_location("_coreai_torch_decomp", file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.get_decomp_table()


_SUBPROCESS = """
import json, sys, warnings
from typing import Any
warnings.filterwarnings("ignore")
sys.path.insert(0, {root!r})
import torch
import coreai_torch
from oracle.workers import probes
{describe}
out = {{}}
for key, spec in json.loads(sys.stdin.read()).items():
    probe = probes.build(spec)
    ep = torch.export.export(probe.module, tuple(probe.inputs.values()),
                             dynamic_shapes=probe.dynamic_shapes())
    decomp = spec["pipeline"]["decompositions"]
    if decomp == "coreai":
        ep = ep.run_decompositions(coreai_torch.get_decomp_table())
    elif decomp == "default":
        ep = ep.run_decompositions()
    out[key] = describe(ep.graph)
print(json.dumps(out))
"""


@cache
def converter_graphs(python: Path) -> dict[str, list[dict[str, Any]]]:
    """Graphs of the regimes that need coreai-torch, exported in one converter-env subprocess."""
    wanted = {r.id: r.spec.to_json() for r in REGIMES if needs_converter(r)}
    script = _SUBPROCESS.format(
        root=str(ROOT), describe=textwrap.dedent(inspect.getsource(describe))
    )
    proc = subprocess.run(
        [str(python), "-c", script],
        input=json.dumps(wanted),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def graph_of(regime: Regime, env: Env) -> list[dict[str, Any]]:
    """The graph the worker would hand the converter for this regime (the decomposition table
    and coreai-torch's custom ops come from `env`)."""
    if needs_converter(regime):
        return converter_graphs(env.python)[regime.id]
    probe = probes.build(regime.spec.to_json())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(
            probe.module, tuple(probe.inputs.values()), dynamic_shapes=probe.dynamic_shapes()
        )
        decomp = regime.spec.pipeline.decompositions
        if decomp == "coreai":
            ep = ep.run_decompositions(coreai_table(env.path))
        elif decomp == "default":
            ep = ep.run_decompositions()
    return describe(ep.graph)


# ---- what each construct's probe must put in the graph ------------------------------------------


def nodes(graph: list[dict], target: str) -> list[dict]:
    return [n for n in graph if n["target"] == target]


def one(graph: list[dict], target: str) -> dict:
    found = nodes(graph, target)
    assert len(found) == 1, f"expected one {target}, graph has: {[n['target'] for n in graph]}"
    return found[0]


def dtype_of(a: dict) -> str:
    return a["val"]["dtype"]


def shape_of(a: dict) -> list:
    return a["val"]["shape"]


def is_sym(d: Any) -> bool:
    return isinstance(d, str)


def _conv_transpose(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.convolution.default")
    x, _, _, stride, padding, dilation, transposed, output_padding, groups = n["args"]
    dim = int(p["dim"])
    assert transposed is True
    assert stride == list(p["stride"])
    assert padding == list(p.get("padding", [0] * dim))
    assert output_padding == list(p.get("output_padding", [0] * dim))
    assert dilation == list(p.get("dilation", [1] * dim))
    assert groups == p.get("groups", 1)
    assert x["node"] == "x" and dtype_of(x) == r.spec.dtype
    assert is_sym(shape_of(x)[-1]) == bool(p.get("dynamic_length"))


def _batch_norm(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten._native_batch_norm_legit_no_training.default")
    x, weight, bias, mean, var = n["args"][:5]
    assert dtype_of(x) == r.spec.dtype
    param_dtype = p.get("param_dtype", r.spec.dtype)
    for a in (weight, bias, mean, var):
        assert dtype_of(a) == param_dtype
    assert len(shape_of(x)) == 2 + int(p.get("dim", 1))
    if p.get("depthwise_kernel"):  # fed by a depthwise Conv1d, as in a Conformer
        conv = one(g, "aten.convolution.default")
        assert x["node"] == conv["name"]
        assert conv["args"][6] is False and conv["args"][8] == p["channels"]
        assert shape_of(conv["args"][1])[-1] == p["depthwise_kernel"]
        assert dtype_of(conv["args"][0]) == dtype_of(conv["args"][1]) == r.spec.dtype
    else:
        assert x["node"] == "x"


def _layer_norm(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.native_layer_norm.default")
    x, normalized, weight, bias = n["args"][:4]
    assert normalized == list(p["normalized_shape"]) and dtype_of(x) == r.spec.dtype
    affine = p.get("elementwise_affine", True)
    assert (weight is not None) == affine
    assert (bias is not None) == (affine and p.get("bias", True))
    for a in (weight, bias):
        if a is not None:
            assert shape_of(a) == list(p["normalized_shape"])


def _group_norm(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.native_group_norm.default")
    x, weight, bias, batch, channels, hw, groups = n["args"][:7]
    assert dtype_of(x) == r.spec.dtype and weight is not None and bias is not None
    assert channels == p["channels"] and groups == p["num_groups"]
    # A dynamic dim reaches the op as a sym_size node, a static one as an int.
    assert isinstance(batch, dict) == bool(p.get("dynamic_batch"))
    assert isinstance(hw, dict) == bool(p.get("dynamic_length"))
    for a in (batch, hw):
        if isinstance(a, dict):
            assert a["op"] == "aten.sym_size.int"


def _select_dynamic(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.select.int")
    x, dim, index = n["args"]
    assert (dim, index) == (p["dim"], p["index"]) and dtype_of(x) == r.spec.dtype
    assert is_sym(shape_of(x)[dim]) == bool(p.get("dynamic_length"))


def _true_divide(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    form = p["form"]
    operand = "int32" if p["operands"] == "int32" else r.spec.dtype
    if form == "div_mode_none":
        n = one(g, "aten.div.Tensor_mode")
        assert "rounding_mode" in n["kwargs"] and n["kwargs"]["rounding_mode"] is None
    else:
        n = one(g, "aten.div.Tensor")
    a, b = n["args"]
    assert a["node"] == "a" and dtype_of(a) == operand
    if form == "scalar":
        assert b == p["divisor"] and type(b) is type(p["divisor"])
    elif form == "tensor_0dim_fp32":
        assert dtype_of(b) == "float32" and shape_of(b) == []
    else:
        assert b["node"] == "b" and dtype_of(b) == operand
    # True division: a float result even of integer operands.
    expected = "float32" if operand == "int32" else r.spec.dtype
    assert n["val"]["dtype"] == expected


def _floor_divide(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    operand = "int32" if p["operands"] == "int32" else r.spec.dtype
    n = one(g, "aten.div.Tensor_mode")
    assert n["kwargs"].get("rounding_mode") == "floor"
    a, b = n["args"]
    assert a["node"] == "a" and dtype_of(a) == operand
    if p["form"] == "scalar":
        assert b == p["divisor"] and type(b) is type(p["divisor"])
    else:
        assert b["node"] == "b" and dtype_of(b) == operand
    assert n["val"]["dtype"] == operand  # floor division keeps the operands' type


def _mean_dtype(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.mean.dim" if p.get("dims") is not None else "aten.mean.default")
    x = n["args"][0]
    assert dtype_of(x) == ("int32" if p["operand"] == "int32" else r.spec.dtype)
    if p.get("dims") is not None:
        assert n["args"][1] == list(p["dims"])
    if p.get("dtype_arg", "float32"):
        assert n["kwargs"].get("dtype") == p.get("dtype_arg", "float32")
        assert n["val"]["dtype"] == p.get("dtype_arg", "float32")
    else:
        assert "dtype" not in n["kwargs"]


def _min_dim(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.min.dim")
    x, dim = n["args"][:2]
    assert dim == p["dim"]
    assert dtype_of(x) == p.get("int_dtype", r.spec.dtype)
    assert bool(n["args"][2] if len(n["args"]) > 2 else False) == p.get("keepdim", False)


def _max_pool2d(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.max_pool2d_with_indices.default")
    args = n["args"]
    assert args[1] == list(p["kernel"]) and dtype_of(args[0]) == r.spec.dtype
    stride = args[2] if len(args) > 2 else None
    if p.get("stride"):
        assert stride == list(p["stride"])
    elif p.get("form") == "module":
        assert stride == list(p["kernel"])  # nn.MaxPool2d records stride = kernel
    else:  # no stride in the graph: absent, or an empty list when padding follows
        assert stride in (None, [])
    padding = args[3] if len(args) > 3 else [0, 0]
    assert padding == list(p.get("padding", [0, 0]))


def _atan2(r: Regime, g: list[dict]) -> None:
    n = one(g, "aten.atan2.default")
    y, x = n["args"]
    operand = "int32" if r.spec.params.get("operands") == "int32" else r.spec.dtype
    assert (y["node"], x["node"]) == ("y", "x")
    assert dtype_of(y) == dtype_of(x) == operand


def _quantize(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    q = one(g, "coreai.quantize.default")
    dq = one(g, "coreai.dequantize.default")
    x, scale, qdtype, zero_point, _, axis = q["args"]
    assert dtype_of(x) == dtype_of(scale) == r.spec.dtype and qdtype == "int8"
    assert axis == p["axis"] and dq["args"][4] == p["axis"]
    assert shape_of(scale) == [p["shape"][p["axis"]]]
    assert (zero_point is not None) == bool(p.get("zero_point"))
    assert dq["args"][0]["node"] == q["name"]
    if p["axis"] < 0:  # the regime's name states whether another dim has the axis's size
        equal = sum(1 for d in p["shape"] if d == p["shape"][p["axis"]])
        claims_equal = "equal-dims" in r.name
        assert claims_equal != ("distinct-dims" in r.name), f"{r.name} states neither or both"
        assert (equal >= 2) == claims_equal, f"{r.name}: {equal} dims of the axis's size"


def _softmax(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten._softmax.default")
    x, dim, half_to_float = n["args"]
    assert dim == p["dim"] and half_to_float is False
    assert shape_of(x) == list(p["input_shape"])
    if p.get("upcast"):  # x.float() of the model's dtype, and the result cast back
        assert dtype_of(x) == "float32" and r.spec.dtype != "float32"
        cast = [c for c in g if c["name"] == x["node"]]
        assert cast and cast[0]["target"] == "aten._to_copy.default"
        assert dtype_of(cast[0]["args"][0]) == r.spec.dtype
        assert [c for c in nodes(g, "aten._to_copy.default") if c["args"][0]["node"] == n["name"]]
    else:
        assert dtype_of(x) == r.spec.dtype and x["node"] == "x"


def _matmul(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    if p["form"] == "linear":
        n = one(g, "aten.addmm.default" if p["bias"] else "aten.mm.default")
        a, b = n["args"][-2:]
        weight = one(g, "aten.permute.default")
        assert b["node"] == weight["name"] and weight["args"][1] == [1, 0]
        assert shape_of(weight["args"][0]) == [p["out_features"], p["in_features"]]
        assert shape_of(a) == [math.prod(p["input_shapes"][0][:-1]), p["in_features"]]
    else:
        n = one(g, "aten.bmm.default")
        a, b = n["args"]
        swaps = [t for t in nodes(g, "aten.permute.default") if t["args"][1] == [0, 1, 3, 2]]
        assert len(swaps) == (1 if p["transposed"] else 0)
        assert shape_of(a)[-2:] == p["input_shapes"][0][-2:]
    assert dtype_of(a) == dtype_of(b) == r.spec.dtype


def _sdpa(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.scaled_dot_product_attention.default")
    q, k, v, *rest = n["args"]
    assert shape_of(q) == list(p["q_shape"]) and shape_of(k) == list(p["kv_shape"])
    assert dtype_of(q) == dtype_of(k) == dtype_of(v) == r.spec.dtype
    mask = rest[0] if rest else n["kwargs"].get("attn_mask")
    if p["mask"] == "none":
        assert mask is None
    else:
        assert shape_of(mask) == list(p["mask_shape"])
        assert dtype_of(mask) == ("bool" if p["mask"] == "bool" else r.spec.dtype)
    causal = rest[2] if len(rest) > 2 else n["kwargs"].get("is_causal", False)
    assert causal == p["causal"]
    assert n["kwargs"].get("scale") == p.get("scale")


def _silu(r: Regime, g: list[dict]) -> None:
    n = one(g, "aten.silu.default")
    assert shape_of(n["args"][0]) == list(r.spec.params["input_shape"])
    assert dtype_of(n["args"][0]) == r.spec.dtype
    products = [m for m in nodes(g, "aten.mul.Tensor") if m["args"][0].get("node") == n["name"]]
    assert len(products) == (1 if r.spec.params["form"] == "gated" else 0)


def _gelu(r: Regime, g: list[dict]) -> None:
    n = one(g, "aten.gelu.default")
    assert shape_of(n["args"][0]) == list(r.spec.params["input_shape"])
    assert dtype_of(n["args"][0]) == r.spec.dtype
    assert n["kwargs"].get("approximate", "none") == r.spec.params["approximate"]


def _rms_norm(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.rsqrt.default")
    square = one(g, "aten.pow.Tensor_Scalar")
    assert square["args"][1] == 2 and one(g, "aten.mean.dim")["args"][1:] == [[-1], True]
    x = square["args"][0]
    assert dtype_of(x) == ("float32" if p["upcast"] else r.spec.dtype)
    assert shape_of(x) == list(p["input_shape"])
    assert dtype_of(n["args"][0]) == dtype_of(x)
    weights = [
        a for m in nodes(g, "aten.mul.Tensor") for a in m["args"] if a.get("node") == "p_weight"
    ]
    assert len(weights) == (1 if p["weight"] else 0)


def _glu(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    gate = one(g, "aten.sigmoid.default")["args"][0]["node"]
    halves = nodes(g, "aten.slice.Tensor")
    assert sorted((n["args"][1], n["args"][2], n["args"][3]) for n in halves) == [
        (p["dim"], 0, p["input_shape"][p["dim"]] // 2),
        (p["dim"], p["input_shape"][p["dim"]] // 2, p["input_shape"][p["dim"]]),
    ]
    assert gate in {n["name"] for n in halves}
    # torch's decomposition computes an fp16 GLU in fp32 between two casts
    assert len(nodes(g, "aten._to_copy.default")) == (2 if r.spec.dtype == "float16" else 0)
    assert {dtype_of(n["args"][0]) for n in halves} == {"float32"}


def _rotary(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    neg = one(g, "aten.neg.default")
    [cat] = nodes(g, "aten.cat.default")
    rotated = one(g, "aten.add.Tensor")
    assert shape_of(rotated) == list(p["input_shape"])
    # the negated half (rotate-half) or the negated odd element (pairwise) is cat's first input
    first = cat["args"][0][0]["node"]
    assert first == neg["name"] or first in {
        n["name"] for n in nodes(g, "aten.unsqueeze.default") if n["args"][0]["node"] == neg["name"]
    }
    assert len(nodes(g, "aten.squeeze.dims")) == (2 if p["form"] == "pairwise" else 0)
    assert dtype_of(rotated) == ("float32" if p["upcast"] else r.spec.dtype)
    casts = len(nodes(g, "aten._to_copy.default"))
    assert casts == (2 if p["upcast"] else 0)


def _scaled_residual(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    add = one(g, "aten.add.Tensor")
    product = one(g, "aten.mul.Tensor")
    assert product["args"][1] == p["scale"]
    assert product["name"] in {a.get("node") for a in add["args"]}
    assert shape_of(add) == list(p["input_shape"]) and dtype_of(add) == r.spec.dtype


def _cache_update(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    d, kept, end = p["dim"], p["state_shape"][p["dim"]], 2**63 - 1
    [cat] = nodes(g, "aten.cat.default")
    first, second = (a["node"] for a in cat["args"][0])
    cuts = {
        (n["args"][0]["node"], *n["args"][1:4]): n["name"] for n in nodes(g, "aten.slice.Tensor")
    }
    if p["form"] == "shift":  # the oldest entries drop out, the new ones enter at the end
        assert cuts == {("state", d, p["input_shape"][d], end): first} and second == "x"
        assert shape_of(cat) == list(p["state_shape"])
    elif p["form"] == "history":  # the state leads, its last `kept` samples are the next one
        assert (first, second) == ("state", "x") and set(cuts) == {(cat["name"], d, -kept, end)}
    else:  # the state added onto the head; the new partial is the tail, the rest goes on
        head = one(g, "aten.add.Tensor")
        assert head["name"] == first and {a["node"] for a in head["args"]} == {
            "state",
            cuts[("x", d, 0, kept)],
        }
        assert cuts[("x", d, kept, end)] == second
        assert {(cat["name"], d, -kept, end), (cat["name"], d, 0, -kept)} <= set(cuts)
    bias = 1 if p["bias"] else 0
    assert len(nodes(g, "aten.sub.Tensor")) == len(nodes(g, "aten.unsqueeze.default")) == bias
    assert dtype_of(cat) == r.spec.dtype


def _embedding(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    lookup = one(g, "aten.embedding.default")
    table, indices = lookup["args"][0], lookup["args"][1]
    assert shape_of(table) == [p["num_embeddings"], p["embedding_dim"]]
    assert dtype_of(table) == r.spec.dtype
    assert shape_of(indices) == list(p["input_shape"]) and dtype_of(indices) == p["index_dtype"]
    assert lookup["args"][2:3] == ([p["padding_idx"]] if "padding_idx" in p else [])


PAD_OPS = {
    "reflect": "aten.reflection_pad{}d.default",
    "replicate": "aten.replication_pad{}d.default",
}


def _pad(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    rank = len(p["pads"]) // 2
    targets = [n["target"] for n in g]
    if p["mode"] == "constant":
        n = one(g, "aten.constant_pad_nd.default")
        assert n["args"][1] == list(p["pads"])
        assert n["args"][2] == p.get("value", 0.0)
        return
    op = PAD_OPS[p["mode"]].format(rank)
    if r.spec.pipeline.decompositions == "coreai":
        n = one(g, op)  # kept whole by get_decomp_table()
        assert n["args"][1] == list(p["pads"]) and dtype_of(n["args"][0]) == r.spec.dtype
    else:  # torch's default table decomposes it into index arithmetic
        assert not any("_pad" in t for t in targets)
        assert "aten.index.Tensor" in targets


def _arange(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = [m for m in g if m["target"].startswith("aten.arange")]
    assert len(n) == 1, [m["target"] for m in g]
    args = n[0]["args"]
    if p.get("end_source") == "input":
        # the end is x's dynamic length: a SymInt read off x with aten.sym_size.int
        end = args[1]
        assert end["op"] == "aten.sym_size.int" and "sym" in end["val"], end
        size = [m for m in g if m["name"] == end["node"]]
        assert size and size[0]["args"][1] == 1, size  # x's dim 1
        args = [args[0], p["end"], *args[2:]]
    bounds = [p.get("start", 0), p["end"]] + ([p["step"]] if p.get("step", 1) != 1 else [])
    assert args == bounds and [type(a) for a in args] == [type(b) for b in bounds]
    dtype = p.get("arange_dtype", "input")
    if dtype == "input":
        dtype = r.spec.dtype
    elif not dtype:
        dtype = "int64" if all(isinstance(b, int) for b in bounds) else "float32"
    assert n[0]["val"]["dtype"] == dtype
    if p.get("end_source") == "input":
        return  # the arange is the output itself (as the upstream test's module returns it)
    add = one(g, "aten.add.Tensor")
    assert add["args"][1]["node"] == n[0]["name"]


def _repeat_symbolic(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.repeat.default")
    repeats = n["args"][1]
    if p.get("dynamic_batch"):
        assert isinstance(repeats[0], dict) and repeats[0]["op"] == "aten.sym_size.int"
    else:
        assert repeats[0] == p.get("batch", 3)
    assert repeats[1:] == [1]


def _cat_dynamic(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.cat.default")
    inputs, dim = n["args"] if len(n["args"]) > 1 else (n["args"][0], 0)
    if p["mode"] == "reshaped":
        flat, y = inputs
        assert dim == 0 and flat["op"] == "aten.view.default" and y["node"] == "y"
        # torch knows the flattened axis statically; the batch is dynamic on one side only
        assert shape_of(flat)[1] == shape_of(y)[1] == p["length"] * p["channels"]
        assert is_sym(shape_of(flat)[0]) and not is_sym(shape_of(y)[0])
        return
    if p["mode"] == "upsampled":
        up, y = inputs
        assert dim == 2 and up["op"] == "aten.convolution.default" and y["node"] == "y"
        conv = one(g, "aten.convolution.default")
        assert conv["args"][6] is True  # a ConvTranspose1d
        # batch and channels static in torch on both sides; the length dynamic on one
        assert shape_of(up)[:2] == shape_of(y)[:2] == [p["batch"], p["other_channels"]]
        assert is_sym(shape_of(up)[2]) and not is_sym(shape_of(y)[2])
        return
    if p["mode"] == "along_dynamic":
        assert dim == 1 and [a["node"] for a in inputs] == ["x", "y"]
        assert is_sym(shape_of(inputs[0])[1]) == bool(p.get("dynamic_length"))
    else:
        sliced, y = inputs
        assert dim == 2 and sliced["op"] == "aten.slice.Tensor" and y["node"] == "y"
        # torch knows the slice's size statically, whatever x's length.
        assert shape_of(sliced)[1] == shape_of(y)[1] == p["prefix"]
        x = one(g, "aten.slice.Tensor")["args"][0]
        assert is_sym(shape_of(x)[1]) == bool(p.get("dynamic_length"))
    assert is_sym(shape_of(inputs[0])[0]) == bool(p.get("dynamic_batch"))


def _view_dynamic(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    if p["mode"] == "symfloat":  # view(1, C, -1) then view(1, C, h, w), h, w from SymFloats
        last = nodes(g, "aten.view.default")[-1]
        shape = last["args"][1]
        assert shape[:2] == [1, p["channels"]]
        assert all(isinstance(d, dict) and d["op"] != "aten.sym_size.int" for d in shape[2:])
        assert any("round" in n["target"] for n in g) and any("pow" in n["target"] for n in g)
        return
    n = one(g, "aten.view.default")
    shape = n["args"][1]
    syms = [s for s in shape if isinstance(s, dict)]
    ints = [s for s in shape if not isinstance(s, dict)]
    assert len(syms) == 1 and ints, "a SymInt beside plain ints"
    mode = p["mode"]
    if mode == "merge":
        assert syms[0]["op"] == "<built-in function mul>" and shape[1] == p["channels"]
    else:
        assert syms[0]["op"] == "aten.sym_size.int" and shape[0] is syms[0]
        if mode == "split_heads":
            assert ints == [p["length"], p["heads"], p["channels"] // p["heads"]]
        else:
            assert ints == [-1]


def _masked_scatter(r: Regime, g: list[dict]) -> None:
    p = r.spec.params
    n = one(g, "aten.masked_scatter.default")
    x, mask, source = n["args"]
    assert (x["node"], source["node"]) == ("x", "source")
    assert dtype_of(mask) == "bool" and dtype_of(x) == dtype_of(source) == r.spec.dtype
    assert shape_of(mask)[-1] == (1 if p.get("broadcast") else shape_of(x)[-1])
    assert is_sym(shape_of(x)[0]) == bool(p.get("dynamic_batch"))


CHECKS = {
    "conv_transpose": _conv_transpose,
    "batch_norm": _batch_norm,
    "layer_norm": _layer_norm,
    "group_norm": _group_norm,
    "select_dynamic": _select_dynamic,
    "true_divide": _true_divide,
    "floor_divide": _floor_divide,
    "mean_dtype": _mean_dtype,
    "min_dim": _min_dim,
    "max_pool2d": _max_pool2d,
    "atan2": _atan2,
    "quantize": _quantize,
    "pad": _pad,
    "arange": _arange,
    "repeat_symbolic": _repeat_symbolic,
    "cat_dynamic": _cat_dynamic,
    "view_dynamic": _view_dynamic,
    "masked_scatter": _masked_scatter,
    "softmax": _softmax,
    "matmul": _matmul,
    "sdpa": _sdpa,
    "silu": _silu,
    "gelu": _gelu,
    "rms_norm": _rms_norm,
    "glu": _glu,
    "rotary": _rotary,
    "scaled_residual": _scaled_residual,
    "cache_update": _cache_update,
    "embedding": _embedding,
}


def test_every_construct_has_a_graph_check():
    assert set(CHECKS) == set(probes.builders())


@pytest.mark.parametrize("regime", REGIMES, ids=IDS)
def test_exported_graph_holds_the_targeted_op(regime: Regime, newest_env: Env):
    CHECKS[regime.construct](regime, graph_of(regime, newest_env))
