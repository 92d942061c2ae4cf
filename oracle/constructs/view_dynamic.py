"""view / reshape with a symbolic size in its shape list (#13).

Where the symbolic size comes from decides what the converter makes of it (`size_source`, see
`_graph.SIZE_SOURCES`), so the probe rebuilds it the same way. Measured: SAM 3's 54
views take sizes from `.item()` of its decoder's `spatial_shapes`, a tensor of python ints, on a
static-shape graph. A probe exporting a dynamic input dim instead (`torch.export.Dim`, read with
`aten.sym_size.int`) changed under 0.4.0 -> 0.4.2 (#13 reorders the mixed list's casts, #56
`replace_sym_size_int`), while the whole program's views did not: there the optimizer folds the
constant's `.item()` and ships a static reshape. The `constant` probe does too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from oracle.constructs._construct import Construct, Reader, ScanSignature

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _View(torch.nn.Module):
        """mode `split_heads`: x.view(B, T, H, C // H) (a SymInt beside plain ints); `merge`:
        x.reshape(B * T, C) (a product of SymInt and int); `flatten`: x.reshape(B, -1)."""

        def __init__(self, mode: str, heads: int) -> None:
            super().__init__()
            self.mode = mode
            self.heads = heads

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, t, c = x.shape
            if self.mode == "split_heads":
                return x.view(b, t, self.heads, c // self.heads).transpose(1, 2)
            if self.mode == "merge":
                return x.reshape(b * t, c)
            if self.mode == "flatten":
                return x.reshape(b, -1)
            raise ValueError(self.mode)

    class _ViewSymFloat(torch.nn.Module):
        """x.view(1, C, -1).view(1, C, h, w) with h, w = round(sqrt(area / aspect)),
        round(sqrt(area * aspect)) of a dynamic H x W: SymInts from SymFloat arithmetic beside plain
        ints in one shape list (#13's own regression case; exact for square inputs)."""

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            c = x.shape[1]
            area = x.shape[2] * x.shape[3]
            aspect = x.shape[3] / x.shape[2]
            h = round((area / aspect) ** 0.5)
            w = round((area * aspect) ** 0.5)
            return x.view(1, c, -1).view(1, c, h, w)

    mode = params.get("mode", "split_heads")
    source = params.get("size_source", "input")
    if source != "input":
        return _from_item(params, gen, mode, source)
    if mode == "symfloat":
        side = int(params.get("length", 16))
        x = torch.randn([1, int(params.get("channels", 16)), side, side], generator=gen)
        dynamic = p.merge(
            p.dynamic(params, "dynamic_hw", "x", 2, "height"),
            p.dynamic(params, "dynamic_hw", "x", 3, "width"),
        )
        return p.Built(_ViewSymFloat(), {"x": x}, dynamic=dynamic)
    shape = [
        int(params.get("batch", 2)),
        int(params.get("length", 8)),
        int(params.get("channels", 16)),
    ]
    x = torch.randn(shape, generator=gen)
    module = _View(mode, int(params.get("heads", 4)))
    return p.Built(module, {"x": x}, dynamic=p.dynamic(params, "dynamic_batch", "x", 0, "batch"))


def _from_item(params: dict[str, Any], gen: torch.Generator, mode: str, source: str) -> Built:
    """The view of a static-shape graph whose size is `.item()` of a tensor, as SAM 3's decoder
    makes it: a [1, 2] int64 (height, width) tensor, a constant (`torch.tensor` of python ints
    in forward; a 2-element tensor, because torch.export folds the `.item()` of a 1-element
    constant to a plain int) or, for `data`, a graph input. Both are read with `.item()` and
    pinned only as a product (SAM 3's h * w vision tokens), so the sizes stay symbolic and the
    detector resolves them as it does in SAM 3. The tensor the view takes gets its symbolic
    dim from an arange of that size, as SAM 3's coordinate grid does. Modes, with h the size:
    merge [1, T, h, C] -> (T * h, C); split_heads [T * h, C] -> (1, T, h, C) (heads == 1) or
    (1, T, h, heads, C // heads); flatten [h, T, C] -> (h, -1)."""
    import torch

    from oracle.constructs import _probe as p

    if mode == "symfloat":
        raise ValueError(
            "view_dynamic: symfloat sizes from .item() are not built (no traced instance has one)"
        )
    size = int(params.get("batch", 2))
    length = int(params.get("length", 8))
    channels = int(params.get("channels", 16))
    heads = int(params.get("heads", 1))

    class _ViewItem(torch.nn.Module):
        def forward(self, x: torch.Tensor, hw: torch.Tensor | None = None) -> torch.Tensor:
            if hw is None:
                hw = torch.tensor([[size, size]], dtype=torch.long, device=x.device)
            # a long tensor's items: ints (unbacked SymInts under export), never floats
            h, w = cast(int, hw[0, 0].item()), cast(int, hw[0, 1].item())
            torch._check(h * w == size * size)
            if mode == "merge":
                t = torch.arange(h, dtype=x.dtype).view(1, 1, -1, 1) + x
                return t.view(length * h, channels)
            if mode == "flatten":
                return (torch.arange(h, dtype=x.dtype).view(-1, 1, 1) + x).reshape(h, -1)
            t = torch.arange(length * h, dtype=x.dtype).view(-1, 1) + x
            if heads > 1:
                return t.view(1, length, h, heads, channels // heads)
            return t.view(1, length, h, channels)

    shapes = {"merge": [1, length, 1, channels], "flatten": [1, length, channels]}
    x = torch.randn(shapes.get(mode, [1, channels]), generator=gen)
    inputs = {"x": x}
    if source == "data":
        inputs["hw"] = torch.tensor([[size, size]], dtype=torch.long)
    return p.Built(_ViewItem(), inputs, fixed_dtype=("hw",))


# ---- the detector ------------------------------------------------------------------------------
# Only a shape list mixing SymInts and ints is this construct: a static graph's views take int
# lists (nothing to record), while a static bundle can still hold data-dependent SymInts (an
# .item()), which reach the converter as a mixed list too, from another op than a dynamic
# batch's aten.sym_size.int, and fold when the .item() reads a constant. Modes: merge
# (the view lowers the rank: x.reshape(B * T, C)), flatten (a -1 beside the SymInt:
# x.reshape(B, -1)), symfloat (a SymInt from float arithmetic: round(sqrt(..))), split_heads
# (otherwise: x.view(B, T, H, C // H)). batch: the first symbol's value, dynamic_batch its range
# when it is a dynamic input dim; size_source where it comes from (_graph.SIZE_SOURCES): a
# `.item()` is no dynamic input, and its probe must not make one.

# sympy functions torch uses for SymFloat arithmetic (not FloorDiv: c // heads is integer)
_FLOAT_FUNCS = (
    "RoundToInt",
    "FloorToInt",
    "CeilToInt",
    "TruncToInt",
    "ToFloat",
    "TrueDiv",
    "FloatPow",
    "sqrt",
)


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    x, target = node.args[0], list(node.args[1])
    symbolic = [s for s in target if g.is_symbolic(s)]
    if not symbolic or not g.is_tensor(x):
        return None
    shape, how = sizes.concrete(x)
    out, out_how = sizes.concrete(node)
    how = g.worst([how, out_how])
    sym: Any = g.val(symbolic[0]) if isinstance(symbolic[0], torch.fx.Node) else symbolic[0]
    source = g.size_source(symbolic[0])
    expr = sym.node.expr
    free = sorted(expr.free_symbols, key=str)
    lead: Any = g.val(x).shape[0] if g.val(x).dim() else None
    if g.is_symbolic(lead) and lead.node.expr in free:  # the input's batch, if it is one of them
        free.insert(0, lead.node.expr)
    static = [int(s) for s in target if isinstance(s, int) and s != -1]
    env = sym.node.shape_env
    if any(f in str(expr) for f in _FLOAT_FUNCS):
        side, _ = sizes.resolve(sym)
        params: dict[str, Any] = {
            "mode": "symfloat",
            "channels": shape[1] if len(shape) > 1 else 1,
            "length": side,
            "dynamic_hw": g.range_of(env, free[0], side, at_least=2),
        }
    else:
        batch = sizes.symbol_value(env, free[0])
        heads = 1
        if -1 in target:
            mode = "flatten"
            length = shape[1] if len(shape) > 1 else 1
            channels = max(1, g.prod(shape[2:]))
        elif len(target) < len(shape):
            mode = "merge"
            value, _ = sizes.resolve(sym)
            length = max(1, value // max(1, batch))
            channels = max(1, g.prod(static))
        else:  # heads: the second-to-last size when the last two are ints (B, T, H, C // H)
            mode = "split_heads"
            last = [s for s in target[-2:] if isinstance(s, int) and s > 0]
            heads = last[0] if len(last) == 2 else 1
            channels = heads * last[-1] if last and isinstance(target[-1], int) else 1
            length = max(1, g.prod(static) // channels)
        params = {"mode": mode, "batch": batch, "length": length, "channels": channels}
        if source == "input":
            params["dynamic_batch"] = g.range_of(env, free[0], batch)
        if mode == "split_heads":
            params["heads"] = heads
    if source != "input":
        params["size_source"] = source
    params["input_shape"] = shape
    params["output_shape"] = out
    dtype = g.probe_dtype(g.val(x).dtype, params)
    return g.Found("view_dynamic", g.with_sizes(params, how), dtype, g.module_path(node))


CONSTRUCT = Construct(
    kind="view_dynamic",
    params=(
        "mode",
        "batch",
        "length",
        "channels",
        "heads",
        "dynamic_batch",
        "dynamic_hw",
        "size_source",
    ),
    build=build,
    readers=(
        Reader(("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"), detect),
    ),
    scan=ScanSignature(
        unseen="every reshape is a plain reshape op; how its shape list was built "
        "is not in the program"
    ),
    representative=(
        "input_shape",
        "output_shape",
        "batch",
        "length",
        "channels",
        "heads",
        "dynamic_batch",
        "dynamic_hw",
    ),
)
