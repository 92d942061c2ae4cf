"""Analysis of what the scan worker read: entry points with every `coreai.invoke` resolved to its
composite, tensors, dynamic axes.

The op histogram of an entry point resolves every `coreai.invoke`: a callee with a composite
declaration counts as one call site of that composite, however many call sites share one body
after the optimizer deduplicated identical bodies; a callee without one is inlined.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from inventory.scan.model import BundleScan, Composite, Entry, dtype_name

_HANDLE = re.compile(r"handle<tensor<((?:[0-9?]+x)*)([a-z]+[0-9]*)>>")


def _tensor(t: dict[str, Any]) -> dict[str, Any]:
    """An entry point's input or output; a state handle shows the tensor it holds."""
    out = {"name": t.get("name"), "shape": t.get("shape"), "dtype": dtype_name(t.get("dtype"))}
    if t.get("shape") is not None:
        return out
    text = str(t.get("type", ""))
    found = _HANDLE.search(text)
    if found:
        dims = [d for d in found.group(1).split("x") if d]
        return {
            **out,
            "kind": "state",
            "shape": [d if d == "?" else int(d) for d in dims],
            "dtype": dtype_name(found.group(2)),
        }
    return {**out, "kind": "token" if "token" in text else text, "dtype": None}


_RANDOM_SUFFIX = re.compile(r"^([a-z][a-z0-9_]*?)_[a-z]{8}$")


def composite_kind(graph: dict[str, Any]) -> tuple[str | None, str]:
    """What a callee is: its composite declaration, else its template_op (not serialised by
    the releases seen so far), else a private no-inline graph named `<kind>_<8 letters>`."""
    if graph.get("composite"):
        return graph["composite"], "composite_decl"
    if graph.get("template_op"):
        return graph["template_op"], "template_op"
    found = _RANDOM_SUFFIX.match(graph.get("name", ""))
    if found and graph.get("noinline") and not graph.get("public"):
        return found.group(1), "name"
    return None, ""


def resolve_entry(entry: dict[str, Any], graphs: dict[str, dict[str, Any]]) -> Entry:
    ops: Counter[str] = Counter()
    inlined: Counter[str] = Counter()
    unresolved: Counter[str] = Counter()
    uses: dict[str, dict[str, Any]] = {}
    dynamic_results = 0

    def walk(graph: dict[str, Any], mult: int, in_composite: bool, stack: tuple[str, ...]) -> None:
        nonlocal dynamic_results
        for op, n in graph["ops"].items():
            if op.endswith(".invoke"):
                continue
            inlined[op] += n * mult
            if not in_composite:
                ops[op] += n * mult
        if not in_composite:
            dynamic_results += graph.get("dynamic_results", 0) * mult
        for callee, n in graph["invokes"].items():
            target = graphs.get(callee)
            if target is None or callee in stack:
                unresolved[callee] += n * mult
                continue
            kind, declared_by = composite_kind(target)
            if kind:
                use = uses.setdefault(
                    kind, {"call_sites": 0, "nested": 0, "bodies": {}, "declared_by": set()}
                )
                use["declared_by"].add(declared_by)
                use["nested" if in_composite else "call_sites"] += n * mult
                body = use["bodies"].setdefault(
                    callee,
                    {
                        "name": callee,
                        "call_sites": 0,
                        "inputs": [dtype_name(t.get("dtype")) for t in target["inputs"]],
                        "input_shapes": [t.get("shape") for t in target["inputs"]],
                        "computes": sorted(dtype_name(d) for d in target.get("result_dtypes", {})),
                    },
                )
                body["call_sites"] += n * mult
                walk(target, n * mult, True, (*stack, callee))
            else:
                walk(target, n * mult, in_composite, (*stack, callee))

    walk(entry, 1, False, (entry["name"],))
    composites = [
        Composite(
            kind,
            u["call_sites"],
            u["nested"],
            list(u["bodies"].values()),
            "+".join(sorted(u["declared_by"])),
        )
        for kind, u in sorted(uses.items())
    ]
    dynamic = [
        f"{side} {t.get('name') or i}: [{', '.join(str(d) for d in t['shape'] or [])}]"
        for side, items in (("input", entry["inputs"]), ("output", entry["outputs"]))
        for i, t in enumerate(items)
        if t.get("dynamic")
    ]
    return Entry(
        name=entry["name"],
        inputs=[_tensor(t) for t in entry["inputs"]],
        outputs=[_tensor(t) for t in entry["outputs"]],
        ops=dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        composites=composites,
        inlined=dict(sorted(inlined.items(), key=lambda kv: (-kv[1], kv[0]))),
        dynamic=dynamic,
        dynamic_results=dynamic_results,
        unresolved=dict(unresolved),
    )


def absorb(scan: BundleScan, answer: dict[str, Any]) -> None:
    graphs = {g["name"]: g for g in answer["graphs"]}
    public = [g for g in answer["graphs"] if g.get("public")]
    scan.entries = [resolve_entry(g, graphs) for g in public]
    scan.composite_bodies = sum(1 for g in answer["graphs"] if composite_kind(g)[0])
    scan.weights = answer["weights"]
    scan.core_metadata = answer.get("metadata", {})
    if not public:
        scan.notes.append("no public graph: the bundle has no entry point")
    for e in scan.entries:
        for c in e.composites:
            if len(c.bodies) < c.call_sites + c.nested:
                scan.notes.append(
                    f"{e.name}: {c.kind} has {c.call_sites + c.nested} call site(s) sharing "
                    f"{len(c.bodies)} bod{'y' if len(c.bodies) == 1 else 'ies'} "
                    f"(identical composites deduplicated by the optimizer)"
                )
            if "name" in c.declared_by:
                scan.notes.append(
                    f"{e.name}: {c.kind} is named so but carries no composite "
                    f"declaration: counted by its name only"
                )
        if e.unresolved:
            names = ", ".join(sorted(e.unresolved))
            scan.notes.append(f"{e.name}: invoke of a graph the bundle does not hold: {names}")
    if scan.weights.get("unresolved_resources"):
        scan.notes.append(
            f"{scan.weights['unresolved_resources']} weight resource(s) could not "
            f"be read; the fingerprint leaves them out"
        )
