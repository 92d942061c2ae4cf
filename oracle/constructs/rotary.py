"""Rotary position embedding applied to a query or key: `x * cos + rotate(x) * sin`, the rotation
written as Llama's rotate-half (`cat((-x2, x1))` of the last dim's two halves: slice, neg, cat) or
as SAM 3's pairwise rotation (`stack((-x2, x1))` of the unbound pairs: view, slice, squeeze, neg,
unsqueeze, cat, view), over an fp32 upcast of an fp16/bf16 input where the model upcasts."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, dims

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

FORMS = ("half", "pairwise")

# ---- the probe --------------------------------------------------------------------------------
# x of input_shape (a query or key, head dim last), the cos and sin tables of table_shape in
# table_dtype (fp32 tables beside an fp16 model stay fp32, as a model computes them); "upcast":
# the rotation runs on x.float() and the result is cast back to x's dtype.


def _rotate(x: torch.Tensor, form: str) -> torch.Tensor:
    import torch

    if form == "half":
        x1 = x[..., : x.shape[-1] // 2]
        x2 = x[..., x.shape[-1] // 2 :]
        return torch.cat((-x2, x1), dim=-1)
    pairs = x.view(*x.shape[:-1], -1, 2)
    x1, x2 = pairs.unbind(dim=-1)
    return torch.stack((-x2, x1), dim=-1).flatten(start_dim=-2)


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _Rotary(torch.nn.Module):
        def __init__(self, form: str, upcast: bool) -> None:
            super().__init__()
            self.form = form
            self.upcast = upcast

        def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
            h = x.float() if self.upcast else x
            h = h * cos + _rotate(h, self.form) * sin
            return h.type_as(x) if self.upcast else h

    form = str(params["form"])
    if form not in FORMS:
        raise ValueError(f"unknown form {form!r}")
    shape = [int(d) for d in params["input_shape"]]
    table = [int(d) for d in params["table_shape"]]
    if shape[-1] % 2 or table[-1] != shape[-1]:
        raise ValueError(f"tables {table} do not rotate a head dim of {shape}")
    x = torch.randn(shape, generator=gen)
    if values == "adversarial":  # a query's outlier features, near fp16's largest
        x = x + 3e4 * torch.sign(x) * (torch.rand(shape, generator=gen) > 0.99)
    angles = torch.rand(table, generator=gen) * 1e3  # far positions: every phase
    fixed = ("cos", "sin") if params["table_dtype"] == "float32" else ()
    inputs = {"x": x, "cos": angles.cos(), "sin": angles.sin()}
    return p.Built(_Rotary(form, bool(params["upcast"])), inputs, fixed_dtype=fixed)


# ---- the detector ------------------------------------------------------------------------------
# From the neg. half: cat([neg(slice(x, -1, d/2, d)), slice(x, -1, 0, d/2)], -1). pairwise:
# view(cat([unsqueeze(neg(squeeze(slice(v, -1, 1, 2)))), unsqueeze(squeeze(slice(v, -1, 0, 1)))],
# -1)) with v = view(x, [..., d/2, 2]). Then the rotated tensor times sin, added to x times cos.
# A neg of anything else (a subtraction written out, a box's corner) is no rotary. The tables'
# shape and dtype are the products' operands as they are, never read through the cast or reshape
# that made them: an fp16 table times an fp32-upcast query is a mixed-precision product, one a
# probe with fp32 tables would not hold.


def _one_user(node: Any, *targets: str) -> Any:
    from oracle.constructs import _graph as g

    users = list(node.users)
    return users[0] if len(users) == 1 and g.target_name(users[0]) in targets else None


def _slice(node: Any, last: int) -> tuple[Any, int, int] | None:
    """(source, start, end) of a unit-step slice of the last dim, or None."""
    from oracle.constructs import _graph as g

    if g.target_name(node) != "aten.slice.Tensor" or len(node.args) < 4:
        return None
    source, dim, start, end = node.args[:4]
    step = node.args[4] if len(node.args) > 4 else 1
    if dim not in (-1, last) or step != 1 or not isinstance(start, int):
        return None
    return source, start, end


def _half(node: Any) -> tuple[Any, Any] | None:
    """(x, rotated) of a rotate-half whose neg is `node`."""
    from oracle.constructs import _graph as g

    last = len(g.shape(node)) - 1
    upper = _slice(node.args[0], last)
    cat = _one_user(node, "aten.cat.default")
    if upper is None or cat is None or len(cat.args[0]) != 2 or cat.args[0][0] is not node:
        return None
    x, start, end = upper
    size = g.shape(x)[-1]
    lower = _slice(cat.args[0][1], last)
    if lower != (x, 0, start) or not isinstance(size, int) or start * 2 != size:
        return None
    if not isinstance(end, int) or end < size:
        return None
    return x, cat


def _pairwise(node: Any) -> tuple[Any, Any] | None:
    """(x, rotated) of a pairwise rotation whose neg is `node`."""
    from oracle.constructs import _graph as g

    squeezed = node.args[0]
    if g.target_name(squeezed) != "aten.squeeze.dims":
        return None
    last = len(g.shape(squeezed))
    second = _slice(squeezed.args[0], last)
    unsqueezed = _one_user(node, "aten.unsqueeze.default")
    cat = unsqueezed and _one_user(unsqueezed, "aten.cat.default")
    if second is None or second[1:] != (1, 2) or not cat or len(cat.args[0]) != 2:
        return None
    pairs = second[0]
    other = cat.args[0][1]
    first = other.args[0].args[0] if g.target_name(other) == "aten.unsqueeze.default" else None
    if first is None or _slice(first, last) != (pairs, 0, 1):
        return None
    if g.target_name(pairs) != "aten.view.default" or g.shape(pairs)[-1] != 2:
        return None
    rotated = _one_user(cat, "aten.view.default")
    x = pairs.args[0]
    if rotated is None or g.shape(rotated) != g.shape(x):
        return None
    return x, rotated


def detect(node: Any, sizes: Sizes) -> Found | None:
    import torch

    from oracle.constructs import _graph as g

    forms = ((f, find(node)) for f, find in (("half", _half), ("pairwise", _pairwise)))
    form, found = next(((f, r) for f, r in forms if r is not None), ("", None))
    if found is None:
        return None
    x, rotated = found
    by_sin = _one_user(rotated, "aten.mul.Tensor")
    if by_sin is None:
        return None
    tables = [a for a in by_sin.args[:2] if a is not rotated]
    total = _one_user(by_sin, "aten.add.Tensor")
    if len(tables) != 1 or not g.is_tensor(tables[0]) or total is None:
        return None
    by_cos = [a for a in total.args[:2] if a is not by_sin]
    if len(by_cos) != 1 or g.target_name(by_cos[0]) != "aten.mul.Tensor":
        return None
    if x not in by_cos[0].args[:2]:
        return None
    source = x
    if (
        g.target_name(x) == "aten._to_copy.default"
        and g.val(x).dtype == torch.float32
        and g.is_tensor(x.args[0])
        and g.val(x.args[0]).dtype in (torch.float16, torch.bfloat16)
    ):
        source = x.args[0]
    shape, how = sizes.concrete(source)
    table, table_how = sizes.concrete(tables[0])
    params: dict[str, Any] = {
        "form": form,
        "input_shape": shape,
        "table_shape": table,
        "table_dtype": g.name(g.val(tables[0]).dtype),
        "upcast": source is not x,
    }
    dtype = g.probe_dtype(g.val(source).dtype, params)
    return g.Found(
        "rotary", g.with_sizes(params, g.worst((how, table_how))), dtype, g.module_path(node)
    )


def label(params: dict[str, Any], short: str) -> str:
    """`rotary pairwise fp32-upcast @1x16x5184x64 fp16`."""
    upcast = " fp32-upcast" if params.get("upcast") else ""
    return f"rotary {params.get('form')}{upcast} @{dims(params.get('input_shape'))} {short}"


CONSTRUCT = Construct(
    kind="rotary",
    params=("form", "input_shape", "table_shape", "table_dtype", "upcast"),
    build=build,
    readers=(Reader(("aten.neg.default",), detect),),
    scan=ScanSignature(
        unseen="a rotary embedding lowers to plain ops (slice, negate, concat, mul, add) that a "
        "scan does not tell apart from any other arithmetic"
    ),
    representative=("input_shape",),
    label=label,
)
