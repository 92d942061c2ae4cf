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


@dataclass
class Probe:
    """A module in the spec's dtype, its inputs, and an fp32 twin for the reference."""

    module: torch.nn.Module
    inputs: dict[str, torch.Tensor]
    reference_module: torch.nn.Module
    reference_inputs: dict[str, torch.Tensor]
    dynamic: dict[str, dict[int, tuple[str, int, int]]]

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
    x = torch.randn(list(params["input_shape"]), generator=gen)
    return Built(_Call(inner), {"x": x})


BUILDERS: dict[str, Callable[[dict[str, Any], torch.Generator, str], Built]] = {
    "conv_transpose": _conv_transpose,
}


def build(spec: dict[str, Any]) -> Probe:
    construct = spec["construct"]
    if construct not in BUILDERS:
        raise ValueError(f"no probe for construct {construct!r}")
    gen = torch.Generator().manual_seed(int(spec.get("seed", 0)))
    built = BUILDERS[construct](spec["params"], gen, spec.get("values", "trained"))
    reference = built.module.eval()
    dtype = DTYPES[spec.get("dtype", "float32")]
    param_dtype = DTYPES[spec["params"].get("param_dtype", spec.get("dtype", "float32"))]
    module = copy.deepcopy(reference).to(param_dtype).eval()
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
    return Probe(module, inputs, reference, ref_inputs, built.dynamic)


def digest(module: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> str:
    """A content hash of parameters, buffers and inputs: equal on both sides or the run is void."""
    h = hashlib.sha256()
    for name, tensor in sorted(module.state_dict().items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    for name, tensor in sorted(inputs.items()):
        h.update(name.encode())
        h.update(tensor.detach().cpu().contiguous().view(torch.uint8).numpy().tobytes())
    return h.hexdigest()[:16]
