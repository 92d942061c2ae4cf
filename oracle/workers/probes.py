"""The probe engine: build a construct's probe from a plain-data spec, cast it as a recipe does.

Imported by the worker inside converter environments, so it may import torch and nothing of the
project beyond the oracle's own files. The builders are the construct modules'
(`oracle/constructs/<kind>.py`); a probe is built from a plain-data spec, and the same spec yields
the same parameters and inputs in every environment (all environments share one torch). The worker
reports a digest of both so a comparison can prove the two sides converted the same module.

A builder returns the probe in fp32 (the reference form) with its inputs; `build` then casts it
the way a recipe casts a model (`module.to(dtype)` casts parameters and buffers alike) unless the
probe keeps its parameters in another dtype (`param_dtype`).
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from oracle import constructs
from oracle.constructs._probe import (  # noqa: F401 - re-exported for the probe tests
    DTYPES,
    FP16_MAX,
    FP16_TINY,
    INT_MAX,
    INT_MIN,
    Built,
)


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


def builders() -> dict[str, Callable[[dict[str, Any], torch.Generator, str], Built]]:
    """Every construct's probe builder, by kind."""
    return {c.kind: c.build for c in constructs.probed() if c.build is not None}


def build(spec: dict[str, Any]) -> Probe:
    construct = spec["construct"]
    if not constructs.has_probe(construct):
        raise ValueError(f"no probe for construct {construct!r}")
    builder = constructs.get(construct).build
    assert builder is not None
    gen = torch.Generator().manual_seed(int(spec.get("seed", 0)))
    if spec.get("values") == "checkpoint":
        from oracle.infra import checkpoint

        tensors = checkpoint.load(spec["checkpoint"], spec.get("tensors", {}))
        built = builder(spec["params"], gen, "checkpoint", tensors=tensors)
    else:
        built = builder(spec["params"], gen, spec.get("values", "trained"))
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
