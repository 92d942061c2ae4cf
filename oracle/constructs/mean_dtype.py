"""Mean with a dtype argument (#42)."""

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

    class _Mean(torch.nn.Module):
        def __init__(
            self, dims: list[int] | None, keepdim: bool, dtype: torch.dtype | None
        ) -> None:
            super().__init__()
            self.dims = dims
            self.keepdim = keepdim
            self.dtype = dtype

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.dims is None:
                return x.mean(dtype=self.dtype)
            return x.mean(self.dims, keepdim=self.keepdim, dtype=self.dtype)

    operand = params.get("operand", "float")
    shape = [int(v) for v in params.get("shape", [4, 64])]
    dims = params.get("dims")
    dtype_arg = params.get("dtype_arg", "float32")
    out_dtype = p.DTYPES[dtype_arg] if dtype_arg else None
    if operand == "int32":
        x = p.int_operand(shape, gen, -1000, 1000)
        if values == "adversarial":  # sums far beyond int32 and beyond fp32's exact integers
            x = p.int_operand(shape, gen, 2**30, 2**31 - 1)
    elif operand == "float":
        x = torch.randn(shape, generator=gen) * 2.0 + 1.0
        if values == "adversarial":  # an fp16 sum overflows; an fp32 one does not
            x = 3e4 + torch.randn(shape, generator=gen) * 2e3
    else:
        raise ValueError(f"unknown operand {operand!r}")
    module = _Mean(
        None if dims is None else [int(d) for d in dims],
        bool(params.get("keepdim", False)),
        out_dtype,
    )
    return p.Built(module, {"x": x})


# ---- the detector ------------------------------------------------------------------------------
# aten.mean.dim / mean.default. dtype_arg: the explicit dtype argument, "" for a plain mean (the
# probe then calls x.mean(dims, keepdim) without one). Integer operands need a dtype argument.


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    x = node.args[0]
    if not g.is_tensor(x):
        return None
    shape, how = sizes.concrete(x)
    x_dtype = g.val(x).dtype
    params: dict[str, Any] = {
        "operand": "float" if x_dtype.is_floating_point else "int32",
        "shape": shape,
    }
    if g.target_name(node) == "aten.mean.dim":
        dims = g.arg(node, 1, "dim")
        if dims:
            params["dims"] = [int(d) for d in dims]
        params["keepdim"] = bool(g.arg(node, 2, "keepdim", False))
    arg = node.kwargs.get("dtype")
    if arg is None:
        params["dtype_arg"] = ""
    elif g.name(arg) in ("float32", "float16", "bfloat16", "int32", "int8", "int64"):
        params["dtype_arg"] = g.name(arg)
    else:  # float64 (narrowed to float32 by the converter)
        params["dtype_arg"] = "float32"
        params["graph_dtype_arg"] = g.name(arg)
    if x_dtype.is_floating_point:
        dtype = g.probe_dtype(x_dtype, params)
    else:
        if x_dtype != torch.int32:
            params["tensor_dtype"] = g.name(x_dtype)
        dtype = "float32"
    return g.Found("mean_dtype", g.with_sizes(params, how), dtype, g.module_path(node))


CONSTRUCT = Construct(
    kind="mean_dtype",
    params=("operand", "shape", "dims", "keepdim", "dtype_arg"),
    build=build,
    readers=(Reader(("aten.mean.dim", "aten.mean.default"), detect),),
    scan=ScanSignature(
        unseen="a mean lowers to plain reduce and cast ops; its dtype argument "
        "is not in the program"
    ),
    representative=("shape",),
)
