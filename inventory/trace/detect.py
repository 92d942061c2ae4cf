"""Construct detection over an exported aten graph.

Reads `torch.export` nodes, never op-name histograms of a bundle: each detector looks at one
aten overload with its real arguments and the fake tensors torch.export attaches to every node,
so an instance carries exact parameters and shapes. Instances with identical parameters are
grouped with a count and the module paths they came from.

An instance's parameters are the keys its construct's probe takes
(`oracle.probes_catalog.PARAMS`, built by `oracle.probes`), valued so that the probe reproduces
the op in the bundle's regime (operand dtypes, static or symbolic sizes, explicit arguments),
plus descriptive extras the probe ignores. Where a probe cannot express what the graph holds,
the closest thing it can express is recorded and an extra says what the graph really has.

Sizes: a probe takes plain ints. A static bundle's graph can still hold data-dependent sizes
(`.item()` of a tensor, e.g. SAM 3's feature-map height): those are resolved from the runtime
asserts torch.export records (Eq(u0*u1, 5184)), and the instance says so in `sizes`; dynamic
(backed) sizes take their example value.

Trivial ops (division, padding, cat...) are grouped by what matters to their probe; the shape
is then a representative one (the first in graph order) and `shapes_seen` lists the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import sympy
import torch
from torch.utils._sympy.numbers import int_oo

DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
               torch.int32: "int32", torch.int64: "int64", torch.int8: "int8",
               torch.float64: "float64", torch.int16: "int16", torch.uint8: "uint8",
               torch.bool: "bool"}
# Dtypes a probe can be built in (`module.to(dtype)`); others are recorded as float32 probes.
PROBE_DTYPES = ("float32", "float16", "bfloat16")


@dataclass(frozen=True)
class Found:
    kind: str
    params: dict[str, Any]
    dtype: str
    module: str


def _shape(node: Any) -> list[int | str]:
    val = node.meta.get("val") if hasattr(node, "meta") else None
    if val is None:
        return []
    return [int(d) if isinstance(d, int) or str(d).isdigit() else str(d) for d in val.shape]


def _dtype(node: Any) -> str:
    val = node.meta.get("val") if hasattr(node, "meta") else None
    return DTYPE_NAMES.get(getattr(val, "dtype", None), str(getattr(val, "dtype", "?")))


def module_path(node: Any) -> str:
    """The innermost module the op came from, as a dotted path (nn_module_stack)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "<top>"
    path, _cls = list(stack.values())[-1]
    return str(path).removeprefix("L['self'].").replace("L['self']", "") or "<top>"


def _conv_transpose(node: Any) -> Found | None:
    # aten.convolution(input, weight, bias, stride, padding, dilation, transposed,
    #                  output_padding, groups)
    args = list(node.args) + [None] * (9 - len(node.args))
    x, w, b, stride, padding, dilation, transposed, output_padding, groups = args[:9]
    if not transposed:
        return None
    wshape = _shape(w)
    groups = int(groups or 1)
    params = {
        "dim": len(wshape) - 2,
        "in_channels": wshape[0],
        "out_channels": wshape[1] * groups if isinstance(wshape[1], int) else wshape[1],
        "kernel": wshape[2:],
        "stride": [int(s) for s in stride],
        "padding": [int(p) for p in padding],
        "output_padding": [int(p) for p in output_padding],
        "dilation": [int(d) for d in dilation],
        "groups": groups,
        "bias": b is not None,
        "input_shape": _shape(x),
    }
    return Found("conv_transpose", params, _dtype(x), module_path(node))


def _producer_depthwise_kernel(node: Any, channels: Any) -> int | None:
    """The kernel of a depthwise convolution feeding `node` directly (as in a Conformer)."""
    src = node.args[0] if node.args else None
    if getattr(src, "op", "") != "call_function" or _target_name(src) != "aten.convolution.default":
        return None
    args = list(src.args) + [None] * (9 - len(src.args))
    weight_shape = _shape(args[1])
    if args[6] or int(args[8] or 1) != channels or len(weight_shape) < 3:
        return None
    return int(weight_shape[2])


def _batch_norm(node: Any) -> Found | None:
    # aten._native_batch_norm_legit_no_training(input, weight, bias, running_mean,
    #                                           running_var, momentum, eps)
    x, weight, _bias, _mean, var = node.args[:5]
    eps = node.args[6] if len(node.args) > 6 else 1e-5
    shape = _shape(x)
    channels = shape[1]
    params: dict[str, Any] = {
        "dim": len(shape) - 2,
        "channels": channels,
        "batch": shape[0],
        "length": shape[2] if len(shape) > 2 else 1,
        "eps": float(eps),
        "affine": weight is not None,
        "param_dtype": _dtype(var),
        "input_shape": shape,
    }
    kernel = _producer_depthwise_kernel(node, channels)
    if kernel is not None:
        params["depthwise_kernel"] = kernel
    return Found("batch_norm", params, _dtype(x), module_path(node))


def _layer_norm(node: Any) -> Found | None:
    # aten.native_layer_norm(input, normalized_shape, weight, bias, eps)
    x, normalized, weight, bias = node.args[:4]
    eps = node.args[4] if len(node.args) > 4 else 1e-5
    params = {
        "normalized_shape": [int(v) for v in normalized],
        "input_shape": _shape(x),
        "elementwise_affine": weight is not None,
        "bias": bias is not None,
        "eps": float(eps),
    }
    return Found("layer_norm", params, _dtype(x), module_path(node))


def _group_norm(node: Any) -> Found | None:
    # aten.native_group_norm(input, weight, bias, N, C, HxW, group, eps)
    x, weight = node.args[0], node.args[1]
    shape = _shape(x)
    params = {
        "num_groups": int(node.args[6]),
        "channels": shape[1],
        "batch": shape[0],
        "length": shape[2] if len(shape) == 3 else shape[2:],
        "affine": weight is not None,
        "eps": float(node.args[7]),
        "input_shape": shape,
    }
    return Found("group_norm", params, _dtype(x), module_path(node))


