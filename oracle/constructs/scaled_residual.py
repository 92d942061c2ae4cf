"""A residual added at a constant scale, `x + scale * f(x)`: a conformer's macaron feed-forward
half-step (`x + 0.5 * feed_forward(norm(x))`, twice in every FastConformer layer). The graph is
the same two ops wherever a tensor is added to a constant multiple of another: sam3's 14
instances are its DETR box conversion (`x_c + 0.5 * w`), not a residual; the probe holds them
as faithfully, the name says what the conformers' are."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, dims

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------
# x (the residual stream) plus scale times update (the branch's output), both of input_shape.


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _ScaledResidual(torch.nn.Module):
        def __init__(self, scale: float) -> None:
            super().__init__()
            self.scale = scale

        def forward(self, x: torch.Tensor, update: torch.Tensor) -> torch.Tensor:
            return x + self.scale * update

    shape = [int(d) for d in params["input_shape"]]
    x = torch.randn(shape, generator=gen) * 4.0
    update = torch.randn(shape, generator=gen)
    if values == "adversarial":  # a residual stream's outlier features, far beyond the update
        x = x + 3e4 * torch.sign(x) * (torch.rand(shape, generator=gen) > 0.99)
        update = update + 1e4 * (torch.rand(shape, generator=gen) > 0.99)
    return p.Built(_ScaledResidual(float(params["scale"])), {"x": x, "update": update})


# ---- the detector ------------------------------------------------------------------------------
# add.Tensor(x, mul.Tensor(update, scale)) in either order, scale a Python number and x and the
# product of one shape (no broadcast, no alpha). A residual added unscaled, or scaled by a
# tensor (a layer scale's parameter), is not this construct; nor is a sum of two constant
# products (`a * s + b * t`), whose probe would hold one product fewer than the graph. Whether
# the tensor is the branch's input is not asked: the probe holds the two ops whatever the tensor
# is (transformers' relative-position scores, `q @ k * s + masked(bd * s)`, are one).


def _scaled(x: Any) -> bool:
    """Whether x is a product of a tensor and a Python number."""
    from oracle.constructs import _graph as g

    if g.target_name(x) != "aten.mul.Tensor":
        return False
    scale = x.args[1]
    return isinstance(scale, int | float) and not isinstance(scale, bool)


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    if node.kwargs.get("alpha", 1) != 1 or len(node.args) != 2:
        return None
    if all(_scaled(a) for a in node.args):
        return None
    for product, x in (node.args, node.args[::-1]):
        if g.target_name(product) != "aten.mul.Tensor" or not g.is_tensor(x):
            continue
        update, scale = product.args[:2]
        if not _scaled(product):
            continue
        if not g.is_tensor(update) or not g.shape(x) == g.shape(update) == g.shape(node):
            continue
        shape, how = sizes.concrete(x)
        params: dict[str, Any] = {"input_shape": shape, "scale": float(scale)}
        dtype = g.probe_dtype(g.val(x).dtype, params)
        return g.Found("scaled_residual", g.with_sizes(params, how), dtype, g.module_path(node))
    return None


def label(params: dict[str, Any], short: str) -> str:
    """`x + 0.5 * f(x) @1x361x1024 fp16`."""
    scale = params.get("scale")
    shown = f"{scale:g}" if isinstance(scale, int | float) else "?"
    return f"x + {shown} * f(x) @{dims(params.get('input_shape'))} {short}"


CONSTRUCT = Construct(
    kind="scaled_residual",
    params=("input_shape", "scale"),
    build=build,
    readers=(Reader(("aten.add.Tensor",), detect),),
    scan=ScanSignature(
        unseen="a scaled residual lowers to a multiply and an add that a scan does not tell apart "
        "from any other arithmetic"
    ),
    representative=("input_shape",),
    label=label,
)
