"""masked_scatter (#16)."""

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

    class _MaskedScatter(torch.nn.Module):
        """x.masked_scatter(mask, source), the mask computed from x: elementwise (x > 0) or one per
        row broadcast over the row (`broadcast`)."""

        def __init__(self, broadcast: bool) -> None:
            super().__init__()
            self.broadcast = broadcast

        def forward(self, x: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
            mask = x.mean(dim=-1, keepdim=True) > 0 if self.broadcast else x > 0
            return x.masked_scatter(mask, source)

    shape = [int(v) for v in params.get("shape", [4, 16])]
    x = torch.randn(shape, generator=gen)
    source = torch.randn(shape, generator=gen) * 10.0
    if values == "adversarial":  # all-true and all-false rows
        x[0] = x[0].abs() + 0.1
        x[-1] = -x[-1].abs() - 0.1
    module = _MaskedScatter(bool(params.get("broadcast", False)))
    dynamic = p.merge(
        p.dynamic(params, "dynamic_batch", "x", 0, "batch"),
        p.dynamic(params, "dynamic_batch", "source", 0, "batch"),
    )
    return p.Built(module, {"x": x, "source": source}, dynamic=dynamic)


# ---- the detector ------------------------------------------------------------------------------


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    x, mask = node.args[0], node.args[1]
    shape, how = sizes.concrete(x)
    mask_shape, _ = sizes.concrete(mask)
    params: dict[str, Any] = {"shape": shape}
    if mask_shape != shape:
        params["broadcast"] = True
        params["mask_shape"] = mask_shape
    raw = list(g.val(x).shape)
    if raw and g.is_symbolic(raw[0]) and how == "dynamic":
        params["dynamic_batch"] = g.size_range(raw[0], shape[0])
    dtype = g.probe_dtype(g.val(x).dtype, params)
    return g.Found("masked_scatter", g.with_sizes(params, how), dtype, g.module_path(node))


CONSTRUCT = Construct(
    kind="masked_scatter",
    params=("shape", "broadcast", "dynamic_batch"),
    build=build,
    readers=(Reader(("aten.masked_scatter.default",), detect),),
    scan=ScanSignature(unseen="masked_scatter lowers to plain cumsum/gather/select ops"),
    representative=("shape", "mask_shape", "dynamic_batch"),
)
