"""Matrix products: a linear layer (its transposed weight, with or without a bias) and a product
of two activations (attention's QK^T and PV, batched)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, dims

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

# ---- the probe --------------------------------------------------------------------------------
# form "linear": nn.Linear(in_features, out_features, bias) on an input of input_shapes[0] (a
# rank above 2 is flattened to 2 by the export, as a model's is). form "matmul": torch.matmul of
# two inputs of input_shapes; `transposed`: the second is stored with its last two dims swapped
# and transposed in the graph (k.transpose(-1, -2) of QK^T).


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _Linear(torch.nn.Module):
        def __init__(self, linear: torch.nn.Linear) -> None:
            super().__init__()
            self.linear = linear

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.linear(x)

    class _MatMul(torch.nn.Module):
        def __init__(self, transposed: bool) -> None:
            super().__init__()
            self.transposed = transposed

        def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
            return torch.matmul(a, b.transpose(-1, -2) if self.transposed else b)

    shapes = [[int(v) for v in s] for s in params["input_shapes"]]
    if params["form"] == "linear":
        linear = torch.nn.Linear(
            int(params["in_features"]), int(params["out_features"]), bool(params["bias"])
        )
        p.fill_trained(linear, gen, values)
        # unit-variance rows: an fp16 product of K terms stays far below fp16's maximum
        x = torch.randn(shapes[0], generator=gen)
        return p.Built(_Linear(linear), {"x": x})
    if params["form"] != "matmul":
        raise ValueError(f"unknown form {params['form']!r}")
    a = torch.randn(shapes[0], generator=gen)
    b = torch.randn(shapes[1], generator=gen) / max(1, shapes[0][-1]) ** 0.5
    if values == "adversarial":  # attention scores far apart: a few products dominate
        a = a * 8.0
    return p.Built(_MatMul(bool(params.get("transposed", False))), {"a": a, "b": b})


# ---- the detector ------------------------------------------------------------------------------
# aten.mm / addmm / bmm after the decompositions. A linear layer exports as
# [view] -> mm(x, permute(weight, [1, 0])) (addmm with the bias first) -> [view]; torch.matmul of
# activations as [expand -> view] of each operand -> bmm (or mm) -> [view]. The detector reads
# back through those reshapes to the operands the model wrote, so its probe is the model's call.


def _source(node: Any) -> Any:
    """The tensor a matmul operand was flattened from: through a view that only merges leading
    dims (the last two kept), then an expand; the operand itself where a view did more."""
    from oracle.constructs import _graph as g

    if g.target_name(node) != "aten.view.default" or not g.is_tensor(node.args[0]):
        return node
    src = node.args[0]
    if g.target_name(src) == "aten.expand.default" and g.is_tensor(src.args[0]):
        src = src.args[0]
    kept = g.shape(node)[-1:] if len(g.shape(node)) == 2 else g.shape(node)[-2:]
    return src if g.shape(src)[-len(kept) :] == kept else node


def _swaps_last_two(node: Any) -> bool:
    from oracle.constructs import _graph as g

    if g.target_name(node) != "aten.permute.default":
        return False
    dims = [int(d) for d in node.args[1]]
    n = len(dims)
    return n >= 2 and dims == [*range(n - 2), n - 1, n - 2]


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    op = g.target_name(node)
    a, b = (node.args[1], node.args[2]) if op == "aten.addmm.default" else node.args[:2]
    if not (g.is_tensor(a) and g.is_tensor(b)):
        return None
    x = _source(a)
    shape, how = sizes.concrete(x)
    if g.item_layout(x) is not None or g.item_layout(b) is not None:
        # sizes from .item() (sam3's decoder): not recorded. A probe expanding its input to
        # them exports as a bmm of an expanded weight, not the graph's addmm, so it would not
        # hold the instance (test_probe_fidelity); the op kinds stay covered by the others.
        return None
    params: dict[str, Any]
    if (
        op != "aten.bmm.default"
        and _swaps_last_two(b)
        and g.is_state(b.args[0])
        and (op == "aten.mm.default" or g.is_state(node.args[0]))
    ):
        weight = g.shape(b.args[0])
        params = {
            "form": "linear",
            "in_features": int(weight[1]),
            "out_features": int(weight[0]),
            "bias": op == "aten.addmm.default",
            "input_shapes": [shape],
        }
    else:
        y = _source(b)
        transposed = _swaps_last_two(y)
        if transposed:
            y = y.args[0]
        other, how_b = sizes.concrete(y)
        how = g.worst((how, how_b))
        params = {"form": "matmul", "transposed": transposed, "input_shapes": [shape, other]}
        if op == "aten.addmm.default":
            params["graph_bias"] = True  # an addmm of activations: the probe has no bias
    params["op"] = op.split(".")[1]
    return g.Found("matmul", g.with_sizes(params, how), g.dtype(a), g.module_path(node))


def label(params: dict[str, Any], short: str) -> str:
    """`Linear 1024->4096 +bias @1x361x1024 fp16`, `matmul 1x8x361x128 @ 1x8x361x128^T fp16`."""
    shapes = [dims(s) for s in params.get("input_shapes", [])]
    if params.get("form") == "linear":
        bias = " +bias" if params.get("bias") else ""
        return (
            f"Linear {params.get('in_features')}->{params.get('out_features')}{bias} "
            f"@{shapes[0] if shapes else '?'} {short}"
        )
    t = "^T" if params.get("transposed") else ""
    return f"matmul {' @ '.join(shapes)}{t} {short}"


CONSTRUCT = Construct(
    kind="matmul",
    params=(
        "form",
        "in_features",
        "out_features",
        "bias",
        "transposed",
        "input_shapes",
    ),
    build=build,
    readers=(Reader(("aten.mm.default", "aten.addmm.default", "aten.bmm.default"), detect),),
    scan=ScanSignature(
        unseen="a matrix product lowers to plain matmul ops among the reshapes and transposes "
        "around it; a linear layer is not told apart from an activation product"
    ),
    representative=("input_shapes",),
    label=label,
)
