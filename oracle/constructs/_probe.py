"""Shared helpers of the probe builders: imported inside converter environments, where only
torch and the oracle's own files may be imported.

A builder returns the probe in fp32 (the reference form) with its inputs (`Built`); the engine
(`oracle/probes.py`) casts it the way a recipe casts a model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16,
          "int32": torch.int32, "int8": torch.int8, "int64": torch.int64}
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


def norm_affine(weight: torch.Tensor | None, bias: torch.Tensor | None, gen: torch.Generator,
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


def int_operand(shape: list[int], gen: torch.Generator, lo: int, hi: int) -> torch.Tensor:
    return torch.randint(lo, hi, shape, generator=gen, dtype=torch.int32)


def plant(x: torch.Tensor, specials: list[float], gen: torch.Generator,
          fraction: float = 0.25) -> torch.Tensor:
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
