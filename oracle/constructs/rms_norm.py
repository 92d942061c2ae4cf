"""RMSNorm as transformers writes it (LlamaRMSNorm and its kin): `x * rsqrt(mean(x^2, -1) + eps)`,
over an fp32 upcast of an fp16/bf16 input and cast back, with or without a weight."""

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

    class _RMSNorm(torch.nn.Module):
        def __init__(self, size: int, eps: float, upcast: bool, weight: bool) -> None:
            super().__init__()
            self.eps = eps
            self.upcast = upcast
            self.weight = torch.nn.Parameter(torch.ones(size)) if weight else None

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            h = x.float() if self.upcast else x  # the input's dtype is read at export
            h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
            h = h.to(x.dtype)
            return h if self.weight is None else self.weight * h

    shape = [int(d) for d in params["input_shape"]]
    module = _RMSNorm(shape[-1], float(params["eps"]), bool(params["upcast"]), params["weight"])
    if module.weight is not None:
        p.norm_affine(module.weight, None, gen, values)
    x = torch.randn(shape, generator=gen)
    if values == "adversarial":  # a residual stream's outlier features: squares beyond fp16
        x = x + 300.0 * (torch.rand(shape, generator=gen) > 0.99)
    return p.Built(module, {"x": x})


# ---- the detector ------------------------------------------------------------------------------
# From the rsqrt: rsqrt(add(mean.dim(pow(x, 2), [-1], keepdim), eps)), multiplied into x; x is an
# fp32 cast of a lower float where the model upcasts ("upcast", the instance's dtype is then the
# cast's source); "weight": the normalised result (cast back or not) is multiplied by a parameter.


def _one_user(node: Any, target: str) -> Any:
    from oracle.constructs import _graph as g

    users = [u for u in node.users if g.target_name(u) == target]
    return users[0] if len(users) == 1 else None


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    add = node.args[0]
    if g.target_name(add) not in ("aten.add.Tensor", "aten.add.Scalar"):
        return None
    mean, eps = add.args[:2]
    if g.target_name(mean) != "aten.mean.dim" or not isinstance(eps, int | float):
        return None
    if [int(d) for d in mean.args[1]] not in ([-1], [len(g.shape(mean)) - 1]):
        return None
    square = mean.args[0]
    if g.target_name(square) != "aten.pow.Tensor_Scalar" or square.args[1] != 2:
        return None
    x = square.args[0]
    normed = _one_user(node, "aten.mul.Tensor")
    if normed is None or x not in normed.args[:2]:
        return None
    params: dict[str, Any] = {"upcast": False}
    source = x
    if (
        g.target_name(x) == "aten._to_copy.default"
        and g.val(x).dtype == torch.float32
        and g.is_tensor(x.args[0])
        and g.val(x.args[0]).dtype in (torch.float16, torch.bfloat16)
    ):
        params["upcast"] = True
        source = x.args[0]
    shape, how = sizes.concrete(source)
    back = _one_user(normed, "aten._to_copy.default")
    scaled = _one_user(back if back is not None else normed, "aten.mul.Tensor")
    params.update(
        input_shape=shape,
        eps=float(eps),
        weight=scaled is not None and any(g.is_state(a) for a in scaled.args[:2]),
    )
    dtype = g.probe_dtype(g.val(source).dtype, params)
    return g.Found("rms_norm", g.with_sizes(params, how), dtype, g.module_path(node))


def label(params: dict[str, Any], short: str) -> str:
    """`RMSNorm fp32-upcast eps=1e-06 @1x32x2048 fp16`."""
    upcast = " fp32-upcast" if params.get("upcast") else ""
    weight = "" if params.get("weight") else " no-weight"
    eps = params.get("eps")
    shown = f"{eps:g}" if isinstance(eps, int | float) else "?"
    return f"RMSNorm{upcast}{weight} eps={shown} @{dims(params.get('input_shape'))} {short}"


CONSTRUCT = Construct(
    kind="rms_norm",
    params=("input_shape", "eps", "upcast", "weight"),
    build=build,
    readers=(Reader(("aten.rsqrt.default",), detect),),
    scan=ScanSignature(
        unseen="an RMSNorm lowers to plain ops (pow, reduce_mean, add, rsqrt, mul) that a scan "
        "does not tell apart from any other arithmetic"
    ),
    representative=("input_shape",),
    label=label,
)
