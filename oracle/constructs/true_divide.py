"""True division (#32: the result type of a division with fp16 and 0-dim fp32 operands)."""

from __future__ import annotations

import math
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

    class _Divide(torch.nn.Module):
        """`form`: tensor (a / b), true_divide (torch.true_divide(a, b)), div_mode_none
        (torch.div(a, b, rounding_mode=None)), scalar (a / divisor), tensor_0dim_fp32
        (a / torch.tensor(divisor, dtype=float32): a 0-dim fp32 tensor, whatever a's dtype)."""

        def __init__(self, form: str, divisor: float, divisor_dtype: str = "") -> None:
            super().__init__()
            self.form = form
            self.divisor = divisor
            self.divisor_dtype = divisor_dtype

        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            if self.form == "tensor":
                return a / b
            if self.form == "true_divide":
                return torch.true_divide(a, b)
            if self.form == "div_mode_none":
                return torch.div(a, b, rounding_mode=None)
            raise ValueError(self.form)

    class _DivideScalar(_Divide):
        def forward(self, a: torch.Tensor) -> torch.Tensor:  # type: ignore[override]
            if self.form == "scalar" and self.divisor_dtype:
                # a 0-dim tensor of another dtype that takes no part in the result type
                return a / torch.tensor(self.divisor, dtype=p.DTYPES[self.divisor_dtype])
            if self.form == "scalar":
                return a / self.divisor
            if self.form == "tensor_0dim_fp32":
                return a / torch.tensor(self.divisor, dtype=torch.float32)
            raise ValueError(self.form)

    form = params.get("form", "tensor")
    operands = params.get("operands", "int32")
    shape = [int(v) for v in params.get("shape", [4, 16])]
    layout = params.get("item_shape")
    # sizes from .item() in a static graph (sam3's decoder): the operands are built static,
    # then expanded to them inside forward
    built_shape = p.item_static(layout) if layout else shape
    divisor = p.number(params.get("divisor", 7))  # an int stays an int: int / int scalar
    if operands == "int32":
        a = p.int_operand(built_shape, gen, -1000, 1000)
        b = p.int_operand(built_shape, gen, 1, 50) * (p.int_operand(built_shape, gen, 0, 2) * 2 - 1)
        if values == "adversarial":  # int32 extremes; integers beyond fp32's exact range
            a.view(-1)[:6] = torch.tensor(
                [p.INT_MAX["int32"], p.INT_MIN["int32"], 2**24 + 1, -(2**24) - 1, 0, 7],
                dtype=torch.int32,
            )
            b.view(-1)[:6] = torch.tensor([3, -1, 1, 7, -5, -2], dtype=torch.int32)
        if params.get("divide_by_zero"):  # x / 0 -> +-inf, 0 / 0 -> NaN
            b.view(-1)[-3:] = 0
            a.view(-1)[-3:] = torch.tensor([5, -5, 0], dtype=torch.int32)
    elif operands == "float":
        a = torch.randn(built_shape, generator=gen) * 3.0
        b = torch.randn(built_shape, generator=gen).abs() + 0.5
        if values == "adversarial":
            a = p.plant(a, [0.0, -0.0, math.inf, 6e4], gen, 0.1)
            b = p.plant(b, [0.0, -0.0, 1e-4, math.inf], gen, 0.1)
    else:
        raise ValueError(f"unknown operands {operands!r}")
    scalar = form in ("scalar", "tensor_0dim_fp32")
    module = (
        _DivideScalar(form, divisor, params.get("divisor_dtype", ""))
        if scalar
        else _Divide(form, divisor)
    )
    inputs = {"a": a} if scalar else {"a": a, "b": b}
    if layout:
        return p.item_shaped(module, layout, shape, params.get("size_source", "constant"), inputs)
    return p.Built(module, inputs)


# ---- the detector ------------------------------------------------------------------------------
# aten.div.Tensor / div.Scalar / true_divide.Tensor, and div.Tensor_mode with rounding_mode None.
# torch.true_divide exports as div.Tensor: the same graph as `a / b`, so form `tensor`.
# Probe forms: tensor | true_divide | div_mode_none (a and b tensors of one shape), scalar
# (a / a Python number), tensor_0dim_fp32 (a / a 0-dim fp32 tensor). Operands: int32 (both
# integer: the converter narrows int64 to int32) or float (the lowering promotes to the float
# type in every release when either side is float). What the probe cannot express is mapped to
# the form whose lowering is the same:
# - a 0-dim tensor divisor of a wider float type than a float dividend (fp16 / 0-dim fp32):
#   tensor_0dim_fp32 (0.4.1 promotes to the wider type, 0.4.2 to the result's);
# - any other 0-dim divisor: scalar (it does not take part in the result type, as a Python
#   number does not); its value is not in the graph, so the probe's divisor is a stand-in;
# - broadcasting operands: both operands of the output's shape.
# `operand_types` says what the graph holds.

