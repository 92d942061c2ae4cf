"""select on a dynamic dim (#56)."""

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

    class _Select(torch.nn.Module):
        def __init__(self, dim: int, index: int) -> None:
            super().__init__()
            self.dim = dim
            self.index = index

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x.select(self.dim, self.index)

    shape = [
        int(params.get("batch", 2)),
        int(params.get("length", 12)),
        int(params.get("channels", 8)),
    ]
    dim = int(params.get("dim", 1))
    x = torch.randn(shape, generator=gen)
    dynamic = p.dynamic(params, "dynamic_length", "x", dim % 3, "length")
    return p.Built(_Select(dim, int(params.get("index", -1))), {"x": x}, dynamic=dynamic)


# ---- the detector ------------------------------------------------------------------------------
# Only a select whose selected dim is symbolic is this construct (the index then resolves at run
# time from the dim's size); on a static dim the converter resolves the index at conversion in
# every release, so static graphs have none to record. A SymInt index is not recorded (no
# release lowers it). The probe selects dim 1 of [batch, length, channels]: batch = the sizes
# before the selected dim, channels = those after.


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    x, dim, index = node.args[0], int(node.args[1]), node.args[2]
    if not g.is_tensor(x) or not isinstance(index, int):
        return None
    raw = list(g.val(x).shape)
    d = dim % len(raw)
    if not g.is_symbolic(raw[d]):
        return None
    shape, how = sizes.concrete(x)
    length = shape[d]
    need = -index if index < 0 else index + 1
    params: dict[str, Any] = {
        "batch": max(1, g.prod(shape[:d])),
        "length": length,
        "channels": max(1, g.prod(shape[d + 1 :])),
        "dim": 1,
        "index": index,
        "dynamic_length": g.size_range(raw[d], length, at_least=max(2, need)),
        "input_shape": shape,
        "graph_dim": dim,
    }
    dtype = g.probe_dtype(g.val(x).dtype, params)
    return g.Found("select_dynamic", g.with_sizes(params, how), dtype, g.module_path(node))


CONSTRUCT = Construct(
    kind="select_dynamic",
    params=("batch", "length", "channels", "dim", "index", "dynamic_length"),
    build=build,
    readers=(Reader(("aten.select.int",), detect),),
    scan=ScanSignature(
        unseen="a select is a plain slice op; whether its dim was dynamic is not named"
    ),
    representative=("input_shape", "batch", "length", "channels", "graph_dim", "dynamic_length"),
)
