"""Shared helpers of the probe builders: imported inside converter environments, where only
torch and the oracle's own files may be imported.

A builder returns the probe in fp32 (the reference form) with its inputs (`Built`); the engine
(`oracle/workers/probes.py`) casts it the way a recipe casts a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

DTYPES = {
    "float32": torch.float32,
    "float16": torch.float16,
    "bfloat16": torch.bfloat16,
    "int32": torch.int32,
    "int8": torch.int8,
    "int64": torch.int64,
}
FP16_TINY = 6.103515625e-05  # fp16's smallest normal
FP16_MAX = 65504.0
INT_MIN = {"int8": -(2**7), "int32": -(2**31)}
INT_MAX = {"int8": 2**7 - 1, "int32": 2**31 - 1}

Dynamic = dict[str, dict[int, tuple[str, int, int]]]


@dataclass
class Built:
    """What a builder makes: an fp32 module and its inputs (float inputs in fp32)."""

    module: torch.nn.Module
    inputs: dict[str, torch.Tensor]
    # input name -> {axis: (dim name, min, max)} for probes exported with dynamic shapes
    dynamic: Dynamic = field(default_factory=dict)
    # inputs that keep their dtype whatever the spec's dtype (e.g. integer operands)
    fixed_dtype: tuple[str, ...] = ()
    # submodules `param_dtype` applies to; empty: the whole module (the rest follows the dtype)
    param_dtype_modules: tuple[str, ...] = ()


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


def call(inner: torch.nn.Module) -> torch.nn.Module:
    return _Call(inner)


def dynamic(params: dict[str, Any], key: str, name: str, axis: int, dim: str) -> Dynamic:
    """{name: {axis: (dim, min, max)}} when params[key] = [min, max], else nothing."""
    if not params.get(key):
        return {}
    lo, hi = (int(v) for v in params[key])
    return {name: {axis: (dim, lo, hi)}}


def merge(*parts: Dynamic) -> Dynamic:
    out: Dynamic = {}
    for part in parts:
        for name, axes in part.items():
            out.setdefault(name, {}).update(axes)
    return out


def log_uniform(n: int, lo: float, hi: float, gen: torch.Generator) -> torch.Tensor:
    u = torch.rand(n, generator=gen, dtype=torch.float64)
    return torch.exp(math.log(lo) + u * (math.log(hi) - math.log(lo))).float()


def permuted(n: int, gen: torch.Generator) -> torch.Tensor:
    return torch.randperm(n, generator=gen)


def norm_affine(
    weight: torch.Tensor | None, bias: torch.Tensor | None, gen: torch.Generator, values: str
) -> None:
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


def int_operand(shape: list[int], gen: torch.Generator, lo: int, hi: int) -> torch.Tensor:
    return torch.randint(lo, hi, shape, generator=gen, dtype=torch.int32)


def plant(
    x: torch.Tensor, specials: list[float], gen: torch.Generator, fraction: float = 0.25
) -> torch.Tensor:
    """Put special values at random positions of a float tensor (a copy)."""
    x = x.clone()
    flat = x.view(-1)
    count = max(len(specials), int(flat.numel() * fraction))
    where = permuted(flat.numel(), gen)[:count]
    for i, pos in enumerate(where.tolist()):
        flat[pos] = specials[i % len(specials)]
    return x


def number(v: Any) -> float:
    """A TOML value as a number; an int stays an int (an int / int scalar division)."""
    return v if isinstance(v, int | float) else float(v)


# ---- sizes from .item() (a data-dependent size in a static-shape graph) -------------------------
# SAM 3's decoder reads its feature map's height and width with `.item()` of `spatial_shapes`,
# a tensor of python ints made in forward: unbacked sizes the converter sees as such, which the
# optimizer folds once the constant is known. A probe of such an instance builds its sizes the
# same way: h, w from `.item()` of a [1, 2] int64 tensor (a constant made in forward, or for
# size_source "data" a graph input), pinned only as a product, as SAM 3's attention pins h * w,
# so the sizes stay symbolic and read back as the instance's did ("assumed" factors, an
# "asserted" product).


def item_values(layout: list[int | str], shape: list[int]) -> tuple[int, int]:
    """The two sizes (h, w) a data-dependent layout (`item_shape`, recorded beside the shape
    that holds its sizes' values) stands for: `u0` and `u1` at their values, a product of both
    split into equal factors (the detector's own assumption)."""
    import math

    known: dict[str, int] = {}
    products: list[int] = []
    for entry, value in zip(layout, shape, strict=True):
        if entry == "u0*u1":
            products.append(int(value))
        elif entry in ("u0", "u1"):
            known[entry] = int(value)
    for n in products:
        root = math.isqrt(n)
        known.setdefault("u0", root if root * root == n else n)
        known.setdefault("u1", n // max(1, known["u0"]))
    h = known.get("u0", 1)
    return h, known.get("u1", h)


def item_sizes(values: tuple[int, int], hw: torch.Tensor | None = None) -> tuple[Any, Any]:
    """Inside forward: h and w read with `.item()` (from `hw`, a graph input, or from a constant
    made here), pinned as the product of `values`."""
    if hw is None:
        hw = torch.tensor([list(values)], dtype=torch.long)
    h, w = hw[0, 0].item(), hw[0, 1].item()
    torch._check(h * w == values[0] * values[1])
    return h, w


def item_size(entry: int | str, h: Any, w: Any) -> Any:
    """One size of a layout: an int as it is, `u0`, `u1` or `u0*u1` from the .item() sizes."""
    if isinstance(entry, int):
        return entry
    sizes = {"u0": h, "u1": w}
    out: Any = 1
    for factor in entry.split("*"):
        if factor not in sizes:
            raise ValueError(f"item_shape entry {entry!r}: only products of u0 and u1 are built")
        out = out * sizes[factor]
    return out


def item_static(layout: list[int | str]) -> list[int]:
    """The static tensor a data-dependent layout is expanded from: 1 at each data-dependent
    size."""
    return [v if isinstance(v, int) else 1 for v in layout]


def item_expand(x: torch.Tensor, layout: list[int | str], h: Any, w: Any) -> torch.Tensor:
    """`x` (of `item_static(layout)`) expanded to the layout's sizes: the data-dependent ones
    from the .item() sizes."""
    return x.expand(*[item_size(v, h, w) for v in layout])


class _ItemShaped(torch.nn.Module):
    """`inner` on inputs expanded to a data-dependent layout: the sizes read with `.item()`
    (from a constant made in forward, or from the last input `hw`), as the instance's were."""

    def __init__(
        self,
        inner: torch.nn.Module,
        layout: list[int | str],
        values: tuple[int, int],
        from_input: bool,
    ) -> None:
        super().__init__()
        self.inner = inner
        self.layout = layout
        self.values = values
        self.from_input = from_input

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        xs, hw = (args[:-1], args[-1]) if self.from_input else (args, None)
        h, w = item_sizes(self.values, hw)
        return self.inner(*[item_expand(x, self.layout, h, w) for x in xs])


def item_shaped(
    inner: torch.nn.Module,
    layout: list[int | str],
    shape: list[int],
    source: str,
    inputs: dict[str, torch.Tensor],
) -> Built:
    """A probe whose tensor inputs (each built at `item_static(layout)`) take the instance's
    data-dependent layout inside forward (`_graph.item_layout`; `shape` holds its values)."""
    values = item_values(layout, shape)
    if source == "data":
        inputs = {**inputs, "hw": torch.tensor([list(values)], dtype=torch.long)}
    return Built(_ItemShaped(inner, layout, values, source == "data"), inputs, fixed_dtype=("hw",))
