"""The probe library: minimal torch modules, one per construct a converter fix can touch.

Imported by the worker inside converter environments, so it may import torch and nothing of the
project beyond this file. A probe is built from a plain-data spec; the same spec yields the same
parameters and inputs in every environment (all environments share one torch), and the worker
reports a digest of both so a comparison can prove the two sides converted the same module.

A builder returns the probe in fp32 (the reference form) with its inputs; `build` then casts it
the way a recipe casts a model (`module.to(dtype)` casts parameters and buffers alike) unless the
probe keeps its parameters in another dtype (`param_dtype`).
"""

from __future__ import annotations

import copy
import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "int32": torch.int32, "int8": torch.int8, "int64": torch.int64}


@dataclass
class Built:
    """What a builder makes: an fp32 module and its inputs (float inputs in fp32)."""

    module: torch.nn.Module
    inputs: dict[str, torch.Tensor]
    # input name -> {axis: (dim name, min, max)} for probes exported with dynamic shapes
    dynamic: dict[str, dict[int, tuple[str, int, int]]] = field(default_factory=dict)
    # inputs that keep their dtype whatever the spec's dtype (e.g. integer operands)
    fixed_dtype: tuple[str, ...] = ()
    # submodules `param_dtype` applies to; empty: the whole module (the rest follows the dtype)
    param_dtype_modules: tuple[str, ...] = ()


@dataclass
class Probe:
    """A module in the spec's dtype, its inputs, and an fp32 twin for the reference."""

    module: torch.nn.Module
    inputs: dict[str, torch.Tensor]
    reference_module: torch.nn.Module
    reference_inputs: dict[str, torch.Tensor]
    dynamic: dict[str, dict[int, tuple[str, int, int]]]
    original: torch.nn.Module | None = None  # the fp32 module as built, before the recipe's cast

    def dynamic_shapes(self) -> dict[str, dict[int, Any]] | None:
        if not self.dynamic:
            return None
        dims: dict[str, Any] = {}
        out: dict[str, dict[int, Any]] = {}
        for name in self.inputs:
            axes = self.dynamic.get(name, {})
            out[name] = {}
            for axis, (dim, lo, hi) in axes.items():
                if dim not in dims:
                    dims[dim] = torch.export.Dim(dim, min=lo, max=hi)
                out[name][int(axis)] = dims[dim]
        return out


def fill_trained(module: torch.nn.Module, gen: torch.Generator, values: str) -> None:
    """Replace fresh-init parameters with values that look trained (or adversarial).

    Fresh init is benign by construction (small, symmetric, no outliers); trained weights have
    larger spread and a few large entries, and a lowering bug can hide behind the former.
    """
    if values == "init":
        return
    with torch.no_grad():
        for name, param in module.named_parameters():
            if name.endswith("bias"):
                param.copy_(torch.randn(param.shape, generator=gen) * 0.5)
                continue
            fan = max(1, param[0].numel()) if param.dim() > 1 else 1
            data = torch.randn(param.shape, generator=gen) * (2.0 / fan**0.5)
            if param.dim() == 1:  # norm scales: around 1, not around 0
                data = 1.0 + torch.randn(param.shape, generator=gen) * 0.3
            if values == "adversarial":
                # A few entries two orders of magnitude above the rest.
                mask = torch.rand(param.shape, generator=gen) < 0.01
                data = torch.where(mask, data * 100.0, data)
            param.copy_(data)


