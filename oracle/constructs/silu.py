"""SiLU, alone or as the gate of a SwiGLU MLP (`silu(gate(x)) * up(x)`, the Llama-family MLP and
a conformer's feed-forward)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, dims

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------
# form "plain": silu(x); form "gated": silu(gate) * up, both of input_shape (the two projections'
# outputs; their linears are the matmul kind's instances).


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _Silu(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.silu(x)

    class _Gated(torch.nn.Module):
        def forward(self, gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:
            return torch.nn.functional.silu(gate) * up

    shape = [int(d) for d in params["input_shape"]]
    x = torch.randn(shape, generator=gen) * 3.0
    if values == "adversarial":  # pre-activations far out on both sides, where silu saturates
        x = x + 30.0 * torch.sign(x) * (torch.rand(shape, generator=gen) > 0.95)
    if params["form"] == "plain":
        return p.Built(_Silu(), {"x": x})
    if params["form"] != "gated":
        raise ValueError(f"unknown form {params['form']!r}")
    return p.Built(_Gated(), {"gate": x, "up": torch.randn(shape, generator=gen)})


# ---- the detector ------------------------------------------------------------------------------
# aten.silu.default, which coreai-torch's table keeps (it lowers it directly). "gated": the silu's
# one user is a product with another tensor of its shape.


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    x = node.args[0]
    if not g.is_tensor(x):
        return None
    shape, how = sizes.concrete(x)
    users = list(node.users)
    gated = (
        len(users) == 1
        and g.target_name(users[0]) == "aten.mul.Tensor"
        and all(g.is_tensor(a) and g.shape(a) == g.shape(node) for a in users[0].args[:2])
    )
    params: dict[str, Any] = {"form": "gated" if gated else "plain", "input_shape": shape}
    dtype = g.probe_dtype(g.val(x).dtype, params)
    return g.Found("silu", g.with_sizes(params, how), dtype, g.module_path(node))


def label(params: dict[str, Any], short: str) -> str:
    """`SwiGLU gate @1x361x4096 fp16`, `silu @1x512x361 fp32`."""
    name = "SwiGLU gate" if params.get("form") == "gated" else "silu"
    return f"{name} @{dims(params.get('input_shape'))} {short}"


CONSTRUCT = Construct(
    kind="silu",
    params=("form", "input_shape"),
    build=build,
    readers=(Reader(("aten.silu.default",), detect),),
    scan=ScanSignature(ops=("silu",)),
    representative=("input_shape",),
    label=label,
)
