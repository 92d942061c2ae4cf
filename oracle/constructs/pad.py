"""Padding: constant, reflect, replicate (#29, #30, #31)."""

from __future__ import annotations

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

    class _Pad(torch.nn.Module):
        def __init__(self, pads: list[int], mode: str, value: float) -> None:
            super().__init__()
            self.pads = pads
            self.mode = mode
            self.value = value

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.mode == "constant":
                return torch.nn.functional.pad(x, self.pads, "constant", self.value)
            return torch.nn.functional.pad(x, self.pads, self.mode)

    shape = [int(v) for v in params["input_shape"]]
    layout = params.get("item_shape")
    if layout:  # sizes from .item() in a static graph (sam3's decoder): built the same way
        module = _Pad(
            [int(v) for v in params["pads"]],
            params.get("mode", "reflect"),
            float(params.get("value", 0.0)),
        )
        x = torch.randn(p.item_static(layout), generator=gen)
        return p.item_shaped(module, layout, shape, params.get("size_source", "constant"), {"x": x})
    x = torch.randn(shape, generator=gen)
    if values == "adversarial":
        # Distinct values by position: a wrong reflection or replication index shows.
        x = torch.arange(x.numel(), dtype=torch.float32).view(shape) / x.numel() + x * 1e-3
    module = _Pad(
        [int(v) for v in params["pads"]],
        params.get("mode", "reflect"),
        float(params.get("value", 0.0)),
    )
    # A dynamic batch (#30's dynamic-batch test): pads and spatial sizes stay static.
    return p.Built(module, {"x": x}, dynamic=p.dynamic(params, "dynamic_batch", "x", 0, "batch"))


# ---- the detector ------------------------------------------------------------------------------
# constant_pad_nd (mode constant, with its value), reflection_pad{1,2,3}d, replication_pad{1,2,3}d
# (kept whole by 0.4.2's get_decomp_table()). Earlier tables decompose reflect/replicate pads
# into arange/abs/clamp/index nodes; those still carry the op they came from
# (meta["original_aten"], meta["from_node"]), so such a pad is read back from its first index
# node: the arange of each padded dim is arange(-left, size + right).

_PAD_MODES = {"reflection": "reflect", "replication": "replicate"}

_INDEX_OPS = ("aten.index.Tensor", "aten._unsafe_index.Tensor")


def _pad_mode(op: Any) -> str | None:
    name = str(op)
    for prefix, mode in _PAD_MODES.items():
        if name.startswith(f"aten.{prefix}_pad"):
            return mode
    return None


def _origin(node: Any) -> tuple[str, str] | None:
    """(the op a decomposed node came from, that op's node name), if it came from one."""
    original = node.meta.get("original_aten")
    sources = node.meta.get("from_node") or []
    if original is None or not sources:
        return None
    return str(original), f"{sources[0].name}@{getattr(sources[0], 'graph_id', '')}"


def _find_upstream(start: Any, origin: tuple[str, str], target: str) -> Any:
    import torch

    from oracle.constructs import _graph as g

    seen, todo = set(), [start]
    while todo:
        n = todo.pop()
        if not isinstance(n, torch.fx.Node) or n in seen or _origin(n) != origin:
            continue
        seen.add(n)
        if g.target_name(n) == target:
            return n
        todo += [a for a in n.args if isinstance(a, torch.fx.Node)]
    return None


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    name = g.target_name(node)
    x = node.args[0]
    if name == "aten.constant_pad_nd.default":
        pads = [int(sizes.number(p)[0] or 0) for p in node.args[1]]
        value = g.arg(node, 2, "value", 0)
        params: dict[str, Any] = {"mode": "constant", "pads": pads, "value": float(value or 0)}
    else:
        mode = _pad_mode(name)
        if mode is None:
            return None
        params = {"mode": mode, "pads": [int(sizes.number(p)[0] or 0) for p in node.args[1]]}
    shape, how = sizes.concrete(x)
    params["input_shape"] = shape
    _batch(params, x, shape)
    g.with_layout(params, x, shape)
    dtype = g.probe_dtype(g.val(x).dtype, params)
    return g.Found("pad", g.with_sizes(params, how), dtype, g.module_path(node))


def _batch(params: dict[str, Any], x: Any, shape: list[int]) -> None:
    """A symbolic batch (the pad's sizes and other dims static) as the probe's dynamic_batch."""
    import torch

    from oracle.constructs import _graph as g

    value = g.val(x)
    if shape and isinstance(value.shape[0], torch.SymInt):
        params["dynamic_batch"] = g.size_range(value.shape[0], shape[0])


def detect_decomposed(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    """A reflect/replicate pad decomposed by the table, read from its first index node."""
    origin = _origin(node)
    if origin is None or _pad_mode(origin[0]) is None:
        return None
    src = node.args[0]
    if (
        isinstance(src, torch.fx.Node)
        and src.op == "call_function"
        and _origin(src) == origin
        and g.target_name(src) in _INDEX_OPS
    ):
        return None  # not the first index of this pad
    while isinstance(src, torch.fx.Node) and src.op == "call_function" and _origin(src) == origin:
        src = src.args[0]  # the opmath upcast (fp16 -> fp32) belongs to the pad
    shape, how = sizes.concrete(src)
    rank = len(shape)
    if not rank:
        return None
    sides: dict[int, tuple[int, int]] = {}
    current: Any = node
    while current is not None:
        indices = current.args[1]
        for pos, idx in enumerate(indices):
            if idx is None:
                continue
            arange = _find_upstream(idx, origin, "aten.arange.start_step")
            if arange is None:
                return None
            start, end = (int(sizes.number(v)[0] or 0) for v in arange.args[:2])
            sides[pos] = (-start, end - shape[pos])
        current = next(
            (u for u in current.users if g.target_name(u) in _INDEX_OPS and _origin(u) == origin),
            None,
        )
    pads: list[int] = []
    for pos in sorted(sides, reverse=True):  # F.pad order: the last dim first
        pads += list(sides[pos])
    params = {
        "mode": _pad_mode(origin[0]),
        "pads": pads,
        "input_shape": shape,
        "graph": f"decomposed by the table ({origin[0]})",
    }
    if g.is_tensor(src):
        _batch(params, src, shape)
    dtype = g.probe_dtype(g.val(src).dtype if g.is_tensor(src) else None, params)
    return g.Found("pad", g.with_sizes(params, how), dtype, g.module_path(node))


def label(p: dict[str, Any], short: str) -> str:
    return f"pad {p.get('mode')} {dims(p.get('pads'))} @{dims(p.get('input_shape'))} {short}"


CONSTRUCT = Construct(
    kind="pad",
    params=("mode", "pads", "input_shape", "value", "dynamic_batch", "item_shape", "size_source"),
    build=build,
    readers=(
        Reader(
            ("aten.constant_pad_nd.default",)
            + tuple(f"aten.{kind}_pad{n}d.default" for kind in _PAD_MODES for n in (1, 2, 3)),
            detect,
        ),
        # Reflect/replicate pads a converter's table decomposed, read back from their index nodes.
        Reader(_INDEX_OPS, detect_decomposed),
    ),
    scan=ScanSignature(unseen="a pad lowers to plain pad/slice/concat ops, as other code does"),
    representative=("input_shape",),
    label=label,
)
