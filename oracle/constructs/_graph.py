"""Shared helpers of the detectors: reading one node of an exported aten graph.

Sizes: a probe takes plain ints. A static bundle's graph can still hold data-dependent sizes
(`.item()` of a tensor, e.g. SAM 3's feature-map height): those are resolved from the runtime
asserts torch.export records (Eq(u0*u1, 5184)), and the instance says so in `sizes`; dynamic
(backed) sizes take their example value. What a graph's asserts pin is worked out once per
detection run, by the `Sizes` object that run passes to every detector.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import sympy
import torch
from torch.utils._sympy.numbers import int_oo

DTYPE_NAMES = {
    torch.float32: "float32",
    torch.float16: "float16",
    torch.bfloat16: "bfloat16",
    torch.int32: "int32",
    torch.int64: "int64",
    torch.int8: "int8",
    torch.float64: "float64",
    torch.int16: "int16",
    torch.uint8: "uint8",
    torch.bool: "bool",
}
# Dtypes a probe can be built in (`module.to(dtype)`); others are recorded as float32 probes.
PROBE_DTYPES = ("float32", "float16", "bfloat16")

FALLBACK_SIZE = 16  # a data-dependent size nothing in the graph pins down
# How a size was known, best first.
HOW = ("static", "dynamic", "asserted", "assumed", "unresolved")
SIZES_NOTE = {
    "dynamic": "dynamic: example sizes",
    "asserted": "data-dependent (.item()): sizes pinned by the graph's runtime asserts",
    "assumed": "data-dependent (.item()): sizes taken as equal factors of a runtime-asserted "
    "product",
    "unresolved": f"data-dependent (.item()): unresolved, {FALLBACK_SIZE} assumed",
}


@dataclass(frozen=True)
class Found:
    kind: str
    params: dict[str, Any]
    dtype: str
    module: str
    # The module of an op whose tensors the probe also takes (a batch norm's depthwise conv),
    # so that `--weights` can read that instance's own tensors by name.
    producer: str = ""


# ---- what a node is ----------------------------------------------------------------------------


def target_name(node: Any) -> str:
    """The op of a node; "" for a constant operand (an int or float a detector walks onto)."""
    if not isinstance(node, torch.fx.Node):
        return ""
    target = node.target
    name = getattr(target, "name", None)
    if callable(name):  # OpOverload.name() gives "aten::convolution" style
        ns, _, rest = name().partition("::")
        op, _, overload = rest.partition(".")
        return f"{ns}.{op}.{overload or 'default'}"
    return str(target)


def shape(node: Any) -> list[int | str]:
    v = node.meta.get("val") if hasattr(node, "meta") else None
    if v is None:
        return []
    return [int(d) if isinstance(d, int) or str(d).isdigit() else str(d) for d in v.shape]


def dtype(node: Any) -> str:
    v = node.meta.get("val") if hasattr(node, "meta") else None
    dt = getattr(v, "dtype", None)
    return (
        DTYPE_NAMES.get(dt, str(dt))
        if isinstance(dt, torch.dtype)
        else str(getattr(v, "dtype", "?"))
    )


def module_path(node: Any) -> str:
    """The innermost module the op came from, as a dotted path (nn_module_stack)."""
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return "<top>"
    path, _cls = list(stack.values())[-1]
    return str(path).removeprefix("L['self'].").replace("L['self']", "") or "<top>"


def module_class(node: Any) -> str:
    stack = node.meta.get("nn_module_stack") or {}
    if not stack:
        return ""
    _path, cls = list(stack.values())[-1]
    return str(getattr(cls, "__name__", cls)).rsplit(".", 1)[-1]


def val(x: Any) -> Any:
    return x.meta.get("val") if isinstance(x, torch.fx.Node) else None


def is_tensor(x: Any) -> bool:
    return isinstance(val(x), torch.Tensor)


def name(dtype: Any) -> str:
    return DTYPE_NAMES.get(dtype, str(dtype).removeprefix("torch."))


def probe_dtype(dtype: Any, params: dict[str, Any]) -> str:
    """The probe's dtype for a tensor of `dtype`; a non-float tensor (an int cat, a bool pad)
    makes a float32 probe, and `tensor_dtype` says what the graph holds."""
    named = name(dtype)
    if named in PROBE_DTYPES:
        return named
    params["tensor_dtype"] = named
    return "float32"


def arg(node: Any, index: int, key: str, default: Any = None) -> Any:
    if len(node.args) > index:
        return node.args[index]
    return node.kwargs.get(key, default)


def prod(values: Iterable[int]) -> int:
    return math.prod(int(v) for v in values)


# ---- sizes: static, dynamic (backed) or data-dependent (unbacked) -----------------------------


def worst(hows: Iterable[str]) -> str:
    return max(hows, key=HOW.index, default="static")


def is_symbolic(v: Any) -> bool:
    if isinstance(v, torch.fx.Node):
        v = v.meta.get("val")
    return isinstance(v, torch.SymInt) and not v.node.expr.is_number


def backed(env: Any) -> dict[Any, Any]:
    """A shape env's example values of its backed (dynamic) symbols."""
    values = getattr(env, "backed_var_to_val", None)  # torch >= 2.13 names it so
    return values if values is not None else getattr(env, "var_to_val", {})


