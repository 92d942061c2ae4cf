"""repeat by a symbolic size (#15)."""

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

    class _Repeat(torch.nn.Module):
        """A learned row tiled over the batch: w.repeat(x.shape[0], 1) (symbolic when the batch is
        dynamic, a plain int otherwise)."""

        def __init__(self, length: int) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(1, length))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.w.repeat(x.shape[0], 1)

    class _RepeatLayout(torch.nn.Module):
        """The instance's own layout: a learned tensor of its input shape repeated by its
        repeats (sam3 tiles a [1, 1024, 24, 24] position table by [1, 1, 4, 4])."""

        def __init__(self, shape: list[int], repeats: list[int]) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(shape))
            self.repeats = repeats

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.w.repeat(*self.repeats)

    shape, repeats = params.get("input_shape"), params.get("repeats")
    if shape and repeats and not params.get("dynamic_batch"):
        # a traced static repeat: its own rank and repeats, not a [1, N] row tiled [B, 1]
        layout = _RepeatLayout([int(v) for v in shape], [int(v) for v in repeats])
        p.fill_trained(layout, gen, values)
        out = [int(s) * int(r) for s, r in zip(shape, repeats, strict=True)]
        return p.Built(layout, {"x": torch.randn(out, generator=gen)})
    length = int(params.get("length", 16))
    module = _Repeat(length)
    p.fill_trained(module, gen, values)
    x = torch.randn([int(params.get("batch", 3)), length], generator=gen)
    return p.Built(module, {"x": x}, dynamic=p.dynamic(params, "dynamic_batch", "x", 0, "batch"))


# ---- the detector ------------------------------------------------------------------------------
# aten.repeat with a SymInt among its repeats (symbolic) or with ints only (static). The probe
# tiles a [1, length] parameter over the batch: w.repeat(x.shape[0], 1), symbolic when the batch
# is a dynamic dim. batch: the symbolic repeat's value (static: the product of the repeats);
# length: the elements of the tensor repeated; dynamic_batch: the symbol's range. `repeats` and
# `input_shape` are the graph's.


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    x, repeats = node.args[0], list(node.args[1])
    shape, how = sizes.concrete(x)
    resolved = [sizes.resolve(r) for r in repeats]
    values = [v for v, _ in resolved]
    params: dict[str, Any] = {"length": max(1, g.prod(shape))}
    symbolic = [r for r in repeats if g.is_symbolic(r)]
    if symbolic:
        batch, _ = sizes.resolve(symbolic[0])
        params["batch"] = batch
        params["dynamic_batch"] = g.size_range(symbolic[0], batch)
    else:
        params["batch"] = max(1, g.prod(values))
    params["repeats"] = values
    params["input_shape"] = shape
    dtype = g.probe_dtype(g.val(x).dtype, params)
    how = g.worst([how] + [h for _, h in resolved])
    return g.Found("repeat_symbolic", g.with_sizes(params, how), dtype, g.module_path(node))


CONSTRUCT = Construct(
    kind="repeat_symbolic",
    params=("batch", "length", "dynamic_batch", "input_shape", "repeats"),
    build=build,
    readers=(Reader(("aten.repeat.default",), detect),),
    scan=ScanSignature(
        unseen="a repeat lowers to plain tile/broadcast ops; whether its size was "
        "symbolic is not in the program"
    ),
    representative=("input_shape", "batch", "length", "repeats", "dynamic_batch"),
)
