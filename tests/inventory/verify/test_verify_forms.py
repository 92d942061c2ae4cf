"""A verify miniature keeps every distinct construct instance of the full target.

`inventory verify` converts a whole bundle module; where the full module costs more than the
check needs (parakeet's 24 identical conformer layers) or does not fit (sam3: 840M parameters) it
converts a miniature instead, built with `[bundles.X.verify.build]` keyword arguments that drop
repeated layers only. The miniature stands for the full module only if the two traces give the
same set of distinct instances (kind, dtype, parameters; counts and module paths aside): that is
what this file holds every miniature of `recipes.toml` to. The run form (`[bundles.X.verify.run]`)
is built over the compared form's arguments: it must still build, with every construct kind of
the form it stands for. `--full` gives the full target whatever the registry states.
"""

from __future__ import annotations

import importlib
import json
import re
from typing import Any

import pytest
from cli import invoke

from inventory.registry import Bundle, load_registry
from inventory.verify import forms
from inventory.verify.forms import distinct

SHIPPED = load_registry()
MINIATURES = [b for b in SHIPPED if b.verify.get("form") == forms.MINIATURE]
WITH_RUN_FORM = [b for b in SHIPPED if b.verify.get("run") is not None]


def _by_name(name: str) -> Bundle:
    [bundle] = [b for b in SHIPPED if b.name == name]
    return bundle


def _kinds(instances: list[dict[str, Any]]) -> set[str]:
    return {i["kind"] for i in instances}


def _parameters(form: forms.Form) -> int:
    """The parameter count of the form's module, built on the meta device (no storage)."""
    module, function = form.target.split(":")
    target = getattr(importlib.import_module(module), function)(device="meta", **form.build)
    return sum(p.numel() for p in target.module.parameters())


def _millions(why: str) -> list[str]:
    """The parameter counts a why states ("609.5M parameters"), as written."""
    return re.findall(r"(\d+(?:\.\d+)?)M parameters", why)


def _as_written(count: int, like: str) -> str:
    """`count` in millions to the digits `like` gives (840M, 609.5M)."""
    digits = len(like.partition(".")[2])
    return f"{count / 1e6:.{digits}f}"


# ---- fast: what the registry states -------------------------------------------------------


def test_the_miniatures_are_read_from_the_registry():
    # not a hand list: whatever recipes.toml states as a miniature is checked below; this only
    # guards against the list being empty (a renamed key would check nothing)
    assert MINIATURES and all(forms.compared_form(b).name == forms.MINIATURE for b in MINIATURES)


@pytest.mark.parametrize("bundle", [b for b in SHIPPED if b.verify], ids=lambda b: b.name)
def test_full_gives_the_full_target_and_the_run_form_merges_over_it(bundle):
    stated = forms.compared_form(bundle)
    full = forms.compared_form(bundle, full=True)
    assert full.name == forms.FULL and full.build == {}
    assert (full.target, full.standin) == (stated.target, stated.standin)
    if stated.name == forms.FULL:
        assert full == stated
    else:
        assert full.why.startswith("--full:") and stated.why in full.why
    run_table = bundle.verify.get("run")
    if run_table is None:
        assert forms.run_form(bundle, full=True) == full
        return
    stated_run, full_run = forms.run_form(bundle), forms.run_form(bundle, full=True)
    assert full_run.build == forms._merged({}, run_table.get("build") or {})
    assert stated_run.build == forms._merged(stated.build, run_table.get("build") or {})


@pytest.mark.slow  # builds every bundle's whole target on the meta device (transformers, ~15 s)
@pytest.mark.parametrize("bundle", MINIATURES, ids=lambda b: b.name)
def test_a_miniatures_why_states_its_parameter_counts_full_then_miniature(bundle):
    full = _parameters(forms.compared_form(bundle, full=True))
    mini = _parameters(forms.compared_form(bundle))
    assert mini < full
    stated = _millions(bundle.verify["why"])
    # the why's first count is the full target's, its last the miniature's, to the digits given
    assert len(stated) >= 2, bundle.verify["why"]
    assert [_as_written(full, stated[0]), _as_written(mini, stated[-1])] == [
        stated[0],
        stated[-1],
    ], f"{bundle.name}: {full} and {mini} parameters"


