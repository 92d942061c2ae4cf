"""Softmax over one dim, in the operand's dtype or upcast to fp32 and cast back (what transformers'
attention does in an fp16 model)."""

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

    class _Softmax(torch.nn.Module):
        def __init__(self, dim: int, upcast: bool) -> None:
            super().__init__()
            self.dim = dim
            self.upcast = upcast

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.upcast:  # the operand's dtype is read at export: the probe's spec dtype
                return torch.softmax(x.float(), self.dim).to(x.dtype)
            return torch.softmax(x, self.dim)

    shape = [int(v) for v in params["input_shape"]]
    x = torch.randn(shape, generator=gen) * 3.0
    if values == "adversarial":  # attention logits: a few large scores dominate each row
        x = x + 40.0 * (torch.rand(shape, generator=gen) > 0.9)
    module = _Softmax(int(params["dim"]), bool(params.get("upcast", False)))
    return p.Built(module, {"x": x})


# ---- the detector ------------------------------------------------------------------------------
# aten._softmax(x, dim, half_to_float) after the decompositions; softmax.int and _safe_softmax
# where a table keeps them. `upcast`: the operand is a cast to fp32 of a lower float (x.float()
# or softmax(..., dtype=torch.float32) in an fp16 model); the instance's dtype is then the cast's
# source, so the probe is built in that dtype and casts up itself.


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    x = node.args[0]
    if not g.is_tensor(x):
        return None
    shape, how = sizes.concrete(x)
    dim = int(g.arg(node, 1, "dim", -1))
    params: dict[str, Any] = {"input_shape": shape, "dim": dim, "upcast": False}
    x_dtype = g.val(x).dtype
    dtype = g.probe_dtype(x_dtype, params)
    if (
        x_dtype == torch.float32
        and g.target_name(x) == "aten._to_copy.default"
        and g.is_tensor(x.args[0])
        and g.val(x.args[0]).dtype in (torch.float16, torch.bfloat16)
    ):
        params["upcast"] = True
        dtype = g.name(g.val(x.args[0]).dtype)
    if g.target_name(node) == "aten._softmax.default" and bool(g.arg(node, 2, "half_to_float")):
        params["half_to_float"] = True  # the probe casts instead: the closest it can express
    return g.Found("softmax", g.with_sizes(params, how), dtype, g.module_path(node))


def label(params: dict[str, Any], short: str) -> str:
    """`softmax dim=-1 fp32-upcast @1x8x361x361 fp16`."""
    upcast = " fp32-upcast" if params.get("upcast") else ""
    return f"softmax dim={params.get('dim')}{upcast} @{dims(params.get('input_shape'))} {short}"


CONSTRUCT = Construct(
    kind="softmax",
    params=("input_shape", "dim", "upcast"),
    build=build,
    readers=(
        Reader(("aten._softmax.default", "aten.softmax.int", "aten._safe_softmax.default"), detect),
    ),
    scan=ScanSignature(
        unseen="a scaled-dot-product attention lowers to softmax ops of its own; a count of "
        "softmax ops in a program does not tell a bundle's softmax from an attention's"
    ),
    representative=("input_shape",),
    label=label,
)
