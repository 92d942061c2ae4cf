"""2-D max pooling (#36: a functional max_pool2d without a stride)."""

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

    class _MaxPool(torch.nn.Module):
        """form `functional`: F.max_pool2d(x, k[, stride], ...) (no stride argument unless given);
        form `module`: nn.MaxPool2d(k, ...), which always records the stride (= kernel)."""

        def __init__(
            self,
            form: str,
            kernel: list[int],
            stride: list[int] | None,
            padding: list[int],
            ceil_mode: bool,
        ) -> None:
            super().__init__()
            self.form = form
            self.kernel = kernel
            self.stride = stride
            self.padding = padding
            self.ceil_mode = ceil_mode
            # torch takes any int sequence (typed as tuples); the recorded lists are kept as
            # they are so the probe's module is the one every stored result was made from
            self.pool = torch.nn.MaxPool2d(
                kernel,  # type: ignore[arg-type]
                stride=stride,  # type: ignore[arg-type]
                padding=padding,  # type: ignore[arg-type]
                ceil_mode=ceil_mode,
            )

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.form == "module":
                return self.pool(x)
            kw: dict[str, Any] = {}
            if any(self.padding):
                kw["padding"] = self.padding
            if self.ceil_mode:
                kw["ceil_mode"] = True
            if self.stride is None:
                return torch.nn.functional.max_pool2d(x, self.kernel, **kw)
            return torch.nn.functional.max_pool2d(x, self.kernel, self.stride, **kw)

    kernel = [int(v) for v in params["kernel"]]
    stride = [int(v) for v in params["stride"]] if params.get("stride") else None
    padding = [int(v) for v in params.get("padding", [0, 0])]
    x = torch.randn([int(v) for v in params["input_shape"]], generator=gen)
    if values == "adversarial":
        # All negative (a zero pad would win), with -inf entries.
        x = p.plant(-x.abs() - 1.0, [-math.inf], gen, 0.05)
    module = _MaxPool(
        params.get("form", "functional"),
        kernel,
        stride,
        padding,
        bool(params.get("ceil_mode", False)),
    )
    return p.Built(module, {"x": x})


# ---- the detector ------------------------------------------------------------------------------
# aten.max_pool2d_with_indices(x, kernel, stride=[], padding=0, dilation=1, ceil_mode=False):
# F.max_pool2d without a stride leaves the stride argument out (or empty); nn.MaxPool2d and
# F.max_pool2d(x, k, s) pass it. Form `module` when the op sits in an nn.MaxPool2d, else
# `functional` (with `stride` when the graph has one). The probe has no dilation: a dilated pool
# is recorded with `dilation` as an extra and probed undilated.


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    x = node.args[0]
    shape, how = sizes.concrete(x)
    stride = list(g.arg(node, 2, "stride", []) or [])
    padding = [int(p) for p in (g.arg(node, 3, "padding", [0]) or [0])]
    dilation = [int(d) for d in (g.arg(node, 4, "dilation", [1]) or [1])]
    params: dict[str, Any] = {"form": "functional", "kernel": [int(k) for k in node.args[1]]}
    if stride:
        params["stride"] = [int(s) for s in stride]
        if g.module_class(node) == "MaxPool2d":
            params["form"] = "module"
    if any(padding):
        params["padding"] = padding
    if g.arg(node, 5, "ceil_mode", False):
        params["ceil_mode"] = True
    params["input_shape"] = shape
    if any(d != 1 for d in dilation):
        params["dilation"] = dilation
    dtype = g.probe_dtype(g.val(x).dtype, params)
    return g.Found("max_pool2d", g.with_sizes(params, how), dtype, g.module_path(node))


def label(p: dict[str, Any], short: str) -> str:
    stride = (
        f"s{dims(p['stride'])}"
        if p.get("stride")
        else ("stride=kernel" if p.get("form") == "module" else "no stride")
    )
    return (
        f"max_pool2d ({p.get('form', 'functional')}) k{dims(p.get('kernel'))} {stride} "
        f"@{dims(p.get('input_shape'))} {short}"
    )


CONSTRUCT = Construct(
    kind="max_pool2d",
    params=("form", "kernel", "stride", "padding", "ceil_mode", "input_shape"),
    build=build,
    readers=(Reader(("aten.max_pool2d_with_indices.default",), detect),),
    scan=ScanSignature(
        unseen="a pool's stride as written in the recipe (absent or explicit) "
        "leaves no trace in the program"
    ),
    representative=("input_shape",),
    label=label,
)
