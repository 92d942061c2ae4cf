"""Probe fidelity: a probe must hold its traced instance as the converter sees it.

For every distinct instance the registry records (recipes.toml: kind, dtype, parameters), the
probe built from it is exported, and the construct's own detector, run over the probe's aten
graph, must find that instance again: same kind, same dtype, the same parameters, including what
the detector records of the node's signature (where a symbolic size comes from, operand dtypes,
whether sizes are data-dependent). A construct no shipped bundle holds is held to its library
regimes the same way. Torch export only (the default decompositions; the converters' tables need
an environment), so it runs in the fast tier, except for the kinds whose probe calls an op only a
converter environment registers (quantize): those are built, exported and read back in one.
There is no expected failure and no skip: a probe that does not hold its instance fails.

Why: sam3's view_dynamic probes exported a dynamic input dim (torch.export.Dim) where the bundle's
views take `.item()` of a constant in a static-shape graph. The probes changed under 0.4.0 ->
0.4.2 and the whole program's 54 views did not. The detector recorded what it saw (`size_source`)
only after that; this test is what keeps a probe from drifting from its instance again.
"""

from __future__ import annotations

import json
import subprocess
import warnings
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import torch

from inventory.registry import load_registry
from inventory.trace.detect import detect
from oracle import constructs
from oracle.catalog.regimes import load_regimes
from oracle.constructs import _graph
from oracle.workers import probes

ROOT = Path(__file__).resolve().parents[3]
# Parameters that describe the traced group rather than its first member (the probe is built from
# the first member alone).
GROUP_ONLY = ("shapes_seen",)
# Constructs whose probe calls an op only a converter environment registers (coreai-torch's own
# quantize ops): their regimes are built, exported and read back inside one (the slow tier).
IN_ENVIRONMENT = ("quantize",)


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


def _cases(in_environment: bool = False) -> list[Any]:
    """Every distinct traced instance and, for a kind no bundle holds, every library regime
    that is not a control; `in_environment`: those of the kinds built in a converter
    environment only (the others otherwise)."""
    cases = []
    traced = _instances()
    for kind in constructs.kinds():
        if not constructs.has_probe(kind) or (kind in IN_ENVIRONMENT) != in_environment:
            continue
        if kind in traced:
            for n, (bundle, dtype, params) in enumerate(traced[kind]):
                cases.append(pytest.param(kind, dtype, params, True, id=f"{kind}-{bundle}-{n}"))
            continue
        for r in load_regimes():
            if r.construct == kind and not r.control:
                cases.append(
                    pytest.param(
                        kind, r.spec.dtype, dict(r.spec.params), False, id=f"{kind}-regime-{r.name}"
                    )
                )
    return cases


def _export(kind: str, dtype: str, params: dict[str, Any]) -> list[torch.fx.Node]:
    probe = probes.build(
        {
            "construct": kind,
            "params": constructs.probe_params(kind, params),
            "dtype": dtype,
            "seed": 0,
        }
    )
    dynamic = probe.dynamic_shapes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(
            probe.module,
            tuple(probe.inputs.values()),
            dynamic_shapes=tuple(dynamic.values()) if dynamic else None,
        )
        return list(ep.run_decompositions(_keeping(kind)).graph.nodes)


def _keeping(kind: str) -> dict[Any, Any]:
    """torch's default decompositions without the ops the construct reads: a kind that reads an
    op coreai-torch's table keeps whole (sdpa, silu) is traced from a graph that holds it, so its
    probe is held in the same form (the other kinds read ops the default table keeps anyway)."""
    table = torch.export.default_decompositions()
    for reader in constructs.get(kind).readers:
        for name in reader.ops:
            ns, op, overload = name.split(".")
            table.pop(getattr(getattr(getattr(torch.ops, ns), op), overload), None)
    return dict(table)


def _regime_view(kind: str, params: dict[str, Any]) -> dict[str, Any]:
    """A library regime is no traced instance: only the parameters it states are compared (the
    rest are its builder's defaults), and torch.export raises a dynamic dim's lower bound 1 to 2
    (it specialises sizes 0 and 1)."""
    # a parameter that only picks input values is not in the graph the detector reads
    out = {
        k: v
        for k, v in constructs.probe_params(kind, params).items()
        if k not in constructs.get(kind).value_params
    }
    for key, value in out.items():
        if key.startswith("dynamic_") and isinstance(value, list) and value[0] == 1:
            out[key] = [2, *value[1:]]
    return out


def _holds(
    kind: str,
    dtype: str,
    params: dict[str, Any],
    traced: bool,
    found: list[tuple[str, str, dict[str, Any]]],
) -> None:
    """The detector's findings (kind, dtype, parameters) in the probe's own graph hold the
    instance (or, for a regime, the parameters it states)."""
    found = [f for f in found if f[0] == kind]
    assert found, f"{kind}: the detector finds no {kind} in its own probe"
    if traced:
        wanted = _key(kind, dtype, params)
        got = [_key(k, d, {n: v for n, v in p.items() if n not in GROUP_ONLY}) for k, d, p in found]
    else:
        wanted = _key(kind, dtype, _regime_view(kind, params))
        got = [_key(k, d, {n: v for n, v in p.items() if n in params}) for k, d, p in found]
    assert wanted in got, (
        f"{kind}: the probe is not its instance\n  recorded {wanted}\n"
        + "\n".join(f"  probe    {g}" for g in got)
    )


