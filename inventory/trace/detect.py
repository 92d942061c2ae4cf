"""Construct detection over an exported aten graph.

Reads `torch.export` nodes, never op-name histograms of a bundle: each detector looks at one
aten overload with its real arguments and the fake tensors torch.export attaches to every node,
so an instance carries exact parameters and shapes. Instances with identical parameters are
grouped with a count and the module paths they came from.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import torch

DTYPE_NAMES = {torch.float32: "float32", torch.float16: "float16", torch.bfloat16: "bfloat16",
               torch.int32: "int32", torch.int64: "int64", torch.int8: "int8"}


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


DETECTORS: dict[str, tuple[tuple[str, ...], Callable[[Any], Found | None]]] = {
    # kind: (aten overloads it reads, detector)
    "conv_transpose": (("aten.convolution.default",), _conv_transpose),
    "batch_norm": (("aten._native_batch_norm_legit_no_training.default",), _batch_norm),
    "layer_norm": (("aten.native_layer_norm.default",), _layer_norm),
    "group_norm": (("aten.native_group_norm.default",), _group_norm),
}


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
    for kind, (ops, fn) in DETECTORS.items():
        if kind in wanted:
            for op in ops:
                by_op.setdefault(op, []).append(fn)
    found = []
    for node in graph_nodes:
        if node.op != "call_function":
            continue
        for fn in by_op.get(_target_name(node), []):
            hit = fn(node)
            if hit is not None:
                found.append(hit)
    return found


@dataclass(frozen=True)
class Grouped:
    kind: str
    params: dict[str, Any]
    dtype: str
    count: int
    modules: tuple[str, ...]


def group(found: list[Found]) -> list[Grouped]:
    """Identical parameter sets become one instance with a count, in graph order."""
    order: list[tuple] = []
    acc: dict[tuple, list[Found]] = {}
    for f in found:
        key = (f.kind, f.dtype, repr(sorted(f.params.items())))
        if key not in acc:
            order.append(key)
            acc[key] = []
        acc[key].append(f)
    return [Grouped(acc[k][0].kind, acc[k][0].params, acc[k][0].dtype, len(acc[k]),
                    tuple(f.module for f in acc[k])) for k in order]
