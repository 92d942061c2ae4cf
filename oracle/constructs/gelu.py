"""GELU, exact (erf) or its tanh approximation (GPT-2 style MLPs, `approximate="tanh"`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, dims

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

APPROXIMATIONS = ("none", "tanh")

# ---- the probe --------------------------------------------------------------------------------


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _Gelu(torch.nn.Module):
        def __init__(self, approximate: str) -> None:
            super().__init__()
            self.approximate = approximate

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.gelu(x, approximate=self.approximate)

    approximate = str(params["approximate"])
    if approximate not in APPROXIMATIONS:
        raise ValueError(f"unknown approximate {approximate!r}")
    shape = [int(d) for d in params["input_shape"]]
    x = torch.randn(shape, generator=gen) * 3.0
    if values == "adversarial":  # far out on both sides, where tanh and erf saturate
        x = x + 30.0 * torch.sign(x) * (torch.rand(shape, generator=gen) > 0.95)
    return p.Built(_Gelu(approximate), {"x": x})


# ---- the detector ------------------------------------------------------------------------------
# aten.gelu.default (neither table decomposes it); its approximation is a keyword of the node,
# which coreai-torch's replace_gelu reads from the node's kwargs.


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    x = node.args[0]
    if not g.is_tensor(x):
        return None
    shape, how = sizes.concrete(x)
    params: dict[str, Any] = {
        "approximate": str(g.arg(node, 1, "approximate", "none")),
        "input_shape": shape,
    }
    dtype = g.probe_dtype(g.val(x).dtype, params)
    return g.Found("gelu", g.with_sizes(params, how), dtype, g.module_path(node))


def label(params: dict[str, Any], short: str) -> str:
    """`gelu tanh @1x361x3072 fp16`."""
    approximate = "erf" if params.get("approximate") == "none" else params.get("approximate")
    return f"gelu {approximate} @{dims(params.get('input_shape'))} {short}"


CONSTRUCT = Construct(
    kind="gelu",
    params=("approximate", "input_shape"),
    build=build,
    readers=(Reader(("aten.gelu.default",), detect),),
    scan=ScanSignature(ops=("gelu",)),
    representative=("input_shape",),
    label=label,
)
