"""Construct detection over an exported aten graph: the engine that runs the detectors.

Reads `torch.export` nodes, never op-name histograms of a bundle: each detector (in its
construct's module, `oracle/constructs/<kind>.py`) looks at one aten overload with its real
arguments and the fake tensors torch.export attaches to every node, so an instance carries exact
parameters and shapes. Instances with identical parameters are grouped with a count and the module
paths they came from.

An instance's parameters are the keys its construct's probe takes (`Construct.params`), valued so
that the probe reproduces the op in the bundle's regime (operand dtypes, static or symbolic sizes,
explicit arguments), plus descriptive extras the probe ignores. Where a probe cannot express what
the graph holds, the closest thing it can express is recorded and an extra says what the graph
really has. Trivial ops (division, padding, cat...) are grouped by what matters to their probe
(`Construct.representative`); the shape is then a representative one (the first in graph order)
and `shapes_seen` lists the others.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from oracle import constructs
from oracle.constructs._construct import Detector
from oracle.constructs._graph import Found, Sizes, target_name

SHAPES_SHOWN = 8

__all__ = ["Found", "Grouped", "detect", "detected_kinds", "group"]


def detected_kinds() -> list[str]:
    """The construct kinds a trace looks for (recorded with each trace as `detected`)."""
    return sorted(c.kind for c in constructs.detected())


def detect(graph_nodes: Iterable[Any], kinds: Iterable[str] | None = None) -> list[Found]:
    wanted = set(kinds) if kinds is not None else set(detected_kinds())
    by_op: dict[str, list[Detector]] = {}
    for construct in constructs.detected():
        if construct.kind not in wanted:
            continue
        for reader in construct.readers:
            for op in reader.ops:
                by_op.setdefault(op, []).append(reader.detect)
    sizes = Sizes()  # what this graph's runtime asserts pin, for this run only
    found = []
    for node in graph_nodes:
        if node.op != "call_function":
            continue
        for fn in by_op.get(target_name(node), []):
            hit = fn(node, sizes)
            if hit is not None:
                found.append(hit)
    return found


@dataclass(frozen=True)
class Grouped:
    kind: str
    params: dict[str, Any]
    dtype: str
    count: int
    modules: tuple[str, ...]
    # per member, the module whose tensors its probe also takes ("" for none): see Found
    producers: tuple[str, ...] = ()


def group(found: list[Found]) -> list[Grouped]:
    """Instances with the same parameters become one, with a count, in graph order. For a kind
    with `Construct.representative`, the parameters listed there do not separate instances: the
    group takes its first member's and lists the distinct values of the first one in
    `shapes_seen`."""
    representative = {c.kind: c.representative for c in constructs.all_constructs()}
    order: list[tuple] = []
    acc: dict[tuple, list[Found]] = {}
    for f in found:
        loose = representative.get(f.kind, ())
        key = (f.kind, f.dtype, repr(sorted((k, v) for k, v in f.params.items() if k not in loose)))
        if key not in acc:
            order.append(key)
            acc[key] = []
        acc[key].append(f)
    out = []
    for k in order:
        members = acc[k]
        first = members[0]
        params = dict(first.params)
        loose = representative.get(first.kind, ())
        if loose:
            seen: list[str] = []
            for f in members:
                shown = _shown(f.params.get(loose[0]))
                if shown not in seen:
                    seen.append(shown)
            if len(seen) > 1:
                more = len(seen) - SHAPES_SHOWN
                params["shapes_seen"] = seen[:SHAPES_SHOWN] + (
                    [f"and {more} more"] if more > 0 else []
                )
        producers = tuple(f.producer for f in members) if any(f.producer for f in members) else ()
        out.append(
            Grouped(
                first.kind,
                params,
                first.dtype,
                len(members),
                tuple(f.module for f in members),
                producers,
            )
        )
    return out


def _shown(value: Any) -> str:
    if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
        return " + ".join(_shown(v) for v in value)
    if isinstance(value, list):
        return "x".join(str(v) for v in value) or "scalar"
    return str(value)
