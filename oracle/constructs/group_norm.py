"""Group norm (#56)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, arrives_decomposed

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _GroupNorm(torch.nn.Module):
        def __init__(self, gn: torch.nn.GroupNorm) -> None:
            super().__init__()
            self.gn = gn

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.gn(x)

    c = int(params["channels"])
    gn = torch.nn.GroupNorm(
        int(params["num_groups"]),
        c,
        eps=float(params.get("eps", 1e-5)),
        affine=bool(params.get("affine", True)),
    )
    p.norm_affine(gn.weight, gn.bias, gen, values)
    # `length` is one spatial size (a [B, C, L] input) or a list of them ([B, C, H, W] ...).
    length = params.get("length", 16)
    spatial = [int(v) for v in length] if isinstance(length, list | tuple) else [int(length)]
    shape = [int(params.get("batch", 2)), c, *spatial]
    per_channel = [1, c] + [1] * len(spatial)
    x = torch.randn(shape, generator=gen)
    if values != "init":  # per-channel offsets and scales, as activations have
        offset = torch.randn(per_channel, generator=gen) * (
            100.0 if values == "adversarial" else 0.5
        )
        x = offset + p.log_uniform(c, 0.1, 3.0, gen).view(per_channel) * x
    dynamic = p.merge(
        p.dynamic(params, "dynamic_batch", "x", 0, "batch"),
        p.dynamic(params, "dynamic_length", "x", 2, "length"),
    )
    return p.Built(_GroupNorm(gn), {"x": x}, dynamic=dynamic)


# ---- the detector ------------------------------------------------------------------------------


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    # aten.native_group_norm(input, weight, bias, N, C, HxW, group, eps)
    x, weight = node.args[0], node.args[1]
    shape = g.shape(x)
    params = {
        "num_groups": int(node.args[6]),
        "channels": shape[1],
        "batch": shape[0],
        "length": shape[2] if len(shape) == 3 else shape[2:],
        "affine": weight is not None,
        "eps": float(node.args[7]),
        "input_shape": shape,
    }
    return g.Found("group_norm", params, g.dtype(x), g.module_path(node))


CONSTRUCT = Construct(
    kind="group_norm",
    params=(
        "num_groups",
        "channels",
        "batch",
        "length",
        "affine",
        "eps",
        "dynamic_batch",
        "dynamic_length",
    ),
    build=build,
    readers=(Reader(("aten.native_group_norm.default",), detect),),
    scan=ScanSignature(composite="group_norm", fewer=arrives_decomposed("group_norm")),
)
