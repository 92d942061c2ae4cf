"""GLU, a conformer convolution module's gate (`F.glu(pointwise_conv(x), dim=1)`, `nn.GLU`): the
first half of `dim` times the sigmoid of the second. No converter table keeps it whole: torch's
decomposition slices the two halves, and computes in fp32 over a cast of an fp16/bf16 input,
cast back (`pw_cast_for_opmath`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, dims

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------
# F.glu over `dim` (as the graph holds it, non-negative) of an input of input_shape; the casts
# around it are torch's decomposition's, so the probe writes none.


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _Glu(torch.nn.Module):
        def __init__(self, dim: int) -> None:
            super().__init__()
            self.dim = dim

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.glu(x, dim=self.dim)

    shape = [int(d) for d in params["input_shape"]]
    dim = int(params["dim"])
    if not 0 <= dim < len(shape) or shape[dim] % 2:
        raise ValueError(f"dim {dim} of {shape} is not an even dimension")
    x = torch.randn(shape, generator=gen) * 3.0
    if values == "adversarial":  # gates far out on both sides, where the sigmoid saturates
        x = x + 30.0 * torch.sign(x) * (torch.rand(shape, generator=gen) > 0.95)
    return p.Built(_Glu(dim), {"x": x})


# ---- the detector ------------------------------------------------------------------------------
# From the sigmoid: sigmoid(slice(src, dim, c, 2c)) multiplied with slice(src, dim, 0, c), both
# halves of one tensor whose `dim` is 2c; src is the input or its fp32 cast (the instance's dtype
# is then the cast's source). A sigmoid of anything else (a gate written another way, a speaker
# head) is no GLU.


def _half(node: Any) -> tuple[Any, int, int, int] | None:
    """(source, dim, start, end) of a slice with unit step, or None."""
    from oracle.constructs import _graph as g

    if g.target_name(node) != "aten.slice.Tensor" or len(node.args) < 4:
        return None
    source, dim, start, end = node.args[:4]
    step = node.args[4] if len(node.args) > 4 else 1
    if not all(isinstance(v, int) for v in (dim, start, end)) or step != 1:
        return None
    rank = len(g.shape(source))
    return source, dim + rank if dim < 0 else dim, start, end


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    gate = _half(node.args[0])
    users = list(node.users)
    if gate is None or len(users) != 1 or g.target_name(users[0]) != "aten.mul.Tensor":
        return None
    product = users[0]
    others = [a for a in product.args[:2] if a is not node]
    value = _half(others[0]) if len(others) == 1 else None
    if value is None:
        return None
    src, dim, start, end = gate
    if value != (src, dim, 0, start) or end != 2 * start or g.shape(src)[dim] != end:
        return None
    source = src
    if (
        g.target_name(src) == "aten._to_copy.default"
        and g.val(src).dtype == torch.float32
        and g.is_tensor(src.args[0])
        and g.val(src.args[0]).dtype in (torch.float16, torch.bfloat16)
    ):
        source = src.args[0]
    shape, how = sizes.concrete(source)
    params: dict[str, Any] = {"dim": dim, "input_shape": shape}
    dtype = g.probe_dtype(g.val(source).dtype, params)
    return g.Found("glu", g.with_sizes(params, how), dtype, g.module_path(node))


def label(params: dict[str, Any], short: str) -> str:
    """`GLU dim=1 @1x2048x361 fp16`."""
    return f"GLU dim={params.get('dim')} @{dims(params.get('input_shape'))} {short}"


CONSTRUCT = Construct(
    kind="glu",
    params=("dim", "input_shape"),
    build=build,
    readers=(Reader(("aten.sigmoid.default",), detect),),
    scan=ScanSignature(
        unseen="a GLU arrives decomposed (slice, sigmoid, mul) and lowers to ops a scan does not "
        "tell apart from any other gate"
    ),
    representative=("input_shape",),
    label=label,
)
