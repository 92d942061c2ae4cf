"""A stand-in's stated differences from the recipe trace: the check that keeps them true.

The slow test at the end traces every shipped stand-in (what `inventory trace --check` does in CI,
where no recipe checkout exists) and holds it against the recorded recipe trace through the
registry's stated differences.
"""

from __future__ import annotations

from typing import Any

import pytest

from inventory.registry import load_registry
from inventory.trace import standin
from inventory.trace.service import RECIPE, differences, origin, raw_bundle

DIV = {
    "kind": "true_divide",
    "count": 17,
    "dtype": "float16",
    "params": {"form": "scalar", "operands": "float", "shape": [1, 8, 378, 378], "divisor": 8.0},
}
NORM = {"kind": "batch_norm", "count": 17, "dtype": "float16", "params": {"channels": 512}}
FACTS = {"aten_ops": 2975, "softmax": {"float16": 35}}
STANDIN_FACTS = {"aten_ops": 3212, "softmax": {"float16": 18, "float32": 17}}
STATED: dict[str, Any] = {
    "differences": [{"why": "the recipe divides", "recipe_only": [DIV], "standin_only": []}],
    "facts": {
        "aten_ops": {"standin": 3212, "recipe": 2975},
        "softmax": {"standin": {"float16": 18, "float32": 17}, "recipe": {"float16": 35}},
    },
}


def test_stated_differences_that_hold_leave_nothing_to_report():
    assert standin.check("b", STATED, [NORM], STANDIN_FACTS, [NORM, DIV], FACTS) == []


def test_an_unstated_instance_difference_is_reported_both_ways():
    lines = standin.check(
        "b", {**STATED, "differences": []}, [NORM], STANDIN_FACTS, [NORM, DIV], FACTS
    )
    assert len(lines) == 1 and "recorded recipe instance not given by the stand-in" in lines[0]
    assert '"kind": "true_divide"' in lines[0]
    extra = {**NORM, "count": 16}
    lines = standin.check("b", STATED, [extra], STANDIN_FACTS, [NORM, DIV], FACTS)
    assert any(
        "give an instance the recipe trace does not record" in ln and '"count": 16' in ln
        for ln in lines
    )


def test_a_stated_difference_the_stand_in_no_longer_has_is_stale():
    stated = {
        **STATED,
        "differences": [{"why": "x", "recipe_only": [DIV], "standin_only": [{**NORM, "count": 3}]}],
    }
    lines = standin.check("b", stated, [NORM], STANDIN_FACTS, [NORM, DIV], FACTS)
    assert any("says the stand-in has" in ln for ln in lines)


def test_facts_must_be_equal_unless_a_difference_is_stated():
    lines = standin.check("b", {**STATED, "facts": {}}, [NORM], STANDIN_FACTS, [NORM, DIV], FACTS)
    assert sorted(ln.split(":")[1].strip() for ln in lines) == ["fact aten_ops", "fact softmax"]
    wrong = {**STATED, "facts": {**STATED["facts"], "aten_ops": {"standin": 1, "recipe": 2975}}}
    lines = standin.check("b", wrong, [NORM], STANDIN_FACTS, [NORM, DIV], FACTS)
    assert lines == ["b: fact aten_ops: the stand-in traces 3212, the stated difference says 1"]


def test_derived_differences_are_what_a_maintainer_would_state():
    got = standin.derived([NORM], [NORM, DIV], STANDIN_FACTS, FACTS)
    assert got["recipe_only"] == [DIV] and got["standin_only"] == []
    assert got["facts"] == {
        "aten_ops": {"standin": 3212, "recipe": 2975},
        "softmax": {"standin": STANDIN_FACTS["softmax"], "recipe": FACTS["softmax"]},
    }


# ---- the shipped registry: every recipe-traced bundle's stand-in, traced -----------------------

BUNDLES = {b.name: b for b in load_registry()}
RECIPE_TRACED = sorted(n for n, b in BUNDLES.items() if origin(b) == RECIPE)


def test_every_shipped_bundle_is_recipe_traced_with_provenance():
    assert sorted(BUNDLES) == RECIPE_TRACED
    for bundle in BUNDLES.values():
        prov = bundle.trace["provenance"]
        assert prov["repository"] == bundle.recipe["repository"]
        assert prov["commit"] == bundle.recipe["commit"]  # the checkout was the registry's commit
        assert prov["file"] == bundle.recipe["builder"]["path"]
        assert bundle.trace["packages"]["torch"] and bundle.standin["target"]
        assert all(i.source.startswith("traced from the recipe") for i in bundle.instances)


def test_the_recipe_traces_hold_what_the_issue_says():
    """sortformer's 53 true divisions, mimi's 4 integer aranges (as the recipe spells them),
    sam3's 7 fp16 floor divisions, fp16 softmax in the conformer recipes."""

    def count(bundle: str, kind: str, **params) -> int:
        return sum(
            i.count
            for i in BUNDLES[bundle].instances
            if i.kind == kind and all(i.params.get(k) == v for k, v in params.items())
        )

    assert (
        sum(
            i.count
            for i in BUNDLES["sortformer"].instances
            if i.kind == "true_divide" and i.dtype == "float16"
        )
        == 53
    )
    assert count("mimi", "arange", tensor_dtype="int64", arange_dtype="") == 4
    assert count("sam3", "floor_divide", operands="float", divisor=2) == 7
    for name in ("parakeet", "sortformer", "lfm_audio"):
        assert set(BUNDLES[name].trace["facts"]["softmax"]) == {"float16"}
    assert (
        BUNDLES["mimi"].trace["facts"]["mutated_inputs"]
        == len(BUNDLES["mimi"].export["names"]["states"])
        == 12
    )
    assert BUNDLES["sam3"].trace["packages"]["transformers"] == "5.9.0"


@pytest.mark.parametrize("name", RECIPE_TRACED)
def test_stand_in_trace_plus_stated_differences_is_the_recorded_recipe_trace(name, traced):
    bundle = BUNDLES[name]
    result = traced(bundle)
    assert result.is_standin and result.target == bundle.standin["target"]
    assert differences(raw_bundle_of(name), result) == []


def raw_bundle_of(name: str) -> dict:
    from inventory.registry import DEFAULT_REGISTRY

    return raw_bundle(DEFAULT_REGISTRY, name)
