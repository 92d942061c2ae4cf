"""An environment's deviations are the pins', known before it is built: an answer read from the
store (nothing built in the run) states them as one whose environments were built does."""

from __future__ import annotations

from oracle.catalog.releases import load_catalog
from oracle.envs.environment import env_path, planned_deviations, read_manifest
from oracle.session import Session


def test_the_planned_environment_of_0_4_0_carries_the_deviation_its_build_records():
    catalog = load_catalog()
    built = read_manifest(env_path("0.4.0", catalog))  # the suite's cache, if it holds one
    planned = planned_deviations(catalog.release("0.4.0"), catalog)
    if built is not None:
        assert planned == built.deviations
    else:  # nothing built here (a fresh cache): the catalog's rule, in the build's words
        declared = catalog.release("0.4.0").declares_torch
        assert planned[0] == (
            f"coreai-torch 0.4.0 declares {declared}; installed beside torch "
            f"{catalog.torch} without dependency resolution"
        )
        assert planned[1:] == tuple(c.cited() for c in catalog.torch_checks("0.4.0"))
    assert planned and "without dependency resolution" in planned[0]
    # a release whose declared torch holds the shared one deviates in nothing
    assert planned_deviations(catalog.release("0.4.2"), catalog) == ()


def test_an_environment_not_built_in_the_run_still_states_its_deviation(tmp_path, monkeypatch):
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path))  # an empty cache: nothing is built
    catalog = load_catalog()
    with Session(catalog) as session:
        env = session.env("0.4.0")
    assert not env.built
    assert env.deviations == planned_deviations(catalog.release("0.4.0"), catalog)
    assert any("coreai-torch 0.4.0 declares torch" in d for d in env.deviations)
    assert not (tmp_path / "envs" / "coreai-torch-0.4.0").exists()
