"""cat under dynamic shapes (#14)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, dims, generic_label

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _Cat(torch.nn.Module):
        """mode `along_dynamic`: cat([x, y], dim=1) along the (dynamic) time axis; `sliced`:
        cat([x[:, :prefix], y], dim=2), where the slice of a dynamic axis has a static size in torch
        that a converter may only know dynamically, beside y's static size on that axis;
        `reshaped`: cat([x.reshape(B, -1), y], dim=0) with a dynamic batch B: torch knows the
        flattened axis (T * C), a converter building the reshape from a runtime shape may not, and
        y has it static; `upsampled`: cat([ConvTranspose1d(x), y], dim=2) with a dynamic length:
        torch knows the upsampled batch and channels, a converter may type them dynamic."""

        def __init__(self, mode: str, prefix: int, up: torch.nn.Module | None = None) -> None:
            super().__init__()
            self.mode = mode
            self.prefix = prefix
            self.up = up

        def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
            if self.mode == "along_dynamic":
                return torch.cat([x, y], dim=1)
            if self.mode == "sliced":
                return torch.cat([x[:, : self.prefix], y], dim=2)
            if self.mode == "reshaped":
                return torch.cat([x.reshape(x.shape[0], -1), y], dim=0)
            if self.mode == "upsampled" and self.up is not None:
                return torch.cat([self.up(x), y], dim=2)
            raise ValueError(self.mode)

    class _CatLayout(torch.nn.Module):
        """The instance's own layout: torch.cat of its inputs, of their recorded shapes, on
        its recorded dim (a static cat: rank, dim and sizes are what the converter sees)."""

        def __init__(self, dim: int) -> None:
            super().__init__()
            self.dim = dim

        def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
            return torch.cat(list(inputs), dim=self.dim)

    mode = params.get("mode", "sliced")
    if (
        params.get("input_shapes")
        and "dim" in params
        and mode == "sliced"
        and not (params.get("dynamic_length") or params.get("dynamic_batch"))
    ):
        # a traced static cat: its own inputs and dim, not the [B, T, C] layout below (which
        # catted sortformer's [1, 188, 512] + [1, 190, 512] on dim 2 and folded sam3's rank-5
        # inputs to rank 3)
        inputs = {
            f"x{i}": torch.randn([int(v) for v in shape], generator=gen)
            for i, shape in enumerate(params["input_shapes"])
        }
        return p.Built(_CatLayout(int(params["dim"])), inputs)
    batch, length = int(params.get("batch", 2)), int(params.get("length", 12))
    c, d = int(params.get("channels", 8)), int(params.get("other_channels", 4))
    prefix = int(params.get("prefix", 4))
    x = torch.randn([batch, length, c], generator=gen)
    if mode == "along_dynamic":
        y = torch.randn([batch, prefix, c], generator=gen)
    elif mode == "upsampled":  # x [B, C, T] upsampled 2x, then y's frames appended in time
        x = torch.randn([batch, c, length], generator=gen)
        up = torch.nn.ConvTranspose1d(c, d, 4, stride=2, padding=1)
        p.fill_trained(up, gen, values)
        y = torch.randn([batch, d, prefix], generator=gen)
        return p.Built(
            _Cat(mode, prefix, up),
            {"x": x, "y": y},
            dynamic=p.dynamic(params, "dynamic_length", "x", 2, "length"),
        )
    elif mode == "reshaped":  # y's rows are the flattened x's; only x has a dynamic batch
        y = torch.randn([prefix, length * c], generator=gen)
        return p.Built(
            _Cat(mode, prefix),
            {"x": x, "y": y},
            dynamic=p.dynamic(params, "dynamic_batch", "x", 0, "batch"),
        )
    else:
        y = torch.randn([batch, prefix, d], generator=gen)
    dynamic = p.merge(
        p.dynamic(params, "dynamic_length", "x", 1, "length"),
        p.dynamic(params, "dynamic_batch", "x", 0, "batch"),
        p.dynamic(params, "dynamic_batch", "y", 0, "batch"),
    )
    return p.Built(_Cat(mode, prefix), {"x": x, "y": y}, dynamic=dynamic)


# ---- the detector ------------------------------------------------------------------------------
# Every aten.cat. The probe's modes: `sliced` cat([x[:, :prefix], y], 2) (static: the control),
# `along_dynamic` cat([x, y], 1) along a dynamic axis. Mapping, for inputs [outer..., c_i,
# inner...] concatenated on their axis d: batch = the sizes before d, channels = the first
# input's c, other_channels = the rest's, prefix = length = the sizes after d.
# - static inputs: `sliced`, no dynamic dim (the control);
# - an input sliced out of a tensor whose sliced axis is symbolic (torch knows the slice's size,
#   a converter may not): `sliced` with dynamic_length;
# - a symbolic size on the concat axis: `along_dynamic` with dynamic_length;
# - a symbolic size shared by every input on another axis: `sliced` with dynamic_batch.
# Not expressed: the probe's `reshaped` and `upsampled` patterns (read as the cases above).


def _sliced_from_symbolic(t: Any) -> bool:
    """A static-sized slice of a tensor whose sliced axis is symbolic (x[:, :prefix])."""
    from oracle.constructs import _graph as g

    if t.op != "call_function" or g.target_name(t) != "aten.slice.Tensor":
        return False
    src = t.args[0]
    if not g.is_tensor(src):
        return False
    axis = int(g.arg(t, 1, "dim", 0)) % max(1, g.val(src).dim())
    return g.is_symbolic(g.val(src).shape[axis]) and not g.is_symbolic(g.val(t).shape[axis])


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    tensors = [t for t in node.args[0] if g.is_tensor(t)]
    if not tensors:
        return None
    rank = g.val(tensors[0]).dim()
    if rank == 0:
        return None
    d = int(g.arg(node, 1, "dim", 0)) % rank
    raw = [list(g.val(t).shape) for t in tensors]
    concrete = [sizes.concrete(t) for t in tensors]
    shapes = [s for s, _ in concrete]
    how = g.worst(h for _, h in concrete)
    first = shapes[0]
    # [batch, prefix, channels] as the probe's: the leading size, then every other non-concat
    # size in one (the sizes between and after), then the concatenated sizes
    outer = first[0] if d > 0 else 1
    inner = max(1, g.prod(first[1:d]) * g.prod(first[d + 1 :]) if d > 0 else g.prod(first[1:]))
    channels = max(1, first[d])
    rest = sum(s[d] for s in shapes[1:])
    params: dict[str, Any] = {
        "mode": "sliced",
        "batch": max(1, outer),
        "length": inner,
        "channels": channels,
        "other_channels": max(1, rest) if rest else channels,
        "prefix": inner,
    }
    concat_sym = [s[d] for s in raw if g.is_symbolic(s[d])]
    sliced = next((t for t in tensors if _sliced_from_symbolic(t)), None)
    axis = -1
    if concat_sym:
        value, _ = sizes.resolve(concat_sym[0])
        static = [s[d] for s, r in zip(shapes, raw, strict=True) if not g.is_symbolic(r[d])]
        params.update(
            mode="along_dynamic",
            length=value,
            channels=inner,
            prefix=max(1, static[0]) if static else value,
            dynamic_length=g.size_range(concat_sym[0], value),
        )
        params.pop("other_channels")
        axis = d
    elif sliced is not None:
        src = sliced.args[0]
        axis = int(g.arg(sliced, 1, "dim", 0)) % g.val(src).dim()
        value, _ = sizes.resolve(g.val(src).shape[axis])
        prefix = max(1, first[axis])
        params.update(
            batch=max(1, g.prod(first[:axis])),
            length=max(value, prefix),
            prefix=prefix,
            dynamic_length=g.size_range(
                g.val(src).shape[axis], max(value, prefix), at_least=prefix
            ),
        )
        how = g.worst([how, "dynamic"])
    # A symbolic size every input shares on another axis: the probe's dynamic batch.
    shared = [v for s in raw for i, v in enumerate(s) if i not in (d, axis) and g.is_symbolic(v)]
    if shared:
        value, _ = sizes.resolve(shared[0])
        if axis < 0:
            params["batch"] = value
        params["dynamic_batch"] = g.size_range(shared[0], value)
    params["dim"] = d
    params["input_shapes"] = shapes
    dtype = g.probe_dtype(g.val(node).dtype, params)
    return g.Found("cat_dynamic", g.with_sizes(params, how), dtype, g.module_path(node))


def label(params: dict[str, Any], short: str) -> str:
    shapes = params.get("input_shapes")
    if not shapes:  # a library regime: the probe's own [B, T, C] layout
        return generic_label("cat_dynamic", params, short)
    return (
        f"cat {' + '.join(dims(s) for s in shapes)} dim {params.get('dim')} "
        f"{params.get('mode', 'sliced')} {short}"
    )


CONSTRUCT = Construct(
    kind="cat_dynamic",
    params=(
        "mode",
        "batch",
        "length",
        "channels",
        "other_channels",
        "prefix",
        "dynamic_length",
        "dynamic_batch",
        "dim",
        "input_shapes",
    ),
    build=build,
    readers=(Reader(("aten.cat.default",), detect),),
    scan=ScanSignature(
        unseen="every concatenation is a plain concat op; which of them met a "
        "dynamic axis is not named"
    ),
    representative=(
        "input_shapes",
        "batch",
        "length",
        "channels",
        "other_channels",
        "prefix",
        "dim",
        "dynamic_length",
        "dynamic_batch",
    ),
    label=label,
)
