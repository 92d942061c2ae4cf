"""Probe fidelity: a probe must hold its traced instance as the converter sees it.

For every distinct instance the registry records (recipes.toml: kind, dtype, parameters), the
probe built from it is exported, and the construct's own detector, run over the probe's aten
graph, must find that instance again: same kind, same dtype, the same parameters, including what
the detector records of the node's signature (where a symbolic size comes from, operand dtypes,
whether sizes are data-dependent). A construct no shipped bundle holds is held to its library
regimes the same way. Torch export only (the default decompositions; the converters' tables need
an environment), so it runs in the fast tier.

Why: sam3's view_dynamic probes exported a dynamic input dim (torch.export.Dim) where the bundle's
views take `.item()` of a constant in a static-shape graph. The probes changed under 0.4.0 ->
0.4.2 and the whole program's 54 views did not. The detector recorded what it saw (`size_source`)
only after that; this test is what keeps a probe from drifting from its instance again.
"""

from __future__ import annotations

import json
import warnings
from functools import cache
from typing import Any

import pytest
import torch

from inventory.registry import load_registry
from inventory.trace.detect import detect
from oracle import constructs, probes
from oracle.constructs import _graph
from oracle.regimes import load_regimes

# Parameters that describe the traced group rather than its first member (the probe is built from
# the first member alone).
GROUP_ONLY = ("shapes_seen",)
# Known gaps found by this test, each with why: the probe's node is not its instance's. They fail
# strictly: a fix makes the test say so, and the entry goes.
STATIC_FOR_ITEM = ("the instance's sizes come from .item() in sam3's static graph; the probe takes "
                   "plain ints (a SymInt operand in the bundle, an int in the probe)")
GAPS: dict[str, str] = {
    "arange-sam3-6": STATIC_FOR_ITEM,
    "pad-sam3-4": STATIC_FOR_ITEM,
    "true_divide-sam3-5": STATIC_FOR_ITEM,
    "true_divide-sam3-4": STATIC_FOR_ITEM + "; and the divisor is a 0-dim int64 tensor, which "
                          "the probe replaces by an int",
    "cat_dynamic-sortformer-0": "the probe cats rank-3 inputs on dim 2 where the instance cats "
                                "on dim 1 of its own layout",
    "cat_dynamic-sam3-2": "the probe folds the instance's rank-5 inputs (dim 4) to rank 3",
    "cat_dynamic-sam3-3": "the probe folds the instance's rank-5 inputs (dim 4) to rank 3",
    "repeat_symbolic-sam3-0": "the probe repeats a [1, N] tensor [16, 1] times where the "
                              "instance repeats [1, 1024, 24, 24] by [1, 1, 4, 4]",
    "select_dynamic-regime-last-of-static-length": "a static select, the regime's contrast case: "
                                                   "no select_dynamic by the detector's "
                                                   "definition, yet not marked control",
}
# A library regime is no traced instance: only the parameters it states are compared (the rest
# are its builder's defaults), and torch.export raises a dynamic dim's lower bound 1 to 2 (it
# specialises sizes 0 and 1).
NEEDS_CONVERTER = {"quantize": "the probe calls coreai_torch's own quantize op, registered only "
                               "inside a converter environment"}


def _key(kind: str, dtype: str, params: dict[str, Any]) -> str:
    return json.dumps([kind, dtype, params], sort_keys=True)


@cache
def _instances() -> dict[str, list[tuple[str, str, dict[str, Any]]]]:
    """kind -> its distinct registry instances (first bundle, dtype, parameters)."""
    out: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}
    seen: set[str] = set()
    for bundle in load_registry():
        for inst in bundle.instances:
            params = {k: v for k, v in inst.params.items() if k not in GROUP_ONLY}
            key = _key(inst.kind, inst.dtype, params)
            if key not in seen and constructs.has_probe(inst.kind):
                seen.add(key)
                out.setdefault(inst.kind, []).append((bundle.name, inst.dtype, params))
    return out