_DIV_FORMS = {
    "aten.div.Tensor": "tensor",
    "aten.div.Scalar": "scalar",
    "aten.true_divide.Tensor": "true_divide",
    "aten.div.Tensor_mode": "div_mode_none",
    "aten.div.Scalar_mode": "scalar",
}


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    name = g.target_name(node)
    if name.endswith("_mode") and g.arg(node, 2, "rounding_mode") is not None:
        return None  # floor / trunc division: not a true division
    a, b = node.args[0], node.args[1]
    if not g.is_tensor(a):
        return None
    a_dtype = g.val(a).dtype
    a_float = a_dtype.is_floating_point
    shape, how = sizes.concrete(node)
    params: dict[str, Any] = {}
    if g.is_tensor(b) and g.val(b).dim() > 0:
        b_dtype = g.val(b).dtype
        form = _DIV_FORMS[name] if _DIV_FORMS[name] != "scalar" else "tensor"
        operands = "float" if a_float or b_dtype.is_floating_point else "int32"
        described = f"{g.name(a_dtype)} / {g.name(b_dtype)}"
    elif g.is_tensor(b):
        b_dtype = g.val(b).dtype
        described = f"{g.name(a_dtype)} / 0-dim {g.name(b_dtype)} tensor"
        operands = "float" if a_float else "int32"
        wider = (
            a_float
            and b_dtype.is_floating_point
            and torch.promote_types(a_dtype, b_dtype) != a_dtype
        )
        form = "tensor_0dim_fp32" if wider else "scalar"
        if not a_float and b_dtype.is_floating_point:
            params["divisor"] = 7.0  # a float divisor (its value is not in the graph)
        if form == "scalar":
            # the probe divides by a 0-dim tensor of this dtype too (sam3: by an int64 size)
            params["divisor_dtype"] = g.name(b_dtype)
    else:  # a Python number, or a SymInt / SymFloat node
        value, value_how = sizes.number(b)
        kind = type(g.val(b)).__name__ if isinstance(b, torch.fx.Node) else type(b).__name__
        described = f"{g.name(a_dtype)} / {kind}"
        form, operands = "scalar", "float" if a_float else "int32"
        if value is not None:
            params["divisor"] = value
            how = g.worst([how, value_how])
        else:
            params["divisor"] = 7.0  # a symbolic float: a float divisor stands in
    params = {
        "form": form,
        "operands": operands,
        "shape": shape,
        **params,
        "operand_types": described,
    }
    g.with_layout(params, node, shape)
    # integer operands: int32 inputs whatever the dtype, the result in torch's default float
    dtype = "float32" if operands == "int32" else g.probe_dtype(g.val(node).dtype, params)
    return g.Found("true_divide", g.with_sizes(params, how), dtype, g.module_path(node))


def label(p: dict[str, Any], short: str) -> str:
    """The form, operands, divisor and shape: instances of one form and dtype differ by the
    others, and a registry regime's id (`bisect --only`) is its holders and this label."""
    form = p.get("form", "tensor")
    by = ""
    if form in ("scalar", "tensor_0dim_fp32"):  # the other forms divide by a tensor operand
        dtype = p.get("divisor_dtype")
        by = f"by a 0-dim {dtype} " if dtype else f"by {p.get('divisor', 7):g} "
    zero = "by-zero " if p.get("divide_by_zero") else ""
    shape = dims(p.get("shape", [4, 16]))
    return f"divide {form} {p.get('operands', 'int32')} operands {by}{zero}@{shape} {short}"


CONSTRUCT = Construct(
    kind="true_divide",
    params=(
        "form",
        "operands",
        "shape",
        "divisor",
        "divide_by_zero",
        "divisor_dtype",
        "item_shape",
        "size_source",
    ),
    build=build,
    readers=(Reader(tuple(_DIV_FORMS), detect),),
    scan=ScanSignature(
        unseen="a division lowers to plain div/cast ops; which operand types it "
        "had is not in the program"
    ),
    representative=("shape",),
    label=label,
)
