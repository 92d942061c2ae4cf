"""atan2 (#23, #35: special values and integer operands)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

ATAN2_SPECIALS = (0.0, -0.0, math.inf, -math.inf, math.nan, 1.0, -1.0, 1e-30)

# The (y, x) pairs apple/coreai-torch's own atan2 tests check (tests/ops/test_ops.py, TestAtan2,
# #23 and #35), re-typed as values: test_x_zero, test_y_zero, test_all_quadrants,
# test_signed_zeros, test_infinities, test_nan_propagation, in that order. None of them puts a
# non-zero y against x = -0.0, which ATAN2_SPECIALS does (0.4.2 and 0.4.3 answer +-pi there,
# torch +-pi/2: evidence/conformance-atan2-specials-0.4.2.json).
_INF, _NAN = math.inf, math.nan
UPSTREAM_PAIRS = (
    (1.0, 0.0),
    (-1.0, 0.0),
    (2.0, 0.0),
    (-2.0, 0.0),
    (0.0, 0.0),
    (0.0, 1.0),
    (0.0, -1.0),
    (0.0, 2.0),
    (0.0, -2.0),
    (1.0, 1.0),
    (1.0, -1.0),
    (-1.0, 1.0),
    (-1.0, -1.0),
    (0.0, 1.0),
    (0.0, -1.0),
    (1.0, 0.0),
    (-1.0, 0.0),
    (-0.0, -1.0),
    (-0.0, 1.0),
    (-0.0, -0.0),
    (0.0, -0.0),
    (_INF, _INF),
    (_INF, -_INF),
    (-_INF, _INF),
    (-_INF, -_INF),
    (_NAN, 0.0),
    (_NAN, -0.0),
    (1.0, _NAN),
    (_NAN, _NAN),
    (0.0, _NAN),
)

# ---- the probe --------------------------------------------------------------------------------


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _Atan2(torch.nn.Module):
        def forward(self, y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
            return torch.atan2(y, x)

    shape = [int(v) for v in params.get("shape", [8, 8])]
    if params.get("operands", "float") == "int32":
        y = p.int_operand(shape, gen, -5, 6)
        x = p.int_operand(shape, gen, -5, 6)
        if values == "adversarial":
            y.view(-1)[:4] = torch.tensor([0, 0, p.INT_MAX["int32"], p.INT_MIN["int32"]])
            x.view(-1)[:4] = torch.tensor([0, -3, p.INT_MIN["int32"], 0])
        return p.Built(_Atan2(), {"y": y, "x": x})
    y = torch.randn(shape, generator=gen) * 2.0
    x = torch.randn(shape, generator=gen) * 2.0
    if params.get("pairs") == "upstream-tests":
        # The upstream tests' pairs, then random values (their test_basic's randn).
        k = min(len(UPSTREAM_PAIRS), y.numel())
        y.view(-1)[:k] = torch.tensor([py for py, _ in UPSTREAM_PAIRS[:k]])
        x.view(-1)[:k] = torch.tensor([px for _, px in UPSTREAM_PAIRS[:k]])
    elif values == "adversarial":
        # Every pair of special values, then random values.
        grid = torch.tensor(ATAN2_SPECIALS)
        ys, xs = torch.meshgrid(grid, grid, indexing="ij")
        k = min(ys.numel(), y.numel())
        y.view(-1)[:k] = ys.reshape(-1)[:k]
        x.view(-1)[:k] = xs.reshape(-1)[:k]
    return p.Built(_Atan2(), {"y": y, "x": x})


# ---- the detector ------------------------------------------------------------------------------


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    y, x = node.args[0], node.args[1]
    shape, how = sizes.concrete(node)
    params: dict[str, Any] = {"shape": shape}
    dtypes = [g.val(t).dtype for t in (y, x) if g.is_tensor(t)]
    if dtypes and not any(d.is_floating_point for d in dtypes):
        params["operands"] = "int32"
        if any(d != torch.int32 for d in dtypes):
            params["tensor_dtype"] = "/".join(g.name(d) for d in dtypes)
        dtype = "float32"
    else:
        dtype = g.probe_dtype(g.val(node).dtype, params)
    return g.Found("atan2", g.with_sizes(params, how), dtype, g.module_path(node))


CONSTRUCT = Construct(
    kind="atan2",
    params=("shape", "operands", "pairs"),
    build=build,
    readers=(Reader(("aten.atan2.default",), detect),),
    scan=ScanSignature(unseen="atan2 lowers to plain elementwise ops; no name survives"),
    representative=("shape",),
    value_params=("pairs",),
)
