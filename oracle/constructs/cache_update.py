"""A streaming state's update, written the way torch.export can see through: the state arrives as
a graph input and its next value is built from it with slices and a cat (no scatter, no `.item()`).
Three forms, each a recipe's functional rewrite of an in-place upstream update:

* `shift`: a KV cache as a fixed-capacity shift register, `cat([cache[:, :, t:], new], dim=2)`
  (pocket-tts's Mimi decoder, `RingAttention`: the oldest t slots drop out, t new ones enter);
* `history`: a streaming convolution's carried input, `joined = cat([prev, x], -1)`, the conv
  reads `joined`, and its last `prev` samples are the next `prev`;
* `overlap_add`: a streaming transposed convolution's carried partial, the previous tail added
  onto the head of this step's output, whose own tail (minus the bias, which the next step's
  output adds again) is the next partial.

The graph-state commit that follows in a `--graph-state` export (`state.copy_(new)`, an input
mutation) is the pipeline's, not this construct's: the probe returns the new state as an output.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oracle.constructs._construct import Construct, Reader, ScanSignature, dims

if TYPE_CHECKING:
    import torch

    from oracle.constructs._graph import Found, Sizes
    from oracle.constructs._probe import Built

FORMS = ("shift", "history", "overlap_add")
# a slice to the end of an axis, as torch.export writes it
END = 2**63 - 1

# ---- the probe --------------------------------------------------------------------------------
# The state and this step's input (`x`) of their recorded shapes; `dim` the axis the update runs
# along (non-negative, as the detector records it). `shift`: x holds the new entries (its size
# on dim is how many slots shift); `history`: x is the step's input, the state its carried
# samples; `overlap_add`: x is the step's transposed-conv output, the state the carried partial
# (bias: the conv's bias is taken back off the new partial).


def build(params: dict[str, Any], gen: torch.Generator, values: str) -> Built:
    import torch

    from oracle.constructs import _probe as p

    class _Update(torch.nn.Module):
        def __init__(self, form: str, dim: int, bias: torch.Tensor | None) -> None:
            super().__init__()
            self.form = form
            self.dim = dim
            self.bias = None if bias is None else torch.nn.Parameter(bias)

        def forward(self, state: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
            d, kept = self.dim, state.shape[self.dim]
            if self.form == "shift":
                return (torch.cat([_slice(state, d, x.shape[d], END), x], dim=d),)
            if self.form == "history":
                joined = torch.cat([state, x], dim=d)
                return joined, _slice(joined, d, -kept, END)
            # overlap_add (y[..., :pt] + partial, then y's tail, as the recipes write it)
            head = _slice(x, d, 0, kept) + state
            y = torch.cat([head, _slice(x, d, kept, END)], dim=d)
            tail = _slice(y, d, -kept, END)
            if self.bias is not None:
                tail = tail - self.bias.unsqueeze(1)
            return _slice(y, d, 0, -kept), tail

    form = str(params["form"])
    if form not in FORMS:
        raise ValueError(f"form {form!r} is not one of {', '.join(FORMS)}")
    state_shape = [int(v) for v in params["state_shape"]]
    shape = [int(v) for v in params["input_shape"]]
    dim = int(params["dim"])
    if not 0 <= dim < len(shape) or len(state_shape) != len(shape):
        raise ValueError(f"dim {dim} of {state_shape} and {shape} is not an axis of both")
    if form == "shift" and not 0 < shape[dim] <= state_shape[dim]:
        raise ValueError(f"{shape[dim]} new entries do not fit a cache of {state_shape[dim]}")
    if form == "overlap_add" and shape[dim] <= state_shape[dim]:
        raise ValueError(f"an output of {shape[dim]} has no head beyond {state_shape[dim]}")
    bias = None
    if form == "overlap_add" and params.get("bias"):
        bias = torch.randn(shape[1], generator=gen) * 0.5
    # a carried state looks like the activations it was cut from
    state = torch.randn(state_shape, generator=gen)
    x = torch.randn(shape, generator=gen)
    if values == "adversarial":  # a few large activations, as a residual stream carries
        state = state * (1.0 + 50.0 * (torch.rand(state_shape, generator=gen) > 0.99))
        x = x * (1.0 + 50.0 * (torch.rand(shape, generator=gen) > 0.99))
    return p.Built(_Update(form, dim, bias), {"state": state, "x": x})


def _slice(x: torch.Tensor, dim: int, start: int, end: int) -> torch.Tensor:
    """x sliced on `dim` the way `x[..., start:end]` writes it (aten.slice.Tensor, negative
    bounds kept as written)."""
    import torch

    return torch.ops.aten.slice.Tensor(x, dim, start, end)


# ---- the detector ------------------------------------------------------------------------------
# From the cat, whose operands say the form: a slice of a graph input from t to the end, then
# the new entries (`shift`); a graph input, then the step's input, and a slice of the cat's last
# `prev` samples (`history`); a graph input added onto a head slice, then the rest of the same
# tensor (`overlap_add`, `bias` when the new partial has a parameter's unsqueeze taken off). A
# cat of anything else (of activations, of parameters, a cat whose tail no one keeps) is none.


def _input(node: Any) -> bool:
    """A user input of the exported program (where a state arrives), not a parameter."""
    from oracle.constructs import _graph as g

    return getattr(node, "op", "") == "placeholder" and not g.is_state(node)


def _slice_of(node: Any) -> tuple[Any, int, int, int] | None:
    """(source, dim, start, end) of a unit-step slice, dim non-negative, or None."""
    from oracle.constructs import _graph as g

    if g.target_name(node) != "aten.slice.Tensor" or len(node.args) < 2:
        return None
    source, dim = node.args[0], node.args[1]
    start = node.args[2] if len(node.args) > 2 else 0
    end = node.args[3] if len(node.args) > 3 else END
    step = node.args[4] if len(node.args) > 4 else 1
    if not all(isinstance(v, int) for v in (dim, start, end)) or step != 1:
        return None
    rank = len(g.shape(source))
    return source, dim + rank if dim < 0 else dim, start, end


def _size(node: Any, dim: int) -> int:
    """A node's static size on `dim`; -1 for a symbolic one (a static state's update has none)."""
    from oracle.constructs import _graph as g

    size = g.shape(node)[dim]
    return size if isinstance(size, int) else -1


def _tail(node: Any, dim: int, size: int) -> Any:
    """The user of `node` that slices its last `size` entries on `dim`, or None."""
    total = _size(node, dim)
    if total < 0 or size < 0:
        return None
    for user in node.users:
        cut = _slice_of(user)
        if cut is None or cut[0] is not node or cut[1] != dim or cut[3] < total:
            continue
        if cut[2] in (-size, total - size):
            return user
    return None


def _debiased(tail: Any) -> bool:
    """The new partial has a parameter's unsqueeze taken off (a transposed conv's bias)."""
    from oracle.constructs import _graph as g

    for user in tail.users:
        if g.target_name(user) != "aten.sub.Tensor" or user.args[0] is not tail:
            continue
        bias = user.args[1]
        if g.target_name(bias) == "aten.unsqueeze.default" and g.is_state(bias.args[0]):
            return True
    return False


def _form(node: Any, dim: int) -> tuple[str, Any, Any, bool] | None:
    """(form, state, step input, bias) of a cat along `dim` that updates a state, or None."""
    from oracle.constructs import _graph as g

    first, second = node.args[0]
    kept = _slice_of(first)
    if kept is not None and _input(kept[0]) and kept[1] == dim:
        state, size, entering = kept[0], _size(kept[0], dim), _size(second, dim)
        if 0 < kept[2] == entering and kept[3] >= size and g.shape(node) == g.shape(state):
            return "shift", state, second, False
    if _input(first) and _tail(node, dim, _size(first, dim)) is not None:
        return "history", first, second, False
    if g.target_name(first) == "aten.add.Tensor":
        states = [a for a in first.args[:2] if _input(a)]
        heads = [_slice_of(a) for a in first.args[:2] if not _input(a)]
        rest = _slice_of(second)
        if len(states) != 1 or len(heads) != 1 or heads[0] is None or rest is None:
            return None
        state, (y, hdim, start, end), size = states[0], heads[0], _size(states[0], dim)
        if size < 0 or (y, hdim, start, end) != (rest[0], dim, 0, size) or rest[1:3] != (dim, size):
            return None
        tail = _tail(node, dim, size)
        if tail is None:
            return None
        return "overlap_add", state, y, _debiased(tail)
    return None


def detect(node: Any, sizes: Sizes) -> Found | None:
    from oracle.constructs import _graph as g

    operands = node.args[0]
    if len(operands) != 2 or not all(g.is_tensor(a) for a in operands):
        return None
    rank = len(g.shape(node))
    dim = g.arg(node, 1, "dim", 0)
    if not isinstance(dim, int):
        return None
    dim = dim + rank if dim < 0 else dim
    found = _form(node, dim)
    if found is None:
        return None
    form, state, x, bias = found
    state_shape, how = sizes.concrete(state)
    shape, how_x = sizes.concrete(x)
    params: dict[str, Any] = {
        "form": form,
        "dim": dim,
        "state_shape": state_shape,
        "input_shape": shape,
        "bias": bias,
    }
    dtype = g.probe_dtype(g.val(state).dtype, params)
    return g.Found(
        "cache_update", g.with_sizes(params, g.worst((how, how_x))), dtype, g.module_path(node)
    )


def label(params: dict[str, Any], short: str) -> str:
    """`cache update shift dim=2 1x8x64x64 <- 1x8x4x64 fp16`."""
    bias = " bias" if params.get("bias") else ""
    return (
        f"cache update {params.get('form')}{bias} dim={params.get('dim')} "
        f"{dims(params.get('state_shape'))} <- {dims(params.get('input_shape'))} {short}"
    )


CONSTRUCT = Construct(
    kind="cache_update",
    params=("form", "dim", "state_shape", "input_shape", "bias"),
    build=build,
    readers=(Reader(("aten.cat.default",), detect),),
    scan=ScanSignature(
        unseen="a state's update lowers to slices, a concat and adds a scan does not tell apart "
        "from any other concat"
    ),
    representative=("state_shape", "input_shape"),
    label=label,
)