# ---- sizes: static, dynamic (backed) or data-dependent (unbacked) -----------------------------

FALLBACK_SIZE = 16  # a data-dependent size nothing in the graph pins down
# How a size was known, best first.
_HOW = ("static", "dynamic", "asserted", "assumed", "unresolved")
SIZES_NOTE = {
    "dynamic": "dynamic: example sizes",
    "asserted": "data-dependent (.item()): sizes pinned by the graph's runtime asserts",
    "assumed": "data-dependent (.item()): sizes taken as equal factors of a runtime-asserted "
               "product",
    "unresolved": f"data-dependent (.item()): unresolved, {FALLBACK_SIZE} assumed",
}
_FACTS: dict[int, tuple[Any, dict[Any, int], dict[Any, int]]] = {}


def _facts(env: Any) -> tuple[dict[Any, int], dict[Any, int]]:
    """What a shape env's runtime asserts pin: {expr: N} for each Eq(expr, N), and {symbol: root}
    for the symbols of a product asserted equal to N when N is a perfect power (an assumption:
    equal factors, as a square feature map's height and width)."""
    hit = _FACTS.get(id(env))
    if hit is not None and hit[0] is env:
        return hit[1], hit[2]
    exact: dict[Any, int] = {}
    for asserts in (getattr(env, "deferred_runtime_asserts", None) or {}).values():
        for ra in asserts:
            expr = getattr(ra, "expr", None)
            if not isinstance(expr, sympy.Eq):
                continue
            lhs, rhs = expr.args
            if lhs.is_number:
                lhs, rhs = rhs, lhs
            if rhs.is_number and not lhs.is_number:
                exact[lhs] = int(rhs)
    assumed: dict[Any, int] = {}
    for expr, n in exact.items():
        if expr.is_Mul and all(f.is_Symbol for f in expr.args):
            factors, k = expr.args, len(expr.args)
        elif expr.is_Pow and expr.base.is_Symbol and expr.exp.is_Integer:
            factors, k = (expr.base,), int(expr.exp)
        else:
            continue
        root = round(n ** (1.0 / k)) if n > 0 else 0
        if root**k == n:
            for f in factors:
                assumed.setdefault(f, root)
    _FACTS[id(env)] = (env, exact, assumed)
    return exact, assumed


def _resolve(v: Any) -> tuple[int, str]:
    """A size as a plain int, and how it was known (one of _HOW)."""
    if isinstance(v, torch.fx.Node):
        v = v.meta.get("val")
    if isinstance(v, int):
        return int(v), "static"
    if not isinstance(v, torch.SymInt):
        return FALLBACK_SIZE, "unresolved"
    node = v.node
    expr = node.expr
    if expr.is_number:
        return int(expr), "static"
    hint = getattr(node, "hint", None)
    if hint is not None:
        return int(hint), "dynamic"
    env = node.shape_env
    exact, assumed = _facts(env)
    if expr in exact:
        return exact[expr], "asserted"
    how, subs = "asserted", {}
    backed = _backed(env)
    for sym in expr.free_symbols:
        if sym in backed:
            subs[sym] = backed[sym]
        elif sym in exact:
            subs[sym] = exact[sym]
        elif sym in assumed:
            subs[sym] = assumed[sym]
            how = _worst([how, "assumed"])
        else:
            subs[sym] = FALLBACK_SIZE
            how = "unresolved"
    try:
        return int(expr.xreplace(subs)), how
    except (TypeError, ValueError):
        return FALLBACK_SIZE, "unresolved"


def _backed(env: Any) -> dict[Any, Any]:
    """A shape env's example values of its backed (dynamic) symbols."""
    backed = getattr(env, "backed_var_to_val", None)  # torch >= 2.13 names it so
    return backed if backed is not None else getattr(env, "var_to_val", {})


def _worst(hows: Iterable[str]) -> str:
    return max(hows, key=_HOW.index, default="static")


def _is_symbolic(v: Any) -> bool:
    if isinstance(v, torch.fx.Node):
        v = v.meta.get("val")
    return isinstance(v, torch.SymInt) and not v.node.expr.is_number


def _concrete(x: Any) -> tuple[list[int], str]:
    """The shape of a node's value as plain ints, and how its sizes were known."""
    val = _val(x)
    if val is None or not hasattr(val, "shape"):
        return [], "static"
    dims = [_resolve(d) for d in val.shape]
    return [d for d, _ in dims], _worst(h for _, h in dims)


def _range(v: Any, value: int, at_least: int = 1) -> list[int]:
    """[min, max] for a probe's dynamic dim standing for a symbolic size: the symbol's own
    bounds where finite, else [at_least, max(64, 2 * value)]."""
    if isinstance(v, torch.fx.Node):
        v = v.meta.get("val")
    if isinstance(v, torch.SymInt):
        return _range_of(v.node.shape_env, v.node.expr, value, at_least)
    return [min(at_least, value), max(64, 2 * value)]


def _range_of(env: Any, expr: Any, value: int, at_least: int = 1) -> list[int]:
    lo, hi = at_least, max(64, 2 * value)
    try:
        bounds = env.bound_sympy(expr)
    except Exception:  # noqa: BLE001 - no bounds: keep the defaults
        bounds = None
    if bounds is not None:
        if bounds.lower not in (-int_oo, sympy.S.NegativeInfinity):
            lo = max(lo, int(bounds.lower))
        if bounds.upper not in (int_oo, sympy.S.Infinity):
            hi = int(bounds.upper)
    return [min(lo, value), max(hi, value)]


