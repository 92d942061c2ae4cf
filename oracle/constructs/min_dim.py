"""min along a dim, its indices (#43: the argmin of integer operands)."""

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

    class _MinDim(torch.nn.Module):
        def __init__(self, dim: int, keepdim: bool, int_dtype: torch.dtype | None) -> None:
            super().__init__()
            self.dim = dim
            self.keepdim = keepdim
            self.int_dtype = int_dtype

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.int_dtype is not None and self.int_dtype != x.dtype:
                x = x.to(self.int_dtype)  # graph inputs are int32; the operand is narrower
            # The argmin is what #43 changed (the values are a reduce_min either way). One output:
            # a probe's outputs are matched to the reference by position.
            return torch.min(x, self.dim, keepdim=self.keepdim).indices

    shape = [int(v) for v in params.get("shape", [4, 16])]
    dim = int(params.get("dim", -1))
    int_name = params.get("int_dtype")  # int8 | int32 | absent: float
    rows = shape.copy()
    axis = dim % len(shape)
    n = shape[axis]
    # One minimum per row, at a random position, every other value above it (no ties).
    if int_name:
        lo, hi = p.INT_MIN[int_name], p.INT_MAX[int_name]
        x = p.int_operand(shape, gen, max(lo + 1, -100), min(hi, 100))
        minimum: float = lo if values == "adversarial" else max(lo + 1, -100) - 1
    else:
        x = torch.randn(shape, generator=gen) * 3.0
        minimum = -math.inf if values == "adversarial" else -50.0
    rows[axis] = 1
    where = torch.randint(0, n, rows, generator=gen)
    x = x.scatter(axis, where, torch.full(rows, minimum, dtype=x.dtype))
    module = _MinDim(
        dim, bool(params.get("keepdim", False)), p.DTYPES[int_name] if int_name else None
    )
    return p.Built(module, {"x": x})


# ---- the detector ------------------------------------------------------------------------------
# int_dtype: int8 or int32 (every other integer type: int32, the converter's width for int64);
# absent for a float operand.


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    x = node.args[0]
    if not g.is_tensor(x):
        return None
    shape, how = sizes.concrete(x)
    params: dict[str, Any] = {
        "shape": shape,
        "dim": int(g.arg(node, 1, "dim", 0)),
        "keepdim": bool(g.arg(node, 2, "keepdim", False)),
    }
    x_dtype = g.val(x).dtype
    if x_dtype.is_floating_point:
        dtype = g.probe_dtype(x_dtype, params)
    else:
        params["int_dtype"] = "int8" if x_dtype == torch.int8 else "int32"
        if x_dtype not in (torch.int8, torch.int32):
            params["tensor_dtype"] = g.name(x_dtype)
        dtype = "float32"
    return g.Found("min_dim", g.with_sizes(params, how), dtype, g.module_path(node))


CONSTRUCT = Construct(
    kind="min_dim",
    params=("int_dtype", "shape", "dim", "keepdim"),
    build=build,
    readers=(Reader(("aten.min.dim",), detect),),
    scan=ScanSignature(
        unseen="min.dim lowers to plain reduce_min/argmin ops, as other reductions do"
    ),
    representative=("shape",),
)