def asserted(env: Any) -> tuple[dict[Any, int], dict[Any, int]]:
    """What a shape env's runtime asserts pin: {expr: N} for each Eq(expr, N), and {symbol: root}
    for the symbols of a product asserted equal to N when N is a perfect power (an assumption:
    equal factors, as a square feature map's height and width)."""
    exact: dict[Any, int] = {}
    for asserts in (getattr(env, "deferred_runtime_asserts", None) or {}).values():
        for ra in asserts:
            expr = getattr(ra, "expr", None)
            if not isinstance(expr, sympy.Eq):
                continue
            lhs, rhs = expr.args
            if lhs.is_number:
                lhs, rhs = rhs, lhs
            if rhs.is_number and not lhs.is_number:
                exact[lhs] = int(rhs)
    assumed: dict[Any, int] = {}
    for expr, n in exact.items():
        if expr.is_Mul and all(f.is_Symbol for f in expr.args):
            factors, k = expr.args, len(expr.args)
        elif expr.is_Pow and expr.base.is_Symbol and expr.exp.is_Integer:
            factors, k = (expr.base,), int(expr.exp)
        else:
            continue
        root = round(n ** (1.0 / k)) if n > 0 else 0
        if root**k == n:
            for f in factors:
                assumed.setdefault(f, root)
    return exact, assumed


@dataclass
class Sizes:
    """Resolves sizes to plain ints for one detection run. What each shape env's asserts pin is
    read once per run and kept here (keyed by the env object itself, which the run keeps alive),
    never in module state."""

    _facts: list[tuple[Any, tuple[dict[Any, int], dict[Any, int]]]] = field(default_factory=list)

    def facts(self, env: Any) -> tuple[dict[Any, int], dict[Any, int]]:
        for known, facts in self._facts:
            if known is env:
                return facts
        facts = asserted(env)
        self._facts.append((env, facts))
        return facts

    def resolve(self, v: Any) -> tuple[int, str]:
        """A size as a plain int, and how it was known (one of HOW)."""
        if isinstance(v, torch.fx.Node):
            v = v.meta.get("val")
        if isinstance(v, int):
            return int(v), "static"
        if not isinstance(v, torch.SymInt):
            return FALLBACK_SIZE, "unresolved"
        node = v.node
        expr = node.expr
        if expr.is_number:
            return int(expr), "static"
        hint = getattr(node, "hint", None)
        if hint is not None:
            return int(hint), "dynamic"
        env = node.shape_env
        exact, assumed = self.facts(env)
        if expr in exact:
            return exact[expr], "asserted"
        how, subs = "asserted", {}
        examples = backed(env)
        for sym in expr.free_symbols:
            if sym in examples:
                subs[sym] = examples[sym]
            elif sym in exact:
                subs[sym] = exact[sym]
            elif sym in assumed:
                subs[sym] = assumed[sym]
                how = worst([how, "assumed"])
            else:
                subs[sym] = FALLBACK_SIZE
                how = "unresolved"
        try:
            return int(expr.xreplace(subs)), how
        except (TypeError, ValueError):
            return FALLBACK_SIZE, "unresolved"

    def concrete(self, x: Any) -> tuple[list[int], str]:
        """The shape of a node's value as plain ints, and how its sizes were known."""
        v = val(x)
        if v is None or not hasattr(v, "shape"):
            return [], "static"
        dims = [self.resolve(d) for d in v.shape]
        return [d for d, _ in dims], worst(h for _, h in dims)

    def number(self, v: Any) -> tuple[int | float | None, str]:
        """A scalar argument as a Python number (a SymInt resolved), and how it was known."""
        if isinstance(v, bool):
            return int(v), "static"
        if isinstance(v, int | float):
            return v, "static"
        value = val(v) if isinstance(v, torch.fx.Node) else v
        if isinstance(value, torch.SymInt):
            return self.resolve(value)
        return None, "unresolved"

    def symbol_value(self, env: Any, sym: Any) -> int:
        examples = backed(env)
        if sym in examples:
            return int(examples[sym])
        exact, assumed = self.facts(env)
        return int(exact.get(sym, assumed.get(sym, FALLBACK_SIZE)))