class _Call(torch.nn.Module):
    """Wraps a module so the graph input is named `x`."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def _conv_transpose(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    dim = int(params["dim"])
    cls = {1: torch.nn.ConvTranspose1d, 2: torch.nn.ConvTranspose2d}[dim]
    inner = cls(
        int(params["in_channels"]),
        int(params["out_channels"]),
        kernel_size=tuple(params["kernel"]),
        stride=tuple(params["stride"]),
        padding=tuple(params.get("padding", [0] * dim)),
        output_padding=tuple(params.get("output_padding", [0] * dim)),
        groups=int(params.get("groups", 1)),
        bias=bool(params.get("bias", True)),
        dilation=tuple(params.get("dilation", [1] * dim)),
    )
    fill_trained(inner, gen, values)
    shape = list(params["input_shape"])
    x = torch.randn(shape, generator=gen)
    # A dynamic length is the last spatial axis (a vocoder's frame axis).
    dynamic = _dynamic(params, "dynamic_length", "x", len(shape) - 1, "length")
    return Built(_Call(inner), {"x": x}, dynamic=dynamic)


# ---- shared helpers -------------------------------------------------------------------------

FP16_TINY = 6.103515625e-05  # fp16's smallest normal
FP16_MAX = 65504.0
INT_MIN = {"int8": -(2**7), "int32": -(2**31)}
INT_MAX = {"int8": 2**7 - 1, "int32": 2**31 - 1}


def _dynamic(params: dict[str, Any], key: str, name: str, axis: int,
             dim: str) -> dict[str, dict[int, tuple[str, int, int]]]:
    """{name: {axis: (dim, min, max)}} when params[key] = [min, max], else nothing."""
    if not params.get(key):
        return {}
    lo, hi = (int(v) for v in params[key])
    return {name: {axis: (dim, lo, hi)}}


def _merge(*parts: dict[str, dict[int, tuple[str, int, int]]]
           ) -> dict[str, dict[int, tuple[str, int, int]]]:
    out: dict[str, dict[int, tuple[str, int, int]]] = {}
    for part in parts:
        for name, axes in part.items():
            out.setdefault(name, {}).update(axes)
    return out


def _log_uniform(n: int, lo: float, hi: float, gen: torch.Generator) -> torch.Tensor:
    u = torch.rand(n, generator=gen, dtype=torch.float64)
    return torch.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))).float()


def _permuted(n: int, gen: torch.Generator) -> torch.Tensor:
    return torch.randperm(n, generator=gen)


def _norm_affine(weight: torch.Tensor | None, bias: torch.Tensor | None, gen: torch.Generator,
                 values: str) -> None:
    """Norm scales around 1 and shifts around 0, as training leaves them (any rank)."""
    if values == "init":
        return
    with torch.no_grad():
        if weight is not None:
            data = 1.0 + torch.randn(weight.shape, generator=gen) * 0.3
            if values == "adversarial":
                mask = torch.rand(weight.shape, generator=gen) < 0.05
                data = torch.where(mask, data * 30.0, data)
            weight.copy_(data)
        if bias is not None:
            bias.copy_(torch.randn(bias.shape, generator=gen) * 0.5)


def _int_operand(shape: list[int], gen: torch.Generator, lo: int, hi: int) -> torch.Tensor:
    return torch.randint(lo, hi, shape, generator=gen, dtype=torch.int32)


def _plant(x: torch.Tensor, specials: list[float], gen: torch.Generator,
           fraction: float = 0.25) -> torch.Tensor:
    """Put special values at random positions of a float tensor (a copy)."""
    x = x.clone()
    flat = x.view(-1)
    count = max(len(specials), int(flat.numel() * fraction))
    where = _permuted(flat.numel(), gen)[:count]
    for i, pos in enumerate(where.tolist()):
        flat[pos] = specials[i % len(specials)]
    return x


# ---- batch norm (#54) -------------------------------------------------------------------------


def _running_var(c: int, regime: str, gen: torch.Generator) -> torch.Tensor:
    """Running variances: `spread` over orders of magnitude, all `tiny` (below fp16's smallest
    normal, some below its smallest subnormal), all `huge` (above fp16's max), or `mixed`."""
    if regime == "spread":
        return _log_uniform(c, 1e-3, 1e2, gen)
    if regime == "tiny":
        return _log_uniform(c, 1e-9, FP16_TINY * 0.8, gen)
    if regime == "huge":
        return _log_uniform(c, FP16_MAX * 1.2, 1e7, gen)
    if regime == "mixed":
        var = _log_uniform(c, 1e-3, 1e2, gen)
        order = _permuted(c, gen)
        quarter = max(1, c // 4)
        var[order[:quarter]] = _log_uniform(quarter, 1e-9, FP16_TINY * 0.8, gen)
        var[order[quarter:2 * quarter]] = _log_uniform(quarter, FP16_MAX * 1.2, 1e7, gen)
        return var
    raise ValueError(f"unknown running_var regime {regime!r}")


class _BatchNorm(torch.nn.Module):
    """A batch norm, optionally after a depthwise Conv1d as in a Conformer's convolution module."""

    def __init__(self, bn: torch.nn.Module, conv: torch.nn.Module | None) -> None:
        super().__init__()
        self.conv = conv
        self.bn = bn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.conv is not None:
            x = self.conv(x)
        return self.bn(x)


def _batch_norm(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    dim = int(params.get("dim", 1))
    c = int(params["channels"])
    length = int(params.get("length", 16))
    batch = int(params.get("batch", 1))
    kernel = params.get("depthwise_kernel")
    if kernel and dim != 1:
        raise ValueError("depthwise_kernel needs dim = 1 (a Conv1d)")
    bn = {1: torch.nn.BatchNorm1d, 2: torch.nn.BatchNorm2d}[dim](
        c, eps=float(params.get("eps", 1e-5)), affine=bool(params.get("affine", True)))
    fill_trained(bn, gen, values)
    shape = [batch, c] + [length] * dim
    conv = None
    if kernel:
        k = int(kernel)
        conv = torch.nn.Conv1d(c, c, k, padding=k // 2, groups=c, bias=True)
        fill_trained(conv, gen, values)
    default_regime = {"init": None, "trained": "spread", "adversarial": "mixed"}[values]
    regime = params.get("running_var", default_regime)
    if regime is None:  # fresh init: mean 0, var 1
        x = torch.randn(shape, generator=gen)
        return Built(_BatchNorm(bn, conv), {"x": x}, param_dtype_modules=_bn_only(conv))
    var = _running_var(c, regime, gen)
    per_channel = [1, c] + [1] * dim
    if conv is None:
        mean = torch.randn(c, generator=gen) * 0.5 * var.sqrt().clamp(max=10.0) + \
            torch.randn(c, generator=gen) * 0.2
        # The input the statistics describe: x ~ N(running_mean, running_var) per channel.
        x = mean.view(per_channel) + var.sqrt().view(per_channel) * torch.randn(shape,
                                                                             generator=gen)
    else:
        x = torch.randn(shape, generator=gen)
        with torch.no_grad():
            y = conv(x)
        mean = y.mean(dim=(0, 2)) + torch.randn(c, generator=gen) * 0.05
        if regime == "spread":  # as trained: the statistics of what the conv produces
            var = y.var(dim=(0, 2)) * _log_uniform(c, 0.5, 2.0, gen)
    with torch.no_grad():
        bn.running_mean.copy_(mean)
        bn.running_var.copy_(var)
        bn.num_batches_tracked.fill_(10000)
    return Built(_BatchNorm(bn, conv), {"x": x}, param_dtype_modules=_bn_only(conv))


def _bn_only(conv: torch.nn.Module | None) -> tuple[str, ...]:
    # With a conv in front, `param_dtype` is the batch norm's alone: the conv runs in the dtype.
    return ("bn",) if conv is not None else ()


# ---- layer norm (#55) and group norm (#56) ---------------------------------------------------


class _LayerNorm(torch.nn.Module):
    def __init__(self, ln: torch.nn.LayerNorm) -> None:
        super().__init__()
        self.ln = ln

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x)


def _offset_input(shape: list[int], reduce_dims: int, gen: torch.Generator,
                  values: str) -> torch.Tensor:
    """Rows with their own offset and scale; adversarial: offsets far above the spread (the
    variance of a row is then a small difference of large numbers)."""
    rows = shape[: len(shape) - reduce_dims] + [1] * reduce_dims
    x = torch.randn(shape, generator=gen)
    if values == "adversarial":
        offset = 300.0 + torch.randn(rows, generator=gen) * 50.0
        scale = _log_uniform(int(torch.tensor(rows).prod()), 1e-2, 1.0, gen).view(rows)
    elif values == "init":
        return x
    else:
        offset = torch.randn(rows, generator=gen) * 0.5
        scale = _log_uniform(int(torch.tensor(rows).prod()), 0.3, 3.0, gen).view(rows)
    return offset + scale * x


def _layer_norm(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    normalized = [int(v) for v in params["normalized_shape"]]
    shape = [int(v) for v in params["input_shape"]]
    ln = torch.nn.LayerNorm(normalized, eps=float(params.get("eps", 1e-5)),
                            elementwise_affine=bool(params.get("elementwise_affine", True)),
                            bias=bool(params.get("bias", True)))
    _norm_affine(ln.weight, ln.bias, gen, values)
    x = _offset_input(shape, len(normalized), gen, values)
    return Built(_LayerNorm(ln), {"x": x})


class _GroupNorm(torch.nn.Module):
    def __init__(self, gn: torch.nn.GroupNorm) -> None:
        super().__init__()
        self.gn = gn

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gn(x)


def _group_norm(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    c = int(params["channels"])
    gn = torch.nn.GroupNorm(int(params["num_groups"]), c, eps=float(params.get("eps", 1e-5)),
                            affine=bool(params.get("affine", True)))
    _norm_affine(gn.weight, gn.bias, gen, values)
    # `length` is one spatial size (a [B, C, L] input) or a list of them ([B, C, H, W] ...).
    length = params.get("length", 16)
    spatial = [int(v) for v in length] if isinstance(length, list | tuple) else [int(length)]
    shape = [int(params.get("batch", 2)), c, *spatial]
    per_channel = [1, c] + [1] * len(spatial)
    x = torch.randn(shape, generator=gen)
    if values != "init":  # per-channel offsets and scales, as activations have
        offset = torch.randn(per_channel, generator=gen) * (
            100.0 if values == "adversarial" else 0.5)
        x = offset + _log_uniform(c, 0.1, 3.0, gen).view(per_channel) * x
    dynamic = _merge(_dynamic(params, "dynamic_batch", "x", 0, "batch"),
                     _dynamic(params, "dynamic_length", "x", 2, "length"))
    return Built(_GroupNorm(gn), {"x": x}, dynamic=dynamic)


# ---- division (#32) ---------------------------------------------------------------------------


class _Divide(torch.nn.Module):
    """`form`: tensor (a / b), true_divide (torch.true_divide(a, b)), div_mode_none
    (torch.div(a, b, rounding_mode=None)), scalar (a / divisor), tensor_0dim_fp32
    (a / torch.tensor(divisor, dtype=float32): a 0-dim fp32 tensor, whatever a's dtype)."""

    def __init__(self, form: str, divisor: float) -> None:
        super().__init__()
        self.form = form
        self.divisor = divisor

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.form == "tensor":
            return a / b
        if self.form == "true_divide":
            return torch.true_divide(a, b)
        if self.form == "div_mode_none":
            return torch.div(a, b, rounding_mode=None)
        raise ValueError(self.form)


class _DivideScalar(_Divide):
    def forward(self, a: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
        if self.form == "scalar":
            return a / self.divisor
        if self.form == "tensor_0dim_fp32":
            return a / torch.tensor(self.divisor, dtype=torch.float32)
        raise ValueError(self.form)


def _true_divide(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    form = params.get("form", "tensor")
    operands = params.get("operands", "int32")
    shape = [int(v) for v in params.get("shape", [4, 16])]
    divisor = _number(params.get("divisor", 7))  # an int stays an int: int / int scalar
    if operands == "int32":
        a = _int_operand(shape, gen, -1000, 1000)
        b = _int_operand(shape, gen, 1, 50) * (_int_operand(shape, gen, 0, 2) * 2 - 1)
        if values == "adversarial":  # int32 extremes; integers beyond fp32's exact range
            a.view(-1)[:6] = torch.tensor([INT_MAX["int32"], INT_MIN["int32"], 2**24 + 1,
                                           -(2**24) - 1, 0, 7], dtype=torch.int32)
            b.view(-1)[:6] = torch.tensor([3, -1, 1, 7, -5, -2], dtype=torch.int32)
        if params.get("divide_by_zero"):  # x / 0 -> +-inf, 0 / 0 -> NaN
            b.view(-1)[-3:] = 0
            a.view(-1)[-3:] = torch.tensor([5, -5, 0], dtype=torch.int32)
    elif operands == "float":
        a = torch.randn(shape, generator=gen) * 3.0
        b = torch.randn(shape, generator=gen).abs() + 0.5
        if values == "adversarial":
            a = _plant(a, [0.0, -0.0, math.inf, 6e4], gen, 0.1)
            b = _plant(b, [0.0, -0.0, 1e-4, math.inf], gen, 0.1)
    else:
        raise ValueError(f"unknown operands {operands!r}")
    if form in ("scalar", "tensor_0dim_fp32"):
        return Built(_DivideScalar(form, divisor), {"a": a})
    return Built(_Divide(form, divisor), {"a": a, "b": b})


# ---- mean with a dtype (#42) -------------------------------------------------------------------


class _Mean(torch.nn.Module):
    def __init__(self, dims: list[int] | None, keepdim: bool, dtype: torch.dtype | None) -> None:
        super().__init__()
        self.dims = dims
        self.keepdim = keepdim
        self.dtype = dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dims is None:
            return x.mean(dtype=self.dtype)
        return x.mean(self.dims, keepdim=self.keepdim, dtype=self.dtype)


def _mean_dtype(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    operand = params.get("operand", "float")
    shape = [int(v) for v in params.get("shape", [4, 64])]
    dims = params.get("dims")
    dtype_arg = params.get("dtype_arg", "float32")
    out_dtype = DTYPES[dtype_arg] if dtype_arg else None
    if operand == "int32":
        x = _int_operand(shape, gen, -1000, 1000)
        if values == "adversarial":  # sums far beyond int32 and beyond fp32's exact integers
            x = _int_operand(shape, gen, 2**30, 2**31 - 1)
    elif operand == "float":
        x = torch.randn(shape, generator=gen) * 2.0 + 1.0
        if values == "adversarial":  # an fp16 sum overflows; an fp32 one does not
            x = 3e4 + torch.randn(shape, generator=gen) * 2e3
    else:
        raise ValueError(f"unknown operand {operand!r}")
    module = _Mean(None if dims is None else [int(d) for d in dims],
                   bool(params.get("keepdim", False)), out_dtype)
    return Built(module, {"x": x})


# ---- min.dim (#43) -----------------------------------------------------------------------------


class _MinDim(torch.nn.Module):
    def __init__(self, dim: int, keepdim: bool, int_dtype: torch.dtype | None) -> None:
        super().__init__()
        self.dim = dim
        self.keepdim = keepdim
        self.int_dtype = int_dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.int_dtype is not None and self.int_dtype != x.dtype:
            x = x.to(self.int_dtype)  # graph inputs are int32; the operand is narrower
        # The argmin is what #43 changed (the values are a reduce_min either way). One output:
        # a probe's outputs are matched to the reference by position.
        return torch.min(x, self.dim, keepdim=self.keepdim).indices


def _min_dim(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    shape = [int(v) for v in params.get("shape", [4, 16])]
    dim = int(params.get("dim", -1))
    int_name = params.get("int_dtype")  # int8 | int32 | absent: float
    rows = shape.copy()
    axis = dim % len(shape)
    n = shape[axis]
    # One minimum per row, at a random position, every other value above it (no ties).
    if int_name:
        lo, hi = INT_MIN[int_name], INT_MAX[int_name]
        x = _int_operand(shape, gen, max(lo + 1, -100), min(hi, 100))
        minimum = lo if values == "adversarial" else max(lo + 1, -100) - 1
    else:
        x = torch.randn(shape, generator=gen) * 3.0
        minimum = -math.inf if values == "adversarial" else -50.0
    rows[axis] = 1
    where = torch.randint(0, n, rows, generator=gen)
    x = x.scatter(axis, where, torch.full(rows, minimum, dtype=x.dtype))
    module = _MinDim(dim, bool(params.get("keepdim", False)),
                     DTYPES[int_name] if int_name else None)
    return Built(module, {"x": x})


# ---- max_pool2d (#36) --------------------------------------------------------------------------


class _MaxPool(torch.nn.Module):
    """form `functional`: F.max_pool2d(x, k[, stride], ...) (no stride argument unless given);
    form `module`: nn.MaxPool2d(k, ...), which always records the stride (= kernel)."""

    def __init__(self, form: str, kernel: list[int], stride: list[int] | None,
                 padding: list[int], ceil_mode: bool) -> None:
        super().__init__()
        self.form = form
        self.kernel = kernel
        self.stride = stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.pool = torch.nn.MaxPool2d(kernel, stride=stride, padding=padding,
                                       ceil_mode=ceil_mode)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.form == "module":
            return self.pool(x)
        kw: dict[str, Any] = {}
        if any(self.padding):
            kw["padding"] = self.padding
        if self.ceil_mode:
            kw["ceil_mode"] = True
        if self.stride is None:
            return torch.nn.functional.max_pool2d(x, self.kernel, **kw)
        return torch.nn.functional.max_pool2d(x, self.kernel, self.stride, **kw)


def _max_pool2d(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    kernel = [int(v) for v in params["kernel"]]
    stride = [int(v) for v in params["stride"]] if params.get("stride") else None
    padding = [int(v) for v in params.get("padding", [0, 0])]
    x = torch.randn([int(v) for v in params["input_shape"]], generator=gen)
    if values == "adversarial":
        # All negative (a zero pad would win), with -inf entries.
        x = _plant(-x.abs() - 1.0, [-math.inf], gen, 0.05)
    module = _MaxPool(params.get("form", "functional"), kernel, stride, padding,
                      bool(params.get("ceil_mode", False)))
    return Built(module, {"x": x})


# ---- atan2 (#23, #35) --------------------------------------------------------------------------


class _Atan2(torch.nn.Module):
    def forward(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        return torch.atan2(y, x)


ATAN2_SPECIALS = (0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 1e-30)


def _atan2(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    shape = [int(v) for v in params.get("shape", [8, 8])]
    if params.get("operands", "float") == "int32":
        y = _int_operand(shape, gen, -5, 6)
        x = _int_operand(shape, gen, -5, 6)
        if values == "adversarial":
            y.view(-1)[:4] = torch.tensor([0, 0, INT_MAX["int32"], INT_MIN["int32"]])
            x.view(-1)[:4] = torch.tensor([0, -3, INT_MIN["int32"], 0])
        return Built(_Atan2(), {"y": y, "x": x})
    y = torch.randn(shape, generator=gen) * 2.0
    x = torch.randn(shape, generator=gen) * 2.0
    if values == "adversarial":
        # Every pair of special values, then random values.
        grid = torch.tensor(ATAN2_SPECIALS)
        ys, xs = torch.meshgrid(grid, grid, indexing="ij")
        k = min(ys.numel(), y.numel())
        y.view(-1)[:k] = ys.reshape(-1)[:k]
        x.view(-1)[:k] = xs.reshape(-1)[:k]
    return Built(_Atan2(), {"y": y, "x": x})


# ---- coreai quantize / dequantize (#24) --------------------------------------------------------


def _coreai_ops() -> Any:
    """torch.ops.coreai, registering coreai-torch's quantize/dequantize if nobody has yet.

    They are defined (identically in 0.4.0-0.4.3) by coreai_torch._compression.custom_layers,
    which `import coreai_torch` does not load. Imported lazily: only converter environments
    have coreai_torch.
    """
    try:
        torch.ops.coreai.quantize  # noqa: B018 - raises if the op is not registered
    except (AttributeError, RuntimeError):
        import coreai_torch._compression.custom_layers  # noqa: F401
    return torch.ops.coreai


class _QuantDequant(torch.nn.Module):
    def __init__(self, scale: torch.Tensor, zero_point: torch.Tensor | None, axis: int,
                 qdtype: torch.dtype) -> None:
        super().__init__()
        self.register_buffer("scale", scale)
        self.register_buffer("zero_point", zero_point)
        self.axis = axis
        self.qdtype = qdtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        ops = _coreai_ops()
        q = ops.quantize(x, self.scale, self.qdtype, zero_point=self.zero_point, axis=self.axis)
        # The round trip shows a wrong axis, rounding and saturation alike; one output (outputs
        # are matched to the reference by position).
        return ops.dequantize(q, self.scale, zero_point=self.zero_point, axis=self.axis)


def _quantize(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    _coreai_ops()
    shape = [int(v) for v in params.get("shape", [2, 8, 8])]
    axis = int(params.get("axis", -1))
    qdtype = DTYPES[params.get("output_dtype", "int8")]
    channels = shape[axis]
    per_channel = [1] * len(shape)
    per_channel[axis] = channels
    # Channels of very different magnitude: a scale applied along the wrong axis shows.
    magnitude = _log_uniform(channels, 0.05, 20.0, gen)
    x = torch.randn(shape, generator=gen) * magnitude.view(per_channel)
    qmax = 127.0
    scale = x.abs().amax(dim=[d for d in range(len(shape)) if d != axis % len(shape)]) / qmax
    zero_point = None
    if params.get("zero_point", False):
        zero_point = torch.randint(-8, 9, [channels], generator=gen, dtype=torch.int8)
    if values == "adversarial":
        # Saturation beyond the clip range and exact rounding ties (k + 0.5) * scale.
        ties = (torch.randint(-100, 100, shape, generator=gen).float() + 0.5) * \
            scale.view(per_channel)
        x = torch.where(torch.rand(shape, generator=gen) < 0.3, ties, x)
        x = torch.where(torch.rand(shape, generator=gen) < 0.05, x * 3.0, x)
    return Built(_QuantDequant(scale, zero_point, axis, qdtype), {"x": x})


# ---- pad (#29, #30, #31) -----------------------------------------------------------------------


class _Pad(torch.nn.Module):
    def __init__(self, pads: list[int], mode: str, value: float) -> None:
        super().__init__()
        self.pads = pads
        self.mode = mode
        self.value = value

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mode == "constant":
            return torch.nn.functional.pad(x, self.pads, "constant", self.value)
        return torch.nn.functional.pad(x, self.pads, self.mode)


def _pad(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    shape = [int(v) for v in params["input_shape"]]
    x = torch.randn(shape, generator=gen)
    if values == "adversarial":
        # Distinct values by position: a wrong reflection or replication index shows.
        x = torch.arange(x.numel(), dtype=torch.float32).view(shape) / x.numel() + x * 1e-3
    module = _Pad([int(v) for v in params["pads"]], params.get("mode", "reflect"),
                  float(params.get("value", 0.0)))
    return Built(module, {"x": x})


# ---- arange (#25, #27) -------------------------------------------------------------------------


class _Arange(torch.nn.Module):
    """x + arange(start, end, step, dtype): the arange's dtype is `input` (x's), a named dtype,
    or absent (torch's default for the bounds: int64 for integers, fp32 for a float)."""

    def __init__(self, start: float, end: float, step: float, dtype: str | None) -> None:
        super().__init__()
        self.start, self.end, self.step = start, end, step
        self.dtype = dtype

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.dtype == "input":
            dtype: torch.dtype | None = x.dtype
        else:
            dtype = DTYPES[self.dtype] if self.dtype else None
        return x + torch.arange(self.start, self.end, self.step, dtype=dtype)


def _number(v: Any) -> float:
    return v if isinstance(v, int | float) else float(v)


def _arange_float(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    start, end = _number(params.get("start", 0)), _number(params["end"])
    step = _number(params.get("step", 1))
    n = len(torch.arange(start, end, step))
    x = torch.randn([int(params.get("batch", 1)), n], generator=gen)
    return Built(_Arange(start, end, step, params.get("arange_dtype", "input")), {"x": x})


# ---- repeat by a symbolic size (#15) -----------------------------------------------------------


class _Repeat(torch.nn.Module):
    """A learned row tiled over the batch: w.repeat(x.shape[0], 1) (symbolic when the batch is
    dynamic, a plain int otherwise)."""

    def __init__(self, length: int) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(1, length))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.w.repeat(x.shape[0], 1)


def _repeat_symbolic(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    length = int(params.get("length", 16))
    module = _Repeat(length)
    fill_trained(module, gen, values)
    x = torch.randn([int(params.get("batch", 3)), length], generator=gen)
    return Built(module, {"x": x}, dynamic=_dynamic(params, "dynamic_batch", "x", 0, "batch"))


# ---- cat under dynamic shapes (#14) ------------------------------------------------------------


class _Cat(torch.nn.Module):
    """mode `along_dynamic`: cat([x, y], dim=1) along the (dynamic) time axis; `sliced`:
    cat([x[:, :prefix], y], dim=2), where the slice of a dynamic axis has a static size in torch
    that a converter may only know dynamically, beside y's static size on that axis;
    `reshaped`: cat([x.reshape(B, -1), y], dim=0) with a dynamic batch B: torch knows the
    flattened axis (T * C), a converter building the reshape from a runtime shape may not, and
    y has it static; `upsampled`: cat([ConvTranspose1d(x), y], dim=2) with a dynamic length:
    torch knows the upsampled batch and channels, a converter may type them dynamic."""

    def __init__(self, mode: str, prefix: int, up: torch.nn.Module | None = None) -> None:
        super().__init__()
        self.mode = mode
        self.prefix = prefix
        self.up = up

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        if self.mode == "along_dynamic":
            return torch.cat([x, y], dim=1)
        if self.mode == "sliced":
            return torch.cat([x[:, : self.prefix], y], dim=2)
        if self.mode == "reshaped":
            return torch.cat([x.reshape(x.shape[0], -1), y], dim=0)
        if self.mode == "upsampled":
            return torch.cat([self.up(x), y], dim=2)
        raise ValueError(self.mode)


def _cat_dynamic(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    mode = params.get("mode", "sliced")
    batch, length = int(params.get("batch", 2)), int(params.get("length", 12))
    c, d = int(params.get("channels", 8)), int(params.get("other_channels", 4))
    prefix = int(params.get("prefix", 4))
    x = torch.randn([batch, length, c], generator=gen)
    if mode == "along_dynamic":
        y = torch.randn([batch, prefix, c], generator=gen)
    elif mode == "upsampled":  # x [B, C, T] upsampled 2x, then y's frames appended in time
        x = torch.randn([batch, c, length], generator=gen)
        up = torch.nn.ConvTranspose1d(c, d, 4, stride=2, padding=1)
        fill_trained(up, gen, values)
        y = torch.randn([batch, d, prefix], generator=gen)
        return Built(_Cat(mode, prefix, up), {"x": x, "y": y},
                     dynamic=_dynamic(params, "dynamic_length", "x", 2, "length"))
    elif mode == "reshaped":  # y's rows are the flattened x's; only x has a dynamic batch
        y = torch.randn([prefix, length * c], generator=gen)
        return Built(_Cat(mode, prefix), {"x": x, "y": y},
                     dynamic=_dynamic(params, "dynamic_batch", "x", 0, "batch"))
    else:
        y = torch.randn([batch, prefix, d], generator=gen)
    dynamic = _merge(_dynamic(params, "dynamic_length", "x", 1, "length"),
                     _dynamic(params, "dynamic_batch", "x", 0, "batch"),
                     _dynamic(params, "dynamic_batch", "y", 0, "batch"))
    return Built(_Cat(mode, prefix), {"x": x, "y": y}, dynamic=dynamic)


# ---- view / reshape with a dynamic batch (#13) -------------------------------------------------


class _View(torch.nn.Module):
    """mode `split_heads`: x.view(B, T, H, C // H) (a SymInt beside plain ints); `merge`:
    x.reshape(B * T, C) (a product of SymInt and int); `flatten`: x.reshape(B, -1)."""

    def __init__(self, mode: str, heads: int) -> None:
        super().__init__()
        self.mode = mode
        self.heads = heads

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        if self.mode == "split_heads":
            return x.view(b, t, self.heads, c // self.heads).transpose(1, 2)
        if self.mode == "merge":
            return x.reshape(b * t, c)
        if self.mode == "flatten":
            return x.reshape(b, -1)
        raise ValueError(self.mode)


class _ViewSymFloat(torch.nn.Module):
    """x.view(1, C, -1).view(1, C, h, w) with h, w = round(sqrt(area / aspect)),
    round(sqrt(area * aspect)) of a dynamic H x W: SymInts from SymFloat arithmetic beside plain
    ints in one shape list (#13's own regression case; exact for square inputs)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        c = x.shape[1]
        area = x.shape[2] * x.shape[3]
        aspect = x.shape[3] / x.shape[2]
        h = round((area / aspect) ** 0.5)
        w = round((area * aspect) ** 0.5)
        return x.view(1, c, -1).view(1, c, h, w)


def _view_dynamic(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    mode = params.get("mode", "split_heads")
    if mode == "symfloat":
        side = int(params.get("length", 16))
        x = torch.randn([1, int(params.get("channels", 16)), side, side], generator=gen)
        dynamic = _merge(_dynamic(params, "dynamic_hw", "x", 2, "height"),
                         _dynamic(params, "dynamic_hw", "x", 3, "width"))
        return Built(_ViewSymFloat(), {"x": x}, dynamic=dynamic)
    shape = [int(params.get("batch", 2)), int(params.get("length", 8)),
             int(params.get("channels", 16))]
    x = torch.randn(shape, generator=gen)
    module = _View(mode, int(params.get("heads", 4)))
    return Built(module, {"x": x}, dynamic=_dynamic(params, "dynamic_batch", "x", 0, "batch"))


# ---- masked_scatter (#16) ----------------------------------------------------------------------


class _MaskedScatter(torch.nn.Module):
    """x.masked_scatter(mask, source), the mask computed from x: elementwise (x > 0) or one per
    row broadcast over the row (`broadcast`)."""

    def __init__(self, broadcast: bool) -> None:
        super().__init__()
        self.broadcast = broadcast

    def forward(self, x: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
        mask = x.mean(dim=-1, keepdim=True) > 0 if self.broadcast else x > 0
        return x.masked_scatter(mask, source)


def _masked_scatter(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    shape = [int(v) for v in params.get("shape", [4, 16])]
    x = torch.randn(shape, generator=gen)
    source = torch.randn(shape, generator=gen) * 10.0
    if values == "adversarial":  # all-true and all-false rows
        x[0] = x[0].abs() + 0.1
        x[-1] = -x[-1].abs() - 0.1
    module = _MaskedScatter(bool(params.get("broadcast", False)))
    dynamic = _merge(_dynamic(params, "dynamic_batch", "x", 0, "batch"),
                     _dynamic(params, "dynamic_batch", "source", 0, "batch"))
    return Built(module, {"x": x, "source": source}, dynamic=dynamic)


# ---- select on a dynamic dim (#56) -------------------------------------------------------------


class _Select(torch.nn.Module):
    def __init__(self, dim: int, index: int) -> None:
        super().__init__()
        self.dim = dim
        self.index = index

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.select(self.dim, self.index)


def _select_dynamic(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    shape = [int(params.get("batch", 2)), int(params.get("length", 12)),
             int(params.get("channels", 8))]
    dim = int(params.get("dim", 1))
    x = torch.randn(shape, generator=gen)
    dynamic = _dynamic(params, "dynamic_length", "x", dim % 3, "length")
    return Built(_Select(dim, int(params.get("index", -1))), {"x": x}, dynamic=dynamic)


BUILDERS: dict[str, Callable[[dict[str, Any], torch.Generator, str], Built]] = {
    "conv_transpose": _conv_transpose,
    "batch_norm": _batch_norm,
    "layer_norm": _layer_norm,
    "group_norm": _group_norm,
    "true_divide": _true_divide,
    "mean_dtype": _mean_dtype,
    "min_dim": _min_dim,
    "max_pool2d": _max_pool2d,
    "atan2": _atan2,
    "quantize": _quantize,
    "pad": _pad,
    "arange_float": _arange_float,
    "repeat_symbolic": _repeat_symbolic,
    "cat_dynamic": _cat_dynamic,
    "view_dynamic": _view_dynamic,
    "masked_scatter": _masked_scatter,
    "select_dynamic": _select_dynamic,
}


def build(spec: dict[str, Any]) -> Probe:
    construct = spec["construct"]
    if construct not in BUILDERS:
        raise ValueError(f"no probe for construct {construct!r}")
    gen = torch.Generator().manual_seed(int(spec.get("seed", 0)))
    built = BUILDERS[construct](spec["params"], gen, spec.get("values", "trained"))
    original = built.module.eval()
    dtype = DTYPES[spec.get("dtype", "float32")]
    param_dtype = DTYPES[spec["params"].get("param_dtype", spec.get("dtype", "float32"))]
    if built.param_dtype_modules:
        module = copy.deepcopy(original).to(dtype).eval()
        for name in built.param_dtype_modules:
            module.get_submodule(name).to(param_dtype)
    else:
        module = copy.deepcopy(original).to(param_dtype).eval()
    # The reference computes in fp32 with the parameters the shipped module really holds (as
    # cast by the recipe): rounding them is the recipe's doing, not the converter's, and is the
    # same on both sides; what the reference measures is how each program computes with them.
    reference = copy.deepcopy(module).float().eval()
    inputs: dict[str, torch.Tensor] = {}
    ref_inputs: dict[str, torch.Tensor] = {}
    for name, value in built.inputs.items():
        if value.is_floating_point() and name not in built.fixed_dtype:
            value = value.to(dtype)
            # The reference sees the same, already-rounded input values, in fp32.
            ref_inputs[name] = value.to(torch.float32)
        else:
            ref_inputs[name] = value
        inputs[name] = value
    return Probe(module, inputs, reference, ref_inputs, built.dynamic, original)


def digest(module: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> str:
    """A content hash of parameters, buffers and inputs: equal on both sides or the run is void."""
    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(_bytes(tensor))
    for name, tensor in sorted(inputs.items()):
        h.update(name.encode())
        h.update(_bytes(tensor))
    return h.hexdigest()[:16]


def _bytes(tensor: torch.Tensor) -> bytes:
    # Flattened first: a 0-dim tensor (a batch norm's num_batches_tracked) cannot be viewed as
    # bytes of another size; for any other tensor the bytes are the same.
    return tensor.detach().cpu().contiguous().reshape(-1).view(torch.uint8).numpy().tobytes()
