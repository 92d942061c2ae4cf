"""Pipeline variants: a recipe that keeps ops out of its decomposition table has its
instances probed under that table; a table that keeps nothing out keys its results as before."""

from __future__ import annotations

import pytest
from registries import registry_with

from inventory.instances import instance_spec
from inventory.registry import RegistryError, load_registry
from oracle.catalog.regimes import load_regimes
from oracle.compare.spec import Pipeline, ProbeSpec

KEPT = ["aten.reflection_pad1d.default", "aten.replication_pad1d.default"]


def _keep(ops):
    def change(raw):
        raw["pipeline"]["keep"] = ops

    return change


def test_an_instance_is_probed_under_the_table_its_recipe_uses(tmp_path):
    plain = load_registry(registry_with(tmp_path, "parakeet", lambda raw: None))[0]
    (bundle,) = load_registry(registry_with(tmp_path, "parakeet", _keep(KEPT)))
    assert bundle.pipeline.keep == tuple(sorted(KEPT))
    pad = next(i for i in bundle.instances if i.kind == "pad")
    spec = instance_spec(bundle, pad)
    assert spec.pipeline.keep == tuple(sorted(KEPT))
    assert spec.to_json()["pipeline"]["keep"] == sorted(KEPT)
    # the same instance under the table that keeps nothing out is another probe
    assert spec.key() != instance_spec(plain, pad).key()


def test_keeping_nothing_out_keys_a_spec_as_before():
    spec = ProbeSpec("pad", {"mode": "reflect", "pads": [1, 1], "input_shape": [1, 2, 4]})
    assert "keep" not in spec.to_json()["pipeline"]
    assert spec.pipeline == Pipeline(keep=())
    # read back from a stored result's JSON (a list): the same, hashable pipeline
    again = Pipeline(**{**spec.pipeline.to_json(), "keep": ["aten.x.default"]})
    assert again.keep == ("aten.x.default",) and hash(again)


def test_a_misspelt_kept_op_is_one_line(tmp_path):
    path = registry_with(tmp_path, "parakeet", _keep(["reflection_pad1d"]))
    with pytest.raises(RegistryError) as err:
        load_registry(path)
    assert "[bundles.parakeet.pipeline] keep must be a list of aten overloads" in str(err.value)
    assert "\n" not in str(err.value)


def test_regimes_keep_ops_out_as_the_upstream_pad_tests_do():
    kept = [r for r in load_regimes() if r.spec.pipeline.keep]
    ops = {op for r in kept for op in r.spec.pipeline.keep}
    assert {
        f"aten.{m}_pad{n}d.default" for m in ("reflection", "replication") for n in (1, 2, 3)
    } <= ops


def test_a_whole_program_is_converted_and_stored_under_the_recipes_table(tmp_path):
    from inventory.verify import whole

    plain = load_registry(registry_with(tmp_path, "parakeet", lambda raw: None))[0]
    (kept,) = load_registry(registry_with(tmp_path, "parakeet", _keep(KEPT)))
    assert whole.pipeline_of(plain) == {"decompositions": "coreai", "optimize": True}
    assert whole.pipeline_of(kept) == {
        "decompositions": "coreai",
        "optimize": True,
        "keep": sorted(KEPT),
    }