# ---- slow: traced (the decomposition table comes from a converter environment) -------------


@pytest.mark.parametrize("bundle", MINIATURES, ids=lambda b: b.name)
def test_a_miniature_keeps_every_distinct_instance(bundle, traced):
    build = bundle.verify["build"]

    full = distinct(traced(bundle).instances)
    mini = distinct(traced(bundle, build).instances)

    missing, extra = sorted(full - mini), sorted(mini - full)
    assert not missing and not extra, (
        f"the {bundle.name} miniature {build!r} does not keep the full target's distinct instances "
        f"({len(missing)} missing, {len(extra)} extra):\n"
        + "\n".join(
            [f"  missing from the miniature: {key}" for key in missing]
            + [f"  only in the miniature: {key}" for key in extra]
        )
    )


def test_dropping_a_stack_of_layers_loses_its_instances(traced):
    """The check above can fail: sortformer without its post-LN transformer loses the
    instances only that stack holds, though every conformer instance stays."""
    sortformer = _by_name("sortformer")
    full = distinct(traced(sortformer).instances)
    without = distinct(traced(sortformer, {"layers": 1, "tf_layers": 0}).instances)
    lost = full - without
    assert lost and without < full
    # the stack's own: its layer norms (192 wide), its scaling division, and the attention's
    # softmax and products in the forms only it writes (a shape alone separates no instance)
    stack = ('"normalized_shape": [192]', '"true_divide"', '"kind": "softmax"', '"kind": "matmul"')
    assert {any(s in key for s in stack) for key in lost} == {True}, sorted(lost)
    assert any('"normalized_shape": [192]' in key for key in lost)


@pytest.mark.parametrize("full", [False, True], ids=["stated", "full"])
@pytest.mark.parametrize("bundle", WITH_RUN_FORM, ids=lambda b: b.name)
def test_the_run_form_builds_with_every_construct_kind_of_the_compared_form(bundle, full, traced):
    """Over the miniature and, with --full, over no arguments at all: a run form that only
    builds over the miniature's (sam3's backbone table without its model_type) fails here."""
    compared, run = forms.compared_form(bundle, full), forms.run_form(bundle, full)
    assert run.name == forms.REDUCED and run != compared
    kinds = _kinds(traced(bundle, compared.build or None).instances)
    assert _kinds(traced(bundle, run.build).instances) == kinds


# ---- fast: --full reaches the chain (the chain itself stopped before it builds anything) -----


@pytest.fixture
def stopped_chain(monkeypatch, tmp_path) -> list[bool]:
    """chain.measure replaced by one that records the `full` it was given and fails as a build
    does (the answer then names the form it would have built); an empty store of its own."""
    from inventory.verify import chain, whole

    asked: list[bool] = []

    def measure(*_args: Any, full: bool = False, **_kwargs: Any) -> dict[str, Any]:
        asked.append(full)
        raise whole.VerifyError("stopped by the test before the build")

    monkeypatch.setattr(chain, "measure", measure)
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path))
    return asked


@pytest.mark.parametrize("flag", [[], ["--full"]], ids=["stated", "full"])
def test_verify_full_builds_the_full_target_and_says_so(stopped_chain, flag, json_schema):
    proc = invoke("verify", "parakeet", "--to", "0.4.2", *flag, "--json", "-q")
    data = json.loads(proc.stdout)
    json_schema(data)  # the same record: --full adds no field, the form says which it is
    [b] = data["result"]["bundles"]
    assert proc.returncode == 3 and "stopped by the test" in b["error"]
    assert stopped_chain == [bool(flag)]
    expected = forms.compared_form(_by_name("parakeet"), full=bool(flag))
    assert b["form"] == expected.to_json()
    assert b["form"]["form"] == ("full" if flag else "miniature")


def test_plan_full_asks_the_chain_for_the_full_target(stopped_chain):
    from inventory.policy import load_policy
    from inventory.verify.service import verified
    from oracle.catalog.fixes import load_fixes
    from oracle.envs.environment import load_catalog

    checks = verified(
        [_by_name("sortformer")], "0.4.2", load_fixes(), load_catalog(), load_policy(), full=True
    )
    assert stopped_chain == [True]
    assert checks["sortformer"].record["form"]["form"] == "full"
