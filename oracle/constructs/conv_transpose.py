"""Transposed convolution (#40: padding and output_padding passed natively in 0.4.2, where 0.4.1
pre-padded the input when output_padding > padding; #79: 0.4.3 rejects output_padding >= stride
when also >= dilation).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, dims

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

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
    p.fill_trained(inner, gen, values)
    shape = list(params["input_shape"])
    x = torch.randn(shape, generator=gen)
    # A dynamic length is the last spatial axis (a vocoder's frame axis).
    dynamic = p.dynamic(params, "dynamic_length", "x", len(shape) - 1, "length")
    return p.Built(p.call(inner), {"x": x}, dynamic=dynamic)


# ---- the detector ------------------------------------------------------------------------------


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    # aten.convolution(input, weight, bias, stride, padding, dilation, transposed,
    #                  output_padding, groups)
    args = list(node.args) + [None] * (9 - len(node.args))
    x, w, b, stride, padding, dilation, transposed, output_padding, groups = args[:9]
    if not transposed:
        return None
    wshape = g.shape(w)
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
        "input_shape": g.shape(x),
    }
    return g.Found("conv_transpose", params, g.dtype(x), g.module_path(node))


def label(p: dict[str, Any], short: str) -> str:
    return (f"ConvTranspose{p.get('dim', '?')}d {p.get('in_channels')}->"
            f"{p.get('out_channels')} k{dims(p.get('kernel'))} s{dims(p.get('stride'))} "
            f"p{dims(p.get('padding', 0))} op{dims(p.get('output_padding', 0))} "
            f"@{dims(p.get('input_shape'))} {short}")


CONSTRUCT = Construct(
    kind="conv_transpose",
    params=("dim", "in_channels", "out_channels", "kernel", "stride", "padding",
            "output_padding", "dilation", "groups", "bias", "input_shape", "dynamic_length"),
    build=build,
    readers=(Reader(("aten.convolution.default",), detect),),
    scan=ScanSignature(ops=("conv_transpose",)),
    label=label,
)
