"""A stored result's key names an environment by its catalog pins, so that it is computed without
building the environment (a run whose every result is stored builds nothing); results stored
before, under the key of the installed packages, are still read where they are."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from pathlib import Path

import pytest

from oracle.catalog.releases import load_catalog
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env, planned_env
from oracle.store import load_records
from oracle.store import result_store as store

SPEC = ProbeSpec(
    "conv_transpose",
    {
        "dim": 1,
        "in_channels": 4,
        "out_channels": 2,
        "kernel": [4],
        "stride": [2],
        "padding": [0],
        "output_padding": [1],
        "input_shape": [1, 4, 11],
    },
)


@pytest.fixture
def empty_cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path))
    monkeypatch.delenv("INVENTORY_STORE", raising=False)
    return tmp_path


def _as_built(env: Env, numpy: str = "2.4.6") -> Env:
    """The environment `env` plans, as its build records it: the torch with its local label,
    and what the resolution picked beside the pins."""
    packages = {**env.packages, "torch": f"{env.packages['torch']}+cpu", "numpy": numpy}
    return replace(env, packages=packages, built=True)


def _legacy_name(old: Env, new: Env) -> str:
    """A comparison's folder as the code before this change named it (its key written out
    here: the installed packages of both sides)."""
    keep = ("coreai-torch", "coreai-core", "torch", "numpy")
    payload = {
        "spec": SPEC.key_json(),
        "old": {k: old.packages.get(k, "?") for k in keep},
        "new": {k: new.packages.get(k, "?") for k in keep},
        "code": store.code_digest(),
    }
    key = hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]
    return f"conv_transpose-{old.converter}-{new.converter}-{key}"


def test_a_comparison_is_keyed_alike_before_and_after_its_environments_are_built(empty_cache):
    catalog = load_catalog()
    old, new = planned_env("0.4.1", catalog), planned_env("0.4.2", catalog)
    assert not old.built and not new.built  # nothing in this cache
    assert not (empty_cache / "envs").exists()  # and planning built nothing
    planned = store.result_dir(SPEC, old, new)
    assert store.result_dir(SPEC, _as_built(old), _as_built(new)) == planned
    # what a resolution picked is recorded in the result, not keyed on: two machines that
    # built the same pins share their results
    assert store.result_dir(SPEC, _as_built(old, "2.4.7"), _as_built(new)) == planned
    # a pin is keyed on: another core is another result
    assert store.result_dir(SPEC, replace(old, core="1.0.0b9"), new) != planned


def test_a_load_check_is_keyed_alike_before_and_after_its_environments_are_built(empty_cache):
    catalog = load_catalog()
    exporter, runtime = planned_env("0.4.1", catalog), planned_env("0.4.3", catalog)
    ids = {runtime.core: load_records.runtime_key(runtime)}
    built_ids = {runtime.core: load_records.runtime_key(_as_built(runtime))}
    assert ids == built_ids
    planned = load_records.check_dir(SPEC, exporter, ids)
    assert load_records.check_dir(SPEC, _as_built(exporter), built_ids) == planned


def test_a_result_stored_under_the_earlier_key_is_read_where_it_is(empty_cache):
    catalog = load_catalog()
    old, new = _as_built(planned_env("0.4.1", catalog)), _as_built(planned_env("0.4.2", catalog))
    legacy = store.results_root() / _legacy_name(old, new)
    legacy.mkdir(parents=True)
    store.write_record(legacy, {"verdict": "same-program"})
    # built environments name the earlier key: the stored result is found, not recomputed
    assert store.result_dir(SPEC, old, new) == legacy
    # before they are built it cannot be named: the new key (fetched, else made and stored)
    fresh = store.result_dir(SPEC, replace(old, built=False), replace(new, built=False))
    assert fresh != legacy and fresh.name.startswith("conv_transpose-0.4.1-0.4.2-")
    # once a result is stored under the new key, that one is read
    fresh.mkdir(parents=True)
    store.write_record(fresh, {"verdict": "same-program"})
    assert store.result_dir(SPEC, old, new) == fresh