@pytest.mark.parametrize(("kind", "dtype", "params", "traced"), _cases())
def test_the_probe_holds_its_instance(kind: str, dtype: str, params: dict[str, Any], traced: bool):
    nodes = _export(kind, dtype, params)
    _holds(
        kind, dtype, params, traced, [(f.kind, f.dtype, f.params) for f in detect(nodes, [kind])]
    )


_IN_ENVIRONMENT = """
import json, sys, warnings
warnings.filterwarnings("ignore")
sys.path.insert(0, {root!r})
import torch
from inventory.trace.detect import detect
from oracle import constructs
from oracle.workers import probes
out = {{}}
for key, (kind, dtype, params) in json.loads(sys.stdin.read()).items():
    probe = probes.build({{"construct": kind, "params": constructs.probe_params(kind, params),
                          "dtype": dtype, "seed": 0}})
    ep = torch.export.export(probe.module, tuple(probe.inputs.values()))
    nodes = list(ep.run_decompositions().graph.nodes)
    out[key] = [[f.kind, f.dtype, f.params] for f in detect(nodes, [kind])]
print(json.dumps(out))
"""


@cache
def _found_in_environment(python: str) -> dict[str, Any]:
    """What the detector reads back from each in-environment case's probe, all exported in one
    subprocess of the environment (the way the worker builds them there)."""
    wanted = {c.id: list(c.values[:3]) for c in _cases(in_environment=True)}
    proc = subprocess.run(
        [python, "-c", _IN_ENVIRONMENT.format(root=str(ROOT))],
        input=json.dumps(wanted),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize(("kind", "dtype", "params", "traced"), _cases(in_environment=True))
def test_the_probe_holds_its_instance_in_a_converter_environment(
    kind: str, dtype: str, params: dict[str, Any], traced: bool, env, request
):
    found = _found_in_environment(str(env("0.4.2").python))[request.node.callspec.id]
    _holds(kind, dtype, params, traced, [(k, d, p) for k, d, p in found])


def test_every_case_is_checked_somewhere():
    """No kind is left out of both lists (a kind built only in an environment is still held)."""
    ids = [c.id for c in _cases()] + [c.id for c in _cases(in_environment=True)]
    assert len(ids) == len(set(ids))
    assert any(i.startswith("quantize-") for i in ids)
    assert {i.split("-")[0] for i in ids} == {
        k for k in constructs.kinds() if constructs.has_probe(k)
    }


# The signatures of sam3's view_dynamic nodes, first member of each registry group, as measured in
# the whole program `inventory verify` converts (the registry's miniature, exported with the
# recipe's steps; _graph.signature of each node the detector takes). Every one of the 54 has a
# SymInt(constant) operand and no dynamic ("d") size. The probe before #24 had
# ["tensor float16 [dx200x2]", ["SymInt(input)", "int"]] -> "float16 [dx2]".
SAM3_VIEWS = {
    "merge": {
        "op": "aten.view.default",
        "args": ["tensor float16 [1x200xux2]", ["SymInt(constant)", "int"]],
        "kwargs": {},
        "result": "float16 [ux2]",
    },
    "split_heads": {
        "op": "aten.view.default",
        "args": ["tensor float16 [ux256]", ["int", "int", "SymInt(constant)", "int"]],
        "kwargs": {},
        "result": "float16 [1x200xux256]",
    },
}


@pytest.mark.parametrize("mode", sorted(SAM3_VIEWS))
def test_sam3_view_probes_have_the_whole_programs_node_signature(mode: str):
    (params,) = [p for b, d, p in _instances()["view_dynamic"] if b == "sam3" and p["mode"] == mode]
    nodes = _export("view_dynamic", "float16", params)
    views = [n for n in nodes if n.op == "call_function" and detect([n], ["view_dynamic"])]
    assert [_graph.signature(n) for n in views] == [SAM3_VIEWS[mode]]
    # a static-shape program: no input of the probe has a dynamic size
    inputs = [n for n in nodes if n.op == "placeholder"]
    assert all("d" not in _graph.signature_of_value(n) for n in inputs)


@pytest.mark.parametrize(
    ("kind", "params"),
    [
        (
            "arange",
            {"start": 0, "end": 6, "step": 1, "arange_dtype": "float32", "end_source": "data"},
        ),
        (
            "true_divide",
            {
                "form": "scalar",
                "operands": "float",
                "shape": [6],
                "divisor_dtype": "int64",
                "item_shape": ["u0"],
                "size_source": "data",
            },
        ),
        (
            "pad",
            {
                "mode": "constant",
                "pads": [0, 0, 1, 0],
                "value": 0.0,
                "input_shape": [1, 4, 36],
                "item_shape": [1, 4, "u0*u1"],
                "size_source": "data",
            },
        ),
    ],
)
def test_a_size_read_from_an_input_is_rebuilt_from_an_input(kind: str, params: dict[str, Any]):
    """No registry instance reads its `.item()` sizes from an input (sam3's read a constant),
    but a recipe's may (tests/oracle/constructs/test_detect.py's DataDependent): its probe takes the
    size tensor as an input, and the detector reads back the same instance, `size_source` "data"."""
    probe = probes.build({"construct": kind, "params": params, "dtype": "float32", "seed": 0})
    assert "hw" in probe.inputs
    found = [(f.kind, f.dtype, f.params) for f in detect(_export_built(probe), [kind])]
    assert any(k == kind and {n: p.get(n) for n in params} == params for k, _d, p in found), found


def _export_built(probe: Any) -> list[torch.fx.Node]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ep = torch.export.export(probe.module, tuple(probe.inputs.values()))
        return list(ep.run_decompositions().graph.nodes)
