"""The asset probe: a small module with the nested hierarchy real recipes have.

A load check asks whether an asset a converter release writes still loads on a runtime. What a
runtime refuses is in the container, not in a lowering: coreai-torch 0.4.0 writes each op's
PyTorch module call stack as an MLIR `fused` location (seen here as soon as an op sits in a
submodule), and real recipes nest modules deeply. So the probe nests blocks `depth` deep,
each a Conv1d and a BatchNorm1d (a composite, so the asset also holds a private graph) around
the next block, and it is cast and exported like the bundle (dtype, pipeline).

Imported by the worker inside converter environments (where `build` needs torch), and by the
main process for its name and parameters only: torch is imported when a probe is built. It is
not a construct (`oracle/constructs/`): no trace detects it; it stands for a bundle's module
hierarchy, not for one of its ops. The constructs it is built of (`HOLDS`) are lowered like any
other, so their records can change its program.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from oracle.workers.probes import Probe

CONSTRUCT = "asset_hierarchy"
DEFAULT_PARAMS: dict[str, Any] = {"depth": 3, "channels": 8, "length": 16}
LABEL = "nested Conv1d+BatchNorm1d blocks"
# The library's constructs its module holds (what their detectors find in its exported graph:
# tests/oracle/workers/test_asset_probe_holds.py): a lowering record naming one can change the
# probe's program (bisection saw #54's fp16 batch norm commit change the fp16 asset probe).
HOLDS: tuple[str, ...] = ("batch_norm",)


def _hierarchy(depth: int, channels: int) -> torch.nn.Module:
    import torch

    class Block(torch.nn.Module):
        """conv -> batch norm -> (inner block, residual) -> relu."""

        def __init__(self, inner: torch.nn.Module | None) -> None:
            super().__init__()
            self.conv = torch.nn.Conv1d(channels, channels, 3, padding=1)
            self.norm = torch.nn.BatchNorm1d(channels)
            self.inner = inner

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = self.norm(self.conv(x))
            if self.inner is not None:
                x = x + self.inner(x)
            return torch.relu(x)

    inner: torch.nn.Module | None = None
    for _ in range(depth):
        inner = Block(inner)
    assert inner is not None
    # The outermost level is a Sequential, as a recipe's model container often is.
    return torch.nn.Sequential(inner)


def build(spec: dict[str, Any]) -> Probe:
    """The probe in the spec's dtype, with an fp32 twin (parameters as cast) for reference."""
    import torch

    from oracle.constructs._probe import DTYPES, fill_trained
    from oracle.workers.probes import Probe

    params = {**DEFAULT_PARAMS, **spec.get("params", {})}
    depth, channels, length = (int(params[k]) for k in ("depth", "channels", "length"))
    if depth < 1:
        raise ValueError("an asset probe needs depth >= 1: its ops must sit in submodules")
    gen = torch.Generator().manual_seed(int(spec.get("seed", 0)))
    original = _hierarchy(depth, channels).eval()
    fill_trained(original, gen, spec.get("values", "trained"))
    with torch.no_grad():
        for module in original.modules():
            if isinstance(module, torch.nn.BatchNorm1d):
                # _hierarchy's norms track running statistics: these are never None
                assert module.running_mean is not None and module.running_var is not None
                module.running_mean.copy_(torch.randn(channels, generator=gen) * 0.2)
                module.running_var.copy_(0.5 + torch.rand(channels, generator=gen))
    dtype = DTYPES[spec.get("dtype", "float32")]
    module = copy.deepcopy(original).to(dtype).eval()
    reference = copy.deepcopy(module).float().eval()
    x = torch.randn([1, channels, length], generator=gen).to(dtype)
    return Probe(module, {"x": x}, reference, {"x": x.float()}, {}, original)