def _with_sizes(params: dict[str, Any], how: str) -> dict[str, Any]:
    if how != "static":
        params["sizes"] = SIZES_NOTE[how]
    return params


# ---- small helpers ------------------------------------------------------------------------------


def _val(x: Any) -> Any:
    return x.meta.get("val") if isinstance(x, torch.fx.Node) else None


def _is_tensor(x: Any) -> bool:
    return isinstance(_val(x), torch.Tensor)


def _name(dtype: Any) -> str:
    return DTYPE_NAMES.get(dtype, str(dtype).removeprefix("torch."))


def _probe_dtype(dtype: Any, params: dict[str, Any]) -> str:
    """The probe's dtype for a tensor of `dtype`; a non-float tensor (an int cat, a bool pad)
    makes a float32 probe, and `tensor_dtype` says what the graph holds."""
    name = _name(dtype)
    if name in PROBE_DTYPES:
        return name
    params["tensor_dtype"] = name
    return "float32"


def _arg(node: Any, index: int, name: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(name, default)


def _module_class(node: Any) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    _path, cls = list(stack.values())[-1]
    return str(getattr(cls, "__name__", cls)).rsplit(".", 1)[-1]


def _prod(values: Iterable[int]) -> int:
    return math.prod(int(v) for v in values)


def _number(v: Any) -> tuple[int | float | None, str]:
    """A scalar argument as a Python number (a SymInt resolved), and how it was known."""
    if isinstance(v, bool):
        return int(v), "static"
    if isinstance(v, int | float):
        return v, "static"
    val = _val(v) if isinstance(v, torch.fx.Node) else v
    if isinstance(val, torch.SymInt):
        return _resolve(val)
    return None, "unresolved"


# ---- true division (#32) --------------------------------------------------------------------
# aten.div.Tensor / div.Scalar / true_divide.Tensor, and div.Tensor_mode with rounding_mode None.
# torch.true_divide exports as div.Tensor: the same graph as `a / b`, so form `tensor`.
# Probe forms: tensor | true_divide | div_mode_none (a and b tensors of one shape), scalar
# (a / a Python number), tensor_0dim_fp32 (a / a 0-dim fp32 tensor). Operands: int32 (both
# integer: the converter narrows int64 to int32) or float (the lowering promotes to the float
# type in every release when either side is float). What the probe cannot express is mapped to
# the form whose lowering is the same:
# - a 0-dim tensor divisor of a wider float type than a float dividend (fp16 / 0-dim fp32):
#   tensor_0dim_fp32 (0.4.1 promotes to the wider type, 0.4.2 to the result's);
# - any other 0-dim divisor: scalar (it does not take part in the result type, as a Python
#   number does not); its value is not in the graph, so the probe's divisor is a stand-in;
# - broadcasting operands: both operands of the output's shape.
# `operand_types` says what the graph holds.

_DIV_FORMS = {"aten.div.Tensor": "tensor", "aten.div.Scalar": "scalar",
              "aten.true_divide.Tensor": "true_divide", "aten.div.Tensor_mode": "div_mode_none",
              "aten.div.Scalar_mode": "scalar"}


def _true_divide(node: Any) -> Found | None:
    name = _target_name(node)
    if name.endswith("_mode") and _arg(node, 2, "rounding_mode") is not None:
        return None  # floor / trunc division: not a true division
    a, b = node.args[0], node.args[1]
    if not _is_tensor(a):
        return None
    a_dtype = _val(a).dtype
    a_float = a_dtype.is_floating_point
    shape, how = _concrete(node)
    params: dict[str, Any] = {}
    if _is_tensor(b) and _val(b).dim() > 0:
        b_dtype = _val(b).dtype
        form = _DIV_FORMS[name] if _DIV_FORMS[name] != "scalar" else "tensor"
        operands = "float" if a_float or b_dtype.is_floating_point else "int32"
        described = f"{_name(a_dtype)} / {_name(b_dtype)}"
    elif _is_tensor(b):
        b_dtype = _val(b).dtype
        described = f"{_name(a_dtype)} / 0-dim {_name(b_dtype)} tensor"
        operands = "float" if a_float else "int32"
        wider = (a_float and b_dtype.is_floating_point
                 and torch.promote_types(a_dtype, b_dtype) != a_dtype)
        form = "tensor_0dim_fp32" if wider else "scalar"
        if not a_float and b_dtype.is_floating_point:
            params["divisor"] = 7.0  # a float divisor (its value is not in the graph)
    else:  # a Python number, or a SymInt / SymFloat node
        value, value_how = _number(b)
        kind = type(_val(b)).__name__ if isinstance(b, torch.fx.Node) else type(b).__name__
        described = f"{_name(a_dtype)} / {kind}"
        form, operands = "scalar", "float" if a_float else "int32"
        if value is not None:
            params["divisor"] = value
            how = _worst([how, value_how])
        else:
            params["divisor"] = 7.0  # a symbolic float: a float divisor stands in
    params = {"form": form, "operands": operands, "shape": shape, **params,
              "operand_types": described}
    # integer operands: int32 inputs whatever the dtype, the result in torch's default float
    dtype = "float32" if operands == "int32" else _probe_dtype(_val(node).dtype, params)
    return Found("true_divide", _with_sizes(params, how), dtype, module_path(node))


# ---- mean (#42) -------------------------------------------------------------------------------
# aten.mean.dim / mean.default. dtype_arg: the explicit dtype argument, "" for a plain mean (the
# probe then calls x.mean(dims, keepdim) without one). Integer operands need a dtype argument.


def _mean(node: Any) -> Found | None:
    x = node.args[0]
    if not _is_tensor(x):
        return None
    shape, how = _concrete(x)
    x_dtype = _val(x).dtype
    params: dict[str, Any] = {"operand": "float" if x_dtype.is_floating_point else "int32",
                              "shape": shape}
    if _target_name(node) == "aten.mean.dim":
        dims = _arg(node, 1, "dim")
        if dims:
            params["dims"] = [int(d) for d in dims]
        params["keepdim"] = bool(_arg(node, 2, "keepdim", False))
    arg = node.kwargs.get("dtype")
    if arg is None:
        params["dtype_arg"] = ""
    elif _name(arg) in ("float32", "float16", "bfloat16", "int32", "int8", "int64"):
        params["dtype_arg"] = _name(arg)
    else:  # float64 (narrowed to float32 by the converter)
        params["dtype_arg"] = "float32"
        params["graph_dtype_arg"] = _name(arg)
    if x_dtype.is_floating_point:
        dtype = _probe_dtype(x_dtype, params)
    else:
        if x_dtype != torch.int32:
            params["tensor_dtype"] = _name(x_dtype)
        dtype = "float32"
    return Found("mean_dtype", _with_sizes(params, how), dtype, module_path(node))


# ---- min.dim (#43) ----------------------------------------------------------------------------
# int_dtype: int8 or int32 (every other integer type: int32, the converter's width for int64);
# absent for a float operand.


def _min_dim(node: Any) -> Found | None:
    x = node.args[0]
    if not _is_tensor(x):
        return None
    shape, how = _concrete(x)
    params: dict[str, Any] = {"shape": shape, "dim": int(_arg(node, 1, "dim", 0)),
                              "keepdim": bool(_arg(node, 2, "keepdim", False))}
    x_dtype = _val(x).dtype
    if x_dtype.is_floating_point:
        dtype = _probe_dtype(x_dtype, params)
    else:
        params["int_dtype"] = "int8" if x_dtype == torch.int8 else "int32"
        if x_dtype not in (torch.int8, torch.int32):
            params["tensor_dtype"] = _name(x_dtype)
        dtype = "float32"
    return Found("min_dim", _with_sizes(params, how), dtype, module_path(node))


# ---- max_pool2d (#36) -------------------------------------------------------------------------
# aten.max_pool2d_with_indices(x, kernel, stride=[], padding=0, dilation=1, ceil_mode=False):
# F.max_pool2d without a stride leaves the stride argument out (or empty); nn.MaxPool2d and
# F.max_pool2d(x, k, s) pass it. Form `module` when the op sits in an nn.MaxPool2d, else
# `functional` (with `stride` when the graph has one). The probe has no dilation: a dilated pool
# is recorded with `dilation` as an extra and probed undilated.


def _max_pool2d(node: Any) -> Found | None:
    x = node.args[0]
    shape, how = _concrete(x)
    stride = list(_arg(node, 2, "stride", []) or [])
    padding = [int(p) for p in (_arg(node, 3, "padding", [0]) or [0])]
    dilation = [int(d) for d in (_arg(node, 4, "dilation", [1]) or [1])]
    params: dict[str, Any] = {"form": "functional",
                              "kernel": [int(k) for k in node.args[1]]}
    if stride:
        params["stride"] = [int(s) for s in stride]
        if _module_class(node) == "MaxPool2d":
            params["form"] = "module"
    if any(padding):
        params["padding"] = padding
    if _arg(node, 5, "ceil_mode", False):
        params["ceil_mode"] = True
    params["input_shape"] = shape
    if any(d != 1 for d in dilation):
        params["dilation"] = dilation
    dtype = _probe_dtype(_val(x).dtype, params)
    return Found("max_pool2d", _with_sizes(params, how), dtype, module_path(node))


# ---- atan2 (#23, #35) -------------------------------------------------------------------------


def _atan2(node: Any) -> Found | None:
    y, x = node.args[0], node.args[1]
    shape, how = _concrete(node)
    params: dict[str, Any] = {"shape": shape}
    dtypes = [_val(t).dtype for t in (y, x) if _is_tensor(t)]
    if dtypes and not any(d.is_floating_point for d in dtypes):
        params["operands"] = "int32"
        if any(d != torch.int32 for d in dtypes):
            params["tensor_dtype"] = "/".join(_name(d) for d in dtypes)
        dtype = "float32"
    else:
        dtype = _probe_dtype(_val(node).dtype, params)
    return Found("atan2", _with_sizes(params, how), dtype, module_path(node))


# ---- pad (#29, #30, #31) ----------------------------------------------------------------------
# constant_pad_nd (mode constant, with its value), reflection_pad{1,2,3}d, replication_pad{1,2,3}d
# (kept whole by 0.4.2's get_decomp_table()). Earlier tables decompose reflect/replicate pads
# into arange/abs/clamp/index nodes; those still carry the op they came from
# (meta["original_aten"], meta["from_node"]), so such a pad is read back from its first index
# node: the arange of each padded dim is arange(-left, size + right).

_PAD_MODES = {"reflection": "reflect", "replication": "replicate"}


def _pad_mode(op: Any) -> str | None:
    name = str(op)
    for prefix, mode in _PAD_MODES.items():
        if name.startswith(f"aten.{prefix}_pad"):
            return mode
    return None


def _pad(node: Any) -> Found | None:
    name = _target_name(node)
    x = node.args[0]
    if name == "aten.constant_pad_nd.default":
        pads = [int(_number(p)[0] or 0) for p in node.args[1]]
        value = _arg(node, 2, "value", 0)
        params: dict[str, Any] = {"mode": "constant", "pads": pads,
                                  "value": float(value or 0)}
    else:
        mode = _pad_mode(name)
        if mode is None:
            return None
        params = {"mode": mode, "pads": [int(_number(p)[0] or 0) for p in node.args[1]]}
    shape, how = _concrete(x)
    params["input_shape"] = shape
    dtype = _probe_dtype(_val(x).dtype, params)
    return Found("pad", _with_sizes(params, how), dtype, module_path(node))


def _origin(node: Any) -> tuple[str, str] | None:
    """(the op a decomposed node came from, that op's node name), if it came from one."""
    original = node.meta.get("original_aten")
    sources = node.meta.get("from_node") or []
    if original is None or not sources:
        return None
    return str(original), f"{sources[0].name}@{getattr(sources[0], 'graph_id', '')}"


def _decomposed_pad(node: Any) -> Found | None:
    """A reflect/replicate pad decomposed by the table, read from its first index node."""
    origin = _origin(node)
    if origin is None or _pad_mode(origin[0]) is None:
        return None
    src = node.args[0]
    if isinstance(src, torch.fx.Node) and src.op == "call_function" and _origin(src) == origin \
            and _target_name(src) in _INDEX_OPS:
        return None  # not the first index of this pad
    while isinstance(src, torch.fx.Node) and src.op == "call_function" and _origin(src) == origin:
        src = src.args[0]  # the opmath upcast (fp16 -> fp32) belongs to the pad
    shape, how = _concrete(src)
    rank = len(shape)
    if not rank:
        return None
    sides: dict[int, tuple[int, int]] = {}
    current: Any = node
    while current is not None:
        indices = current.args[1]
        for pos, idx in enumerate(indices):
            if idx is None:
                continue
            arange = _find_upstream(idx, origin, "aten.arange.start_step")
            if arange is None:
                return None
            start, end = (int(_number(v)[0] or 0) for v in arange.args[:2])
            sides[pos] = (-start, end - shape[pos])
        current = next((u for u in current.users if _target_name(u) in _INDEX_OPS
                        and _origin(u) == origin), None)
    pads: list[int] = []
    for pos in sorted(sides, reverse=True):  # F.pad order: the last dim first
        pads += list(sides[pos])
    params = {"mode": _pad_mode(origin[0]), "pads": pads, "input_shape": shape,
              "graph": f"decomposed by the table ({origin[0]})"}
    dtype = _probe_dtype(_val(src).dtype if _is_tensor(src) else None, params)
    return Found("pad", _with_sizes(params, how), dtype, module_path(node))


_INDEX_OPS = ("aten.index.Tensor", "aten._unsafe_index.Tensor")


def _find_upstream(start: Any, origin: tuple[str, str], target: str) -> Any:
    seen, todo = set(), [start]
    while todo:
        n = todo.pop()
        if not isinstance(n, torch.fx.Node) or n in seen or _origin(n) != origin:
            continue
        seen.add(n)
        if _target_name(n) == target:
            return n
        todo += [a for a in n.args if isinstance(a, torch.fx.Node)]
    return None


# ---- arange with a float dtype (#25, #27) ------------------------------------------------------
# Every arange whose result is floating point: a float dtype argument (arange_dtype names it) or
# a float bound without one (arange_dtype "": torch's default). Symbolic bounds (a dynamic size,
# an .item()) are resolved to a value and `sizes` says so: the probe's bounds are constants.
# torch.export keeps aranges of static bounds as nodes (it does not fold them); integer aranges
# are not this construct.


def _arange(node: Any) -> Found | None:
    val = _val(node)
    if not isinstance(val, torch.Tensor) or not val.dtype.is_floating_point:
        return None
    name = _target_name(node)
    if name == "aten.arange.default":
        bounds = [0, node.args[0], 1]
    elif name == "aten.arange.start":
        bounds = [node.args[0], node.args[1], 1]
    else:
        bounds = [node.args[0], node.args[1], _arg(node, 2, "step", 1)]
    values, hows = [], []
    for b in bounds:
        v, h = _number(b)
        values.append(FALLBACK_SIZE if v is None else v)
        hows.append(h)
    params: dict[str, Any] = {"start": values[0], "end": values[1], "step": values[2]}
    arg = node.kwargs.get("dtype")
    params["arange_dtype"] = _name(arg) if arg is not None else ""
    dtype = _probe_dtype(val.dtype, params)
    if params["arange_dtype"] not in ("",) + PROBE_DTYPES:
        params["arange_dtype"] = dtype
    return Found("arange_float", _with_sizes(params, _worst(hows)), dtype, module_path(node))


# ---- repeat (#15) ------------------------------------------------------------------------------
# aten.repeat with a SymInt among its repeats (symbolic) or with ints only (static). The probe
# tiles a [1, length] parameter over the batch: w.repeat(x.shape[0], 1), symbolic when the batch
# is a dynamic dim. batch: the symbolic repeat's value (static: the product of the repeats);
# length: the elements of the tensor repeated; dynamic_batch: the symbol's range. `repeats` and
# `input_shape` are the graph's.


def _repeat(node: Any) -> Found | None:
    x, repeats = node.args[0], list(node.args[1])
    shape, how = _concrete(x)
    resolved = [_resolve(r) for r in repeats]
    values = [v for v, _ in resolved]
    params: dict[str, Any] = {"length": max(1, _prod(shape))}
    symbolic = [r for r in repeats if _is_symbolic(r)]
    if symbolic:
        batch, _ = _resolve(symbolic[0])
        params["batch"] = batch
        params["dynamic_batch"] = _range(symbolic[0], batch)
    else:
        params["batch"] = max(1, _prod(values))
    params["repeats"] = values
    params["input_shape"] = shape
    dtype = _probe_dtype(_val(x).dtype, params)
    how = _worst([how] + [h for _, h in resolved])
    return Found("repeat_symbolic", _with_sizes(params, how), dtype, module_path(node))


# ---- cat (#14) ---------------------------------------------------------------------------------
# Every aten.cat. The probe's modes: `sliced` cat([x[:, :prefix], y], 2) (static: the control),
# `along_dynamic` cat([x, y], 1) along a dynamic axis. Mapping, for inputs [outer..., c_i,
# inner...] concatenated on their axis d: batch = the sizes before d, channels = the first
# input's c, other_channels = the rest's, prefix = length = the sizes after d.
# - static inputs: `sliced`, no dynamic dim (the control);
# - an input sliced out of a tensor whose sliced axis is symbolic (torch knows the slice's size,
#   a converter may not): `sliced` with dynamic_length;
# - a symbolic size on the concat axis: `along_dynamic` with dynamic_length;
# - a symbolic size shared by every input on another axis: `sliced` with dynamic_batch.
# Not expressed: the probe's `reshaped` and `upsampled` patterns (read as the cases above).


def _cat(node: Any) -> Found | None:
    tensors = [t for t in node.args[0] if _is_tensor(t)]
    if not tensors:
        return None
    rank = _val(tensors[0]).dim()
    if rank == 0:
        return None
    d = int(_arg(node, 1, "dim", 0)) % rank
    raw = [list(_val(t).shape) for t in tensors]
    concrete = [_concrete(t) for t in tensors]
    shapes = [s for s, _ in concrete]
    how = _worst(h for _, h in concrete)
    first = shapes[0]
    # [batch, prefix, channels] as the probe's: the leading size, then every other non-concat
    # size in one (the sizes between and after), then the concatenated sizes
    outer = first[0] if d > 0 else 1
    inner = max(1, _prod(first[1:d]) * _prod(first[d + 1:]) if d > 0 else _prod(first[1:]))
    channels = max(1, first[d])
    rest = sum(s[d] for s in shapes[1:])
    params: dict[str, Any] = {"mode": "sliced", "batch": max(1, outer), "length": inner,
                              "channels": channels, "other_channels": max(1, rest) if rest
                              else channels, "prefix": inner}
    concat_sym = [s[d] for s in raw if _is_symbolic(s[d])]
    sliced = next((t for t in tensors if _sliced_from_symbolic(t)), None)
    axis = -1
    if concat_sym:
        value, _ = _resolve(concat_sym[0])
        static = [s[d] for s, r in zip(shapes, raw, strict=True) if not _is_symbolic(r[d])]
        params.update(mode="along_dynamic", length=value, channels=inner,
                      prefix=max(1, static[0]) if static else value,
                      dynamic_length=_range(concat_sym[0], value))
        params.pop("other_channels")
        axis = d
    elif sliced is not None:
        src = sliced.args[0]
        axis = int(_arg(sliced, 1, "dim", 0)) % _val(src).dim()
        value, _ = _resolve(_val(src).shape[axis])
        prefix = max(1, first[axis])
        params.update(batch=max(1, _prod(first[:axis])), length=max(value, prefix),
                      prefix=prefix, dynamic_length=_range(_val(src).shape[axis],
                                                           max(value, prefix), at_least=prefix))
        how = _worst([how, "dynamic"])
    # A symbolic size every input shares on another axis: the probe's dynamic batch.
    shared = [v for s in raw for i, v in enumerate(s) if i not in (d, axis) and _is_symbolic(v)]
    if shared:
        value, _ = _resolve(shared[0])
        if axis < 0:
            params["batch"] = value
        params["dynamic_batch"] = _range(shared[0], value)
    params["dim"] = d
    params["input_shapes"] = shapes
    dtype = _probe_dtype(_val(node).dtype, params)
    return Found("cat_dynamic", _with_sizes(params, how), dtype, module_path(node))


def _sliced_from_symbolic(t: Any) -> bool:
    """A static-sized slice of a tensor whose sliced axis is symbolic (x[:, :prefix])."""
    if t.op != "call_function" or _target_name(t) != "aten.slice.Tensor":
        return False
    src = t.args[0]
    if not _is_tensor(src):
        return False
    axis = int(_arg(t, 1, "dim", 0)) % max(1, _val(src).dim())
    return _is_symbolic(_val(src).shape[axis]) and not _is_symbolic(_val(t).shape[axis])


# ---- view / reshape with a symbolic size in its shape list (#13) --------------------------------
# Only a shape list mixing SymInts and ints is this construct: a static graph's views take int
# lists (nothing to record), while a static bundle can still hold data-dependent SymInts (an
# .item()), which reach the converter as the same mixed list a dynamic batch does. Modes: merge
# (the view lowers the rank: x.reshape(B * T, C)), flatten (a -1 beside the SymInt:
# x.reshape(B, -1)), symfloat (a SymInt from float arithmetic: round(sqrt(..))), split_heads
# (otherwise: x.view(B, T, H, C // H)). batch: the first symbol's value, dynamic_batch its range.

# sympy functions torch uses for SymFloat arithmetic (not FloorDiv: c // heads is integer)
_FLOAT_FUNCS = ("RoundToInt", "FloorToInt", "CeilToInt", "TruncToInt", "ToFloat", "TrueDiv",
                "FloatPow", "sqrt")


def _view(node: Any) -> Found | None:
    x, target = node.args[0], list(node.args[1])
    symbolic = [s for s in target if _is_symbolic(s)]
    if not symbolic or not _is_tensor(x):
        return None
    shape, how = _concrete(x)
    out, out_how = _concrete(node)
    how = _worst([how, out_how])
    sym = _val(symbolic[0]) if isinstance(symbolic[0], torch.fx.Node) else symbolic[0]
    expr = sym.node.expr
    free = sorted(expr.free_symbols, key=str)
    lead = _val(x).shape[0] if _val(x).dim() else None
    if _is_symbolic(lead) and lead.node.expr in free:  # the input's batch, if it is one of them
        free.insert(0, lead.node.expr)
    static = [int(s) for s in target if isinstance(s, int) and s != -1]
    env = sym.node.shape_env
    if any(f in str(expr) for f in _FLOAT_FUNCS):
        side, _ = _resolve(sym)
        params: dict[str, Any] = {"mode": "symfloat",
                                  "channels": shape[1] if len(shape) > 1 else 1,
                                  "length": side,
                                  "dynamic_hw": _range_of(env, free[0], side, at_least=2)}
    else:
        batch = _symbol_value(env, free[0])
        heads = 1
        if -1 in target:
            mode = "flatten"
            length = shape[1] if len(shape) > 1 else 1
            channels = max(1, _prod(shape[2:]))
        elif len(target) < len(shape):
            mode = "merge"
            value, _ = _resolve(sym)
            length = max(1, value // max(1, batch))
            channels = max(1, _prod(static))
        else:  # heads: the second-to-last size when the last two are ints (B, T, H, C // H)
            mode = "split_heads"
            last = [s for s in target[-2:] if isinstance(s, int) and s > 0]
            heads = last[0] if len(last) == 2 else 1
            channels = heads * last[-1] if last and isinstance(target[-1], int) else 1
            length = max(1, _prod(static) // channels)
        params = {"mode": mode, "batch": batch, "length": length, "channels": channels,
                  "dynamic_batch": _range_of(env, free[0], batch)}
        if mode == "split_heads":
            params["heads"] = heads
    params["input_shape"] = shape
    params["output_shape"] = out
    dtype = _probe_dtype(_val(x).dtype, params)
    return Found("view_dynamic", _with_sizes(params, how), dtype, module_path(node))


def _symbol_value(env: Any, sym: Any) -> int:
    backed = _backed(env)
    if sym in backed:
        return int(backed[sym])
    exact, assumed = _facts(env)
    return int(exact.get(sym, assumed.get(sym, FALLBACK_SIZE)))


# ---- select on a symbolic dim (#56) -------------------------------------------------------------
# Only a select whose selected dim is symbolic is this construct (the index then resolves at run
# time from the dim's size); on a static dim the converter resolves the index at conversion in
# every release, so static graphs have none to record. A SymInt index is not recorded (no
# release lowers it). The probe selects dim 1 of [batch, length, channels]: batch = the sizes
# before the selected dim, channels = those after.


def _select(node: Any) -> Found | None:
    x, dim, index = node.args[0], int(node.args[1]), node.args[2]
    if not _is_tensor(x) or not isinstance(index, int):
        return None
    raw = list(_val(x).shape)
    d = dim % len(raw)
    if not _is_symbolic(raw[d]):
        return None
    shape, how = _concrete(x)
    length = shape[d]
    need = -index if index < 0 else index + 1
    params: dict[str, Any] = {
        "batch": max(1, _prod(shape[:d])), "length": length,
        "channels": max(1, _prod(shape[d + 1:])), "dim": 1, "index": index,
        "dynamic_length": _range(raw[d], length, at_least=max(2, need)),
        "input_shape": shape, "graph_dim": dim,
    }
    dtype = _probe_dtype(_val(x).dtype, params)
    return Found("select_dynamic", _with_sizes(params, how), dtype, module_path(node))


# ---- masked_scatter (#16) ----------------------------------------------------------------------


def _masked_scatter(node: Any) -> Found | None:
    x, mask = node.args[0], node.args[1]
    shape, how = _concrete(x)
    mask_shape, _ = _concrete(mask)
    params: dict[str, Any] = {"shape": shape}
    if mask_shape != shape:
        params["broadcast"] = True
        params["mask_shape"] = mask_shape
    raw = list(_val(x).shape)
    if raw and _is_symbolic(raw[0]) and how == "dynamic":
        params["dynamic_batch"] = _range(raw[0], shape[0])
    dtype = _probe_dtype(_val(x).dtype, params)
    return Found("masked_scatter", _with_sizes(params, how), dtype, module_path(node))


# ---- coreai quantize / dequantize (#24) ---------------------------------------------------------
# torch.ops.coreai.quantize(input, scale, output_dtype, zero_point, minval, axis) and
# dequantize(input, scale, zero_point, minval, axis, input_dtype, output_dtype), present only when
# a recipe quantizes with coreai-torch's compression layers. The probe is a per-channel int8
# quantize -> dequantize round trip along `axis` (the fix: a negative axis); `op`, `rank`,
# `per_channel` and `quant_dtype` say what the graph holds (a per-tensor scale is probed per
# channel: the axis is still lowered).


def _quantize(node: Any) -> Found | None:
    quantize = _target_name(node).startswith("coreai.quantize")
    x = node.args[0]
    shape, how = _concrete(x)
    scale = node.args[1]
    if quantize:
        zero_point, axis = _arg(node, 3, "zero_point"), _arg(node, 5, "axis", 0)
        qdtype, fdtype = _arg(node, 2, "output_dtype"), _val(x).dtype
    else:
        zero_point, axis = _arg(node, 2, "zero_point"), _arg(node, 4, "axis", 0)
        qdtype, fdtype = _val(x).dtype, _val(node).dtype
    params: dict[str, Any] = {"shape": shape, "axis": int(axis or 0)}
    if zero_point is not None:
        params["zero_point"] = True
    if _name(qdtype) == "int8":
        params["output_dtype"] = "int8"
    params.update(op="quantize" if quantize else "dequantize", rank=len(shape),
                  per_channel=_is_tensor(scale) and _val(scale).numel() > 1,
                  quant_dtype=_name(qdtype))
    dtype = _probe_dtype(fdtype, params)
    return Found("quantize", _with_sizes(params, how), dtype, module_path(node))


DETECTORS: dict[str, tuple[tuple[str, ...], Callable[[Any], Found | None]]] = {
    # kind: (aten overloads it reads, detector)
    "conv_transpose": (("aten.convolution.default",), _conv_transpose),
    "batch_norm": (("aten._native_batch_norm_legit_no_training.default",), _batch_norm),
    "layer_norm": (("aten.native_layer_norm.default",), _layer_norm),
    "group_norm": (("aten.native_group_norm.default",), _group_norm),
    "true_divide": (tuple(_DIV_FORMS), _true_divide),
    "mean_dtype": (("aten.mean.dim", "aten.mean.default"), _mean),
    "min_dim": (("aten.min.dim",), _min_dim),
    "max_pool2d": (("aten.max_pool2d_with_indices.default",), _max_pool2d),
    "atan2": (("aten.atan2.default",), _atan2),
    "pad": (("aten.constant_pad_nd.default",) + tuple(
        f"aten.{kind}_pad{n}d.default" for kind in _PAD_MODES for n in (1, 2, 3)), _pad),
    "arange_float": (("aten.arange.default", "aten.arange.start", "aten.arange.start_step"),
                     _arange),
    "repeat_symbolic": (("aten.repeat.default",), _repeat),
    "cat_dynamic": (("aten.cat.default",), _cat),
    "view_dynamic": (("aten.view.default", "aten._unsafe_view.default",
                      "aten.reshape.default"), _view),
    "select_dynamic": (("aten.select.int",), _select),
    "masked_scatter": (("aten.masked_scatter.default",), _masked_scatter),
    "quantize": (("coreai.quantize.default", "coreai.dequantize.default"), _quantize),
}
# Reflect/replicate pads a converter's table decomposed, read back from their index nodes.
EXTRA_READERS: dict[str, tuple[tuple[str, ...], Callable[[Any], Found | None]]] = {
    "pad": (_INDEX_OPS, _decomposed_pad),
}

# Per kind, the parameters left out of the grouping key: a group takes its first member's values
# (graph order) and lists the distinct values of the first key seen as `shapes_seen`. Everything
# else (dtype, form, operand types, static or symbolic sizes...) separates instances.
REPRESENTATIVE: dict[str, tuple[str, ...]] = {
    "true_divide": ("shape",),
    "mean_dtype": ("shape",),
    "min_dim": ("shape",),
    "max_pool2d": ("input_shape",),
    "atan2": ("shape",),
    "pad": ("input_shape",),
    "repeat_symbolic": ("input_shape", "batch", "length", "repeats", "dynamic_batch"),
    "cat_dynamic": ("input_shapes", "batch", "length", "channels", "other_channels", "prefix",
                    "dim", "dynamic_length", "dynamic_batch"),
    "view_dynamic": ("input_shape", "output_shape", "batch", "length", "channels", "heads",
                     "dynamic_batch", "dynamic_hw"),
    "select_dynamic": ("input_shape", "batch", "length", "channels", "graph_dim",
                       "dynamic_length"),
    "masked_scatter": ("shape", "mask_shape", "dynamic_batch"),
    "quantize": ("shape", "op"),  # a quantize and its dequantize: one round-trip probe
}
SHAPES_SHOWN = 8


def _target_name(node: Any) -> str:
    target = node.target
    name = getattr(target, "name", None)
    if callable(name):  # OpOverload.name() gives "aten::convolution" style
        ns, _, rest = name().partition("::")
        op, _, overload = rest.partition(".")
        return f"{ns}.{op}.{overload or 'default'}"
    return str(target)


def detect(graph_nodes: Iterable[Any], kinds: Iterable[str] | None = None) -> list[Found]:
    wanted = set(kinds) if kinds is not None else set(DETECTORS)
    by_op: dict[str, list[Callable[[Any], Found | None]]] = {}
    for table in (DETECTORS, EXTRA_READERS):
        for kind, (ops, fn) in table.items():
            if kind in wanted:
                for op in ops:
                    by_op.setdefault(op, []).append(fn)
    found = []
    _FACTS.clear()
    for node in graph_nodes:
        if node.op != "call_function":
            continue
        for fn in by_op.get(_target_name(node), []):
            hit = fn(node)
            if hit is not None:
                found.append(hit)
    _FACTS.clear()
    return found


@dataclass(frozen=True)
class Grouped:
    kind: str
    params: dict[str, Any]
    dtype: str
    count: int
    modules: tuple[str, ...]


def group(found: list[Found]) -> list[Grouped]:
    """Instances with the same parameters become one, with a count, in graph order. For the
    kinds in REPRESENTATIVE, the parameters listed there do not separate instances: the group
    takes its first member's and lists the distinct values of the first one in `shapes_seen`."""
    order: list[tuple] = []
    acc: dict[tuple, list[Found]] = {}
    for f in found:
        loose = REPRESENTATIVE.get(f.kind, ())
        key = (f.kind, f.dtype, repr(sorted((k, v) for k, v in f.params.items()
                                            if k not in loose)))
        if key not in acc:
            order.append(key)
            acc[key] = []
        acc[key].append(f)
    out = []
    for k in order:
        members = acc[k]
        first = members[0]
        params = dict(first.params)
        loose = REPRESENTATIVE.get(first.kind, ())
        if loose:
            seen: list[str] = []
            for f in members:
                shown = _shown(f.params.get(loose[0]))
                if shown not in seen:
                    seen.append(shown)
            if len(seen) > 1:
                more = len(seen) - SHAPES_SHOWN
                params["shapes_seen"] = seen[:SHAPES_SHOWN] + (
                    [f"and {more} more"] if more > 0 else [])
        out.append(Grouped(first.kind, params, first.dtype, len(members),
                           tuple(f.module for f in members)))
    return out


def _shown(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        return " + ".join(_shown(v) for v in value)
    if isinstance(value, list):
        return "x".join(str(v) for v in value) or "scalar"
    return str(value)