# Where a symbolic size comes from, as the converter sees it (recorded by the detectors whose
# probe must rebuild it the same way):
#   "input"    a dynamic input dimension (a backed symbol, read with aten.sym_size.int): the
#              program keeps a shape computation on its input, which no optimizer can fold;
#   "constant" `.item()` of a tensor computed from the graph's constants alone (SAM 3's
#              `spatial_shapes`, a torch.tensor of python ints): an unbacked SymInt that reaches
#              the converter as a mixed SymInt/int list, which the optimizer folds to a static
#              shape, so the shipped program holds a plain reshape;
#   "data"     `.item()` of a tensor that depends on a graph input: a run-time size.
SIZE_SOURCES = ("input", "constant", "data")
# torch.export names the placeholders of parameters, buffers and lifted constants with these
# prefixes (its placeholder naming pass); every other placeholder is a user input.
_STATE_PREFIXES = ("p_", "b_", "c_")


def is_state(node: Any) -> bool:
    """A parameter, buffer or lifted constant of the exported module (not a user input)."""
    return getattr(node, "op", "") == "placeholder" and str(node.name).startswith(_STATE_PREFIXES)


def size_source(arg: Any) -> str:
    """Where a symbolic size (an fx.Node argument holding a SymInt) comes from: one of
    SIZE_SOURCES. Backed symbols are dynamic input dims; for an unbacked one, whether the
    tensors its `.item()` reads depend on a user input decides between "data" and "constant"."""
    v = val(arg) if isinstance(arg, torch.fx.Node) else arg
    if isinstance(v, torch.SymInt):
        free = v.node.expr.free_symbols
        if free and all(s in backed(v.node.shape_env) for s in free):
            return "input"
    if not isinstance(arg, torch.fx.Node):
        return "data"  # a bare unbacked SymInt: nothing to follow, assume the worst
    seen: set[torch.fx.Node] = set()
    todo = [arg]
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        if node.op == "placeholder" and not node.name.startswith(_STATE_PREFIXES):
            return "data"
        todo.extend(node.all_input_nodes)
    return "constant"


def _origin(graph_of: Any, symbol: Any) -> Any:
    """The node of `graph_of`'s graph whose value is the unbacked `symbol` itself (the
    `.item()` that made it), or None."""
    for n in graph_of.graph.nodes:
        v = val(n)
        if isinstance(v, torch.SymInt) and v.node.expr == symbol:
            return n
    return None


def item_layout(x: Any) -> tuple[list[int | str], str] | None:
    """A node's shape with each data-dependent size (from `.item()`) spelt over the unbacked
    sizes it is made of, named in order of first appearance (`[1, 200, "u0", 2]`,
    `[1, 8, 200, "u0*u1"]`; static and dynamic sizes as their values are resolved elsewhere:
    0 here), and where those sizes come from (SIZE_SOURCES: "data" if any of them reads an
    input); None when no size is data-dependent. A probe rebuilds such a shape from `.item()`
    the same way (`_probe.item_expand`), so the converter sees the same kind of size."""
    v = val(x)
    if not isinstance(v, torch.Tensor):
        return None
    names: dict[Any, sympy.Symbol] = {}
    layout: list[int | str] = []
    dims: list[Any] = list(v.shape)  # SymInts where symbolic (torch types a Size as ints)
    for d in dims:
        if not is_symbolic(d):
            layout.append(0)
            continue
        examples = backed(d.node.shape_env)
        free = sorted(d.node.expr.free_symbols, key=str)
        unbacked = [f for f in free if f not in examples]
        if not unbacked:
            layout.append(0)
            continue
        for f in sorted(unbacked, key=lambda f: str(d.node.expr).find(str(f))):
            names.setdefault(f, sympy.Symbol(f"u{len(names)}"))
        layout.append(str(d.node.expr.xreplace(names)))
    if not names:
        return None
    sources = [size_source(o) if (o := _origin(x, f)) is not None else "data" for f in names]
    return layout, ("data" if "data" in sources else "constant")


