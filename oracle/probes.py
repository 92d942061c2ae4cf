"""The probe library: minimal torch modules, one per construct a converter fix can touch.

Imported by the worker inside converter environments, so it may import torch and nothing of the
project beyond this file. A probe is built from a plain-data spec; the same spec yields the same
parameters and inputs in every environment (all environments share one torch), and the worker
reports a digest of both so a comparison can prove the two sides converted the same module.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


@dataclass
class Probe:
    """A module in the spec's dtype, its inputs, and an fp32 twin for the reference."""

    module: torch.nn.Module
    inputs: dict[str, torch.Tensor]
    reference_module: torch.nn.Module
    reference_inputs: dict[str, torch.Tensor]


class _Wrap(torch.nn.Module):
    """Names the graph input `x` whatever the inner module calls it."""

    def __init__(self, inner: torch.nn.Module) -> None:
        super().__init__()
        self.inner = inner

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x)


def _fill_trained(module: torch.nn.Module, gen: torch.Generator, values: str) -> None:
    """Replace fresh-init parameters with values that look trained (or adversarial).

    Fresh init is benign by construction (small, symmetric, no outliers); trained weights have
    larger spread and a few large entries, and a lowering bug can hide behind the former.
    """
    with torch.no_grad():
        for name, param in module.named_parameters():
            fan = max(1, param[0].numel()) if param.dim() > 1 else 1
            if values == "init":
                continue
            if name.endswith("bias"):
                param.copy_(torch.randn(param.shape, generator=gen) * 0.5)
                continue
            scale = 2.0 / fan**0.5
            data = torch.randn(param.shape, generator=gen) * scale
            if values == "adversarial":
                # A few entries two orders of magnitude above the rest.
                mask = torch.rand(param.shape, generator=gen) < 0.01
                data = torch.where(mask, data * 100.0, data)
            param.copy_(data)


def _conv_transpose(params: dict[str, Any], gen: torch.Generator) -> tuple[torch.nn.Module, list]:
    dim = int(params["dim"])
    cls = {1: torch.nn.ConvTranspose1d, 2: torch.nn.ConvTranspose2d}[dim]
    module = cls(
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
    return module, list(params["input_shape"])


BUILDERS: dict[str, Callable[[dict[str, Any], torch.Generator], tuple[torch.nn.Module, list]]] = {
    "conv_transpose": _conv_transpose,
}


def build(spec: dict[str, Any]) -> Probe:
    construct = spec["construct"]
    if construct not in BUILDERS:
        raise ValueError(f"no probe for construct {construct!r}")
    gen = torch.Generator().manual_seed(int(spec.get("seed", 0)))
    inner, input_shape = BUILDERS[construct](spec["params"], gen)
    _fill_trained(inner, gen, spec.get("values", "trained"))
    reference = _Wrap(inner).eval()
    x32 = torch.randn(input_shape, generator=gen)
    dtype = DTYPES[spec.get("dtype", "float32")]
    # The shipped module is the fp32 one cast the way a recipe casts it (`.to(dtype)` casts
    # parameters and buffers); the reference sees the same, already-rounded input values.
    import copy

    module = copy.deepcopy(reference).to(dtype).eval()
    x = x32.to(dtype)
    return Probe(
        module=module,
        inputs={"x": x},
        reference_module=reference,
        reference_inputs={"x": x.to(torch.float32)},
    )


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
