"""Floor division: `torch.div(a, b, rounding_mode="floor")` and `a // b` (sam3's sine position
embeddings: an fp16 arange divided by 2). Its lowering lives in the same function as the true
division's `div.Tensor_mode`, which #32 rewrote.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _FloorDivide(torch.nn.Module):
        """torch.div(a, b, rounding_mode="floor") of two tensors."""

        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.div(a, b, rounding_mode="floor")

    class _FloorDivideScalar(torch.nn.Module):
        """torch.div(a, divisor, rounding_mode="floor") by a Python number."""

        def __init__(self, divisor: float) -> None:
            super().__init__()
            self.divisor = divisor

        def forward(self, a: torch.Tensor) -> torch.Tensor:
            return torch.div(a, self.divisor, rounding_mode="floor")

    form = params.get("form", "scalar")
    operands = params.get("operands", "float")
    shape = [int(v) for v in params.get("shape", [4, 16])]
    divisor = p.number(params.get("divisor", 2))  # an int stays an int, as in the graph
    if operands == "int32":
        a = p.int_operand(shape, gen, -1000, 1000)
        b = p.int_operand(shape, gen, 1, 50) * (p.int_operand(shape, gen, 0, 2) * 2 - 1)
        if values == "adversarial":  # int32 extremes and exact multiples of negative divisors
            a.view(-1)[:5] = torch.tensor(
                [p.INT_MAX["int32"], p.INT_MIN["int32"], -7, 7, 0], dtype=torch.int32
            )
            b.view(-1)[:5] = torch.tensor([3, -1, 2, -2, -5], dtype=torch.int32)
    elif operands == "float":
        # Trained-looking: integers and fractions of both signs, where floor and trunc differ.
        a = torch.randn(shape, generator=gen) * 40.0
        b = (torch.rand(shape, generator=gen) * 4.0 + 0.5) * (
            torch.randint(0, 2, shape, generator=gen) * 2 - 1
        )
        if values == "adversarial":
            # exact multiples, signed zeros, fp16's coarse range (spacing 2 above 2048), inf
            a = p.plant(a, [4.0, -4.0, 0.0, -0.0, 3001.0, -3001.0, 65504.0, math.inf], gen, 0.2)
            b = p.plant(b, [2.0, -2.0, 1e-3, -1e-3], gen, 0.1)
    else:
        raise ValueError(f"unknown operands {operands!r}")
    if form == "scalar":
        return p.Built(_FloorDivideScalar(divisor), {"a": a})
    if form != "tensor":
        raise ValueError(f"unknown form {form!r}")
    return p.Built(_FloorDivide(), {"a": a, "b": b})


# ---- the detector ------------------------------------------------------------------------------
# aten.div.Tensor_mode / div.Scalar_mode with rounding_mode "floor", and aten.floor_divide.
# Forms: scalar (a / a Python number; a 0-dim tensor divisor is read as one, its value is not in
# the graph) or tensor (a tensor divisor; broadcasting operands become both of the output's
# shape). Truncating division (rounding_mode "trunc") has its own lowering path and is not this
# construct; no bundle holds one.


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    name = g.target_name(node)
    if name.startswith("aten.div.") and g.arg(node, 2, "rounding_mode") != "floor":
        return None
    a, b = node.args[0], node.args[1]
    if not g.is_tensor(a):
        return None
    a_dtype = g.val(a).dtype
    shape, how = sizes.concrete(node)
    params: dict[str, Any] = {}
    if g.is_tensor(b) and g.val(b).dim() > 0:
        form = "tensor"
        operands = (
            "float" if a_dtype.is_floating_point or g.val(b).dtype.is_floating_point else "int32"
        )
        described = f"{g.name(a_dtype)} // {g.name(g.val(b).dtype)}"
    elif g.is_tensor(b):
        form, operands = "scalar", "float" if a_dtype.is_floating_point else "int32"
        described = f"{g.name(a_dtype)} // 0-dim {g.name(g.val(b).dtype)} tensor"
        params["divisor"] = 2  # a stand-in: a tensor's value is not in the graph
    else:
        value, value_how = sizes.number(b)
        kind = type(g.val(b)).__name__ if isinstance(b, torch.fx.Node) else type(b).__name__
        form, operands = "scalar", "float" if a_dtype.is_floating_point else "int32"
        described = f"{g.name(a_dtype)} // {kind}"
        params["divisor"] = value if value is not None else 2
        if value is not None:
            how = g.worst([how, value_how])
    params = {
        "form": form,
        "operands": operands,
        "shape": shape,
        **params,
        "operand_types": described,
    }
    dtype = "float32" if operands == "int32" else g.probe_dtype(g.val(node).dtype, params)
    return g.Found("floor_divide", g.with_sizes(params, how), dtype, g.module_path(node))


def label(p: dict[str, Any], short: str) -> str:
    by = f" by {p['divisor']}" if p.get("form", "scalar") == "scalar" and "divisor" in p else ""
    return f"floor divide {p.get('form', 'scalar')}{by} {p.get('operands', 'float')} {short}"


CONSTRUCT = Construct(
    kind="floor_divide",
    params=("form", "operands", "shape", "divisor"),
    build=build,
    readers=(
        Reader(
            (
                "aten.div.Tensor_mode",
                "aten.div.Scalar_mode",
                "aten.floor_divide.default",
                "aten.floor_divide.Scalar",
            ),
            detect,
        ),
    ),
    scan=ScanSignature(
        unseen="floor divisions also come from shape arithmetic and pooling "
        "lowerings; a count of floor_divide ops is not this construct's"
    ),
    representative=("shape",),
    label=label,
)