def with_layout(params: dict[str, Any], x: Any, shape: list[int]) -> None:
    """Record a data-dependent shape's layout (`item_shape`: the shape's values, each
    data-dependent size spelt as in `item_layout`) and its `size_source`."""
    found = item_layout(x)
    if found is None:
        return
    layout, source = found
    params["item_shape"] = [
        d if isinstance(d, str) else int(s) for d, s in zip(layout, shape, strict=True)
    ]
    params["size_source"] = source


def size_range(v: Any, value: int, at_least: int = 1) -> list[int]:
    """[min, max] for a probe's dynamic dim standing for a symbolic size: the symbol's own
    bounds where finite, else [at_least, max(64, 2 * value)]."""
    if isinstance(v, torch.fx.Node):
        v = v.meta.get("val")
    if isinstance(v, torch.SymInt):
        return range_of(v.node.shape_env, v.node.expr, value, at_least)
    return [min(at_least, value), max(64, 2 * value)]


def range_of(env: Any, expr: Any, value: int, at_least: int = 1) -> list[int]:
    lo, hi = at_least, max(64, 2 * value)
    try:
        bounds = env.bound_sympy(expr)
    except Exception:  # noqa: BLE001 - no bounds: keep the defaults
        bounds = None
    if bounds is not None:
        if bounds.lower not in (-int_oo, sympy.S.NegativeInfinity):
            lo = max(lo, int(bounds.lower))
        if bounds.upper not in (int_oo, sympy.S.Infinity):
            hi = int(bounds.upper)
    return [min(lo, value), max(hi, value)]


def with_sizes(params: dict[str, Any], how: str) -> dict[str, Any]:
    if how != "static":
        params["sizes"] = SIZES_NOTE[how]
    return params


# ---- a node's signature: what the converter's lowering of it depends on -----------------------


def _dim_kind(d: Any) -> str:
    """A size as the converter sees it: an int, `d` a dynamic input dim (backed), `u` a
    data-dependent one (unbacked, from an .item())."""
    if isinstance(d, int) or (isinstance(d, torch.SymInt) and d.node.expr.is_number):
        return str(int(d))
    free = d.node.expr.free_symbols
    return "d" if free and all(s in backed(d.node.shape_env) for s in free) else "u"


def _operand(a: Any) -> Any:
    if isinstance(a, list | tuple):
        return [_operand(x) for x in a]
    if isinstance(a, torch.fx.Node):
        v = val(a)
        if isinstance(v, torch.Tensor):
            return f"tensor {name(v.dtype)} [{'x'.join(_dim_kind(d) for d in v.shape)}]"
        if isinstance(v, torch.SymInt):
            return "int" if v.node.expr.is_number else f"SymInt({size_source(a)})"
        if isinstance(v, torch.SymFloat | torch.SymBool):
            return type(v).__name__
        return type(v).__name__
    if a is None or isinstance(a, bool | int | float | str):
        return type(a).__name__
    return type(a).__name__  # a dtype, a device, a layout


def signature(node: Any) -> dict[str, Any]:
    """The op overload, each operand's kind (a tensor with its dtype and sizes, int, float,
    SymInt with where it comes from (SIZE_SOURCES), lists of these) and the result's dtype and
    sizes: what decides which lowering path a converter takes. Two nodes with one signature are
    lowered alike; a probe's node must have its traced instance's
    (tests/oracle/constructs/test_probe_fidelity.py).
    """
    out = val(node)
    result = (
        f"{name(out.dtype)} [{'x'.join(_dim_kind(d) for d in out.shape)}]"
        if isinstance(out, torch.Tensor)
        else type(out).__name__
    )
    return {
        "op": target_name(node),
        "args": [_operand(a) for a in node.args],
        "kwargs": {k: _operand(v) for k, v in sorted(node.kwargs.items())},
        "result": result,
    }


def signature_of_value(node: Any) -> str:
    """A node's value as signature() writes an operand (e.g. `tensor float16 [1x200xux2]`)."""
    return str(_operand(node))