def _cases() -> list[Any]:
    cases = []
    traced = _instances()
    for kind in constructs.kinds():
        if not constructs.has_probe(kind):
            continue
        if kind in traced:
            for n, (bundle, dtype, params) in enumerate(traced[kind]):
                case = f"{kind}-{bundle}-{n}"
                marks = [pytest.mark.xfail(reason=GAPS[case], strict=True)] if case in GAPS \
                    else []
                cases.append(pytest.param(kind, dtype, params, True, id=case, marks=marks))
            continue
        for r in load_regimes():
            if r.construct == kind and not r.control:
                case = f"{kind}-regime-{r.name}"
                marks = [pytest.mark.skip(reason=NEEDS_CONVERTER[kind])] \
                    if kind in NEEDS_CONVERTER else \
                    [pytest.mark.xfail(reason=GAPS[case], strict=True)] if case in GAPS else []
                cases.append(pytest.param(kind, r.spec.dtype, dict(r.spec.params), False,
                                          id=case, marks=marks))
    return cases


def _export(kind: str, dtype: str, params: dict[str, Any]) -> list[torch.fx.Node]:
    probe = probes.build({"construct": kind, "params": constructs.probe_params(kind, params),
                          "dtype": dtype, "seed": 0})
    dynamic = probe.dynamic_shapes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(probe.module, tuple(probe.inputs.values()),
                                 dynamic_shapes=tuple(dynamic.values()) if dynamic else None)
        return list(ep.run_decompositions().graph.nodes)


def _regime_view(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    # a parameter that only picks input values is not in the graph the detector reads
    out = {k: v for k, v in constructs.probe_params(kind, params).items()
           if k not in constructs.get(kind).value_params}
    for key, value in out.items():
        if key.startswith("dynamic_") and isinstance(value, list) and value[0] == 1:
            out[key] = [2, *value[1:]]
    return out


@pytest.mark.parametrize(("kind", "dtype", "params", "traced"), _cases())
def test_the_probe_holds_its_instance(kind: str, dtype: str, params: dict[str, Any],
                                      traced: bool):
    nodes = _export(kind, dtype, params)
    found = [f for f in detect(nodes, [kind]) if f.kind == kind]
    assert found, f"{kind}: the detector finds no {kind} in its own probe"
    if traced:
        wanted = _key(kind, dtype, params)
        got = [_key(f.kind, f.dtype, {k: v for k, v in f.params.items() if k not in GROUP_ONLY})
               for f in found]
    else:
        wanted = _key(kind, dtype, _regime_view(kind, params))
        got = [_key(f.kind, f.dtype, {k: v for k, v in f.params.items() if k in params})
               for f in found]
    assert wanted in got, (f"{kind}: the probe is not its instance\n  recorded {wanted}\n"
                           + "\n".join(f"  probe    {g}" for g in got))


# The signatures of sam3's view_dynamic nodes, first member of each registry group, as measured in
# the whole program `inventory verify` converts (the registry's miniature, exported with the
# recipe's steps; _graph.signature of each node the detector takes). Every one of the 54 has a
# SymInt(constant) operand and no dynamic ("d") size. The probe before #24 had
# ["tensor float16 [dx200x2]", ["SymInt(input)", "int"]] -> "float16 [dx2]".
SAM3_VIEWS = {
    "merge": {"op": "aten.view.default",
              "args": ["tensor float16 [1x200xux2]", ["SymInt(constant)", "int"]],
              "kwargs": {}, "result": "float16 [ux2]"},
    "split_heads": {"op": "aten.view.default",
                    "args": ["tensor float16 [ux256]", ["int", "int", "SymInt(constant)", "int"]],
                    "kwargs": {}, "result": "float16 [1x200xux256]"},
}


@pytest.mark.parametrize("mode", sorted(SAM3_VIEWS))
def test_sam3_view_probes_have_the_whole_programs_node_signature(mode: str):
    (params,) = [p for b, d, p in _instances()["view_dynamic"]
                 if b == "sam3" and p["mode"] == mode]
    nodes = _export("view_dynamic", "float16", params)
    views = [n for n in nodes if n.op == "call_function"
             and detect([n], ["view_dynamic"])]
    assert [_graph.signature(n) for n in views] == [SAM3_VIEWS[mode]]
    # a static-shape program: no input of the probe has a dynamic size
    inputs = [n for n in nodes if n.op == "placeholder"]
    assert all("d" not in _graph.signature_of_value(n) for n in inputs)
