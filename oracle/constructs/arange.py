"""arange, float or integer (#25, #27: the float-dtype path and the si32 path of integer bounds).

The kind was `arange_float` until integer aranges were recorded too: #27 gates the si32
path on every operand being an integer, so an integer arange is what that gate keeps, and a later
rewrite of arange operand casting touches both.
"""

from __future__ import annotations

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

    class _Arange(torch.nn.Module):
        """x + arange(start, end, step, dtype): the arange's dtype is `input` (x's), a named dtype,
        or absent (torch's default for the bounds: int64 for integers, fp32 for a float)."""

        def __init__(
            self, start: float, end: float, step: float, dtype: str | None, end_from_input: bool
        ) -> None:
            super().__init__()
            self.start, self.end, self.step = start, end, step
            self.dtype = dtype
            self.end_from_input = end_from_input

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.dtype == "input":
                dtype: torch.dtype | None = x.dtype
            else:
                dtype = p.DTYPES[self.dtype] if self.dtype else None
            if self.end_from_input:
                # the end is x's dynamic length, a SymInt the converter reads off x's shape
                return torch.arange(self.start, x.shape[1], self.step, dtype=dtype)
            return x + torch.arange(self.start, self.end, self.step, dtype=dtype)

    class _ArangeItem(_Arange):
        """x + arange(start, h, step, dtype) where h is `.item()` of a [1, 2] size tensor (a
        constant made in forward, or the input `hw`), pinned as a product (sam3's decoder)."""

        def forward(self, x: torch.Tensor, hw: torch.Tensor | None = None) -> torch.Tensor:
            dtype = (
                x.dtype if self.dtype == "input" else (p.DTYPES[self.dtype] if self.dtype else None)
            )
            h, _w = p.item_sizes((int(self.end), int(self.end)), hw)
            return x + torch.arange(self.start, h, self.step, dtype=dtype)

    start, end = p.number(params.get("start", 0)), p.number(params["end"])
    step = p.number(params.get("step", 1))
    source = params.get("end_source", "")
    if source in ("constant", "data"):
        # the end is .item() of a size tensor in a static graph: the probe reads it so too
        inputs = {"x": torch.randn([int(params.get("batch", 1)), 1], generator=gen)}
        if source == "data":
            inputs["hw"] = torch.tensor([[int(end), int(end)]], dtype=torch.long)
        return p.Built(
            _ArangeItem(start, end, step, params.get("arange_dtype", "input"), False),
            inputs,
            fixed_dtype=("hw",),
        )
    from_input = source == "input"
    n = int(end) if from_input else len(torch.arange(start, end, step))
    x = torch.randn([int(params.get("batch", 1)), n], generator=gen)
    dynamic = {"x": {1: ("length", 1, max(64, 2 * n))}} if from_input else {}
    return p.Built(
        _Arange(start, end, step, params.get("arange_dtype", "input"), from_input),
        {"x": x},
        dynamic=dynamic,
    )


# ---- the detector ------------------------------------------------------------------------------
# Every arange, whatever its result type: a float dtype argument (arange_dtype names it), float
# bounds without one (arange_dtype "": torch's default, float32), or an integer arange (int64 by
# default, arange_dtype ""; or a named integer dtype). The probe adds the arange to a float input,
# so an integer arange's probe is float32 and `tensor_dtype` says what the graph holds; what the
# arange feeds in the bundle is not recorded. Symbolic bounds (a dynamic size, an .item()) are
# resolved to a value and `sizes` says so: the probe's bounds are constants, except an end that is
# a dynamic input dimension (`end_source = "input"`), which the probe reads off its input's
# shape. torch.export keeps aranges of static bounds as nodes (it does not fold them).

INTEGER_DTYPES = ("int64", "int32")


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    val = g.val(node)
    if not isinstance(val, torch.Tensor):
        return None
    name = g.target_name(node)
    if name == "aten.arange.default":
        bounds = [0, node.args[0], 1]
    elif name == "aten.arange.start":
        bounds = [node.args[0], node.args[1], 1]
    else:
        bounds = [node.args[0], node.args[1], g.arg(node, 2, "step", 1)]
    values, hows = [], []
    for b in bounds:
        v, h = sizes.number(b)
        values.append(g.FALLBACK_SIZE if v is None else v)
        hows.append(h)
    params: dict[str, Any] = {"start": values[0], "end": values[1], "step": values[2]}
    if g.is_symbolic(bounds[1]):
        # "input": the end is a dynamic input dimension, the program reads it off the input's
        # shape (get_shape, then a slice and a cast; #56 changed that cast); "constant" or
        # "data": `.item()` of a size tensor in a static graph (sam3's decoder)
        params["end_source"] = g.size_source(bounds[1])
    arg = node.kwargs.get("dtype")
    params["arange_dtype"] = g.name(arg) if arg is not None else ""
    dtype = g.probe_dtype(val.dtype, params)
    if params["arange_dtype"] not in ("",) + g.PROBE_DTYPES + INTEGER_DTYPES:
        params["arange_dtype"] = dtype
    return g.Found("arange", g.with_sizes(params, g.worst(hows)), dtype, g.module_path(node))


CONSTRUCT = Construct(
    kind="arange",
    params=("start", "end", "step", "arange_dtype", "batch", "end_source"),
    build=build,
    readers=(
        Reader(("aten.arange.default", "aten.arange.start", "aten.arange.start_step"), detect),
    ),
    scan=ScanSignature(unseen="an arange of static bounds is folded into a constant"),
)
