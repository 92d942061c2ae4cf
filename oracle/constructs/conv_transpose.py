"""Transposed convolution (#40: padding and output_padding passed natively in 0.4.2, where 0.4.1
pre-padded the input when output_padding > padding; #79: 0.4.3 rejects output_padding >= stride
when also >= dilation).

A conversion can fail on what consumes the conv, not on the conv alone: 0.4.1's 1-D path reshapes
the output back with a shape it computes at run time, and a `squeeze` of the out-channel axis
after it leaves `shrink_dims` on a dimension the verifier sees as dynamic (apple/coreai-torch #40's
`test_conv_transpose_static_shape_squeeze`). So the probe carries the shape ops that follow the
conv in the traced graph (`consumer`), and the detector records them.
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
    # torch types ConvTranspose1d's sizes as ints; both take the recorded tuples
    cls: Any = {1: torch.nn.ConvTranspose1d, 2: torch.nn.ConvTranspose2d}[dim]
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
    consumer = tuple(params.get("consumer", ()))
    module = _consumed(inner, consumer) if consumer else p.call(inner)
    return p.Built(module, {"x": x}, dynamic=dynamic)


# The shape ops a probe can apply after the conv, in the order the graph applies them: what each
# does to the conv's output y.
CONSUMERS = {
    "squeeze": "y.squeeze(1): drop the out-channel axis (a single output channel)",
    "reshape": "y.reshape(y.shape[0], -1): flatten all but the batch axis",
    "slice": "y[..., :-1]: drop the last sample of the last axis",
}


def _consumed(inner: Any, consumer: tuple[str, ...]) -> Any:
    import torch

    unknown = [op for op in consumer if op not in CONSUMERS]
    if unknown:
        raise ValueError(
            f"conv_transpose consumer {unknown[0]!r} is not one of {', '.join(CONSUMERS)}"
        )

    class Consumed(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = inner

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = self.inner(x)
            for op in consumer:
                if op == "squeeze":
                    y = y.squeeze(1)
                elif op == "reshape":
                    y = y.reshape(y.shape[0], -1)
                else:
                    y = y[..., :-1]
            return y

    return Consumed()


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
    params: dict[str, Any] = {
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
    consumer = _consumer_of(node)
    if consumer:
        params["consumer"] = consumer
    return g.Found("conv_transpose", params, g.dtype(x), g.module_path(node))


# The aten overloads read as each consumer: the shape ops the probe can reproduce.
_CONSUMER_OPS = {
    "aten.squeeze.dim": "squeeze",
    "aten.squeeze.dims": "squeeze",
    "aten.view.default": "reshape",
    "aten.reshape.default": "reshape",
    "aten._unsafe_view.default": "reshape",
    "aten.slice.Tensor": "slice",
}
# How far a chain of shape ops is followed (the #40 case is a squeeze, then a reshape).
_CONSUMER_DEPTH = 2


def _consumer_of(node: Any) -> list[str]:
    """The shape ops the conv's output flows through alone (one user each), in order, while
    the probe can reproduce them: a squeeze of the out-channel axis, a flattening reshape, a
    slice; the chain stops at anything else (an elementwise op, a second user)."""
    from oracle.constructs import _graph as g

    out: list[str] = []
    current = node
    while len(out) < _CONSUMER_DEPTH and len(current.users) == 1:
        (user,) = current.users
        name = g.target_name(user)
        op = _CONSUMER_OPS.get(name)
        if op == "squeeze":
            dims_ = user.args[1] if len(user.args) > 1 else None
            dims_ = list(dims_) if isinstance(dims_, list | tuple) else [dims_]
            if dims_ != [1] or g.shape(current)[1:2] != [1]:
                break  # only the out-channel axis, as the probe squeezes it
        elif op == "reshape":
            shape = g.shape(user)
            if len(shape) != 2 or shape[:1] != g.shape(current)[:1]:
                break  # only a flatten of all but the batch axis
        elif op == "slice":
            dim, start, end = (list(user.args[1:4]) + [None, None, None])[:3]
            rank = len(g.shape(current))
            if dim not in (-1, rank - 1) or start not in (None, 0) or end != -1:
                break  # only dropping the last sample of the last axis
        else:
            break
        out.append(op)
        current = user
    return out


def label(p: dict[str, Any], short: str) -> str:
    return (
        f"ConvTranspose{p.get('dim', '?')}d {p.get('in_channels')}->"
        f"{p.get('out_channels')} k{dims(p.get('kernel'))} s{dims(p.get('stride'))} "
        f"p{dims(p.get('padding', 0))} op{dims(p.get('output_padding', 0))} "
        f"@{dims(p.get('input_shape'))}"
        + "".join(f" .{op}" for op in p.get("consumer", ()))
        + f" {short}"
    )


CONSTRUCT = Construct(
    kind="conv_transpose",
    params=(
        "dim",
        "in_channels",
        "out_channels",
        "kernel",
        "stride",
        "padding",
        "output_padding",
        "dilation",
        "groups",
        "bias",
        "input_shape",
        "dynamic_length",
        "consumer",
    ),
    build=build,
    readers=(Reader(("aten.convolution.default",), detect),),
    scan=ScanSignature(ops=("conv_transpose",)),
    label=label,
)
