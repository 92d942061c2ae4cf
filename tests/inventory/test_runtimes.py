"""Deployment runtimes, the fix database's record kinds, and reading a runtime's error line.

No converter runs here: these are the rules that decide which runtimes an answer holds for.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from inventory.deployment import deployment, parse_overrides
from inventory.registry import RegistryError, load_registry
from oracle.catalog.fixes import FixError, find_fix, load_fixes
from oracle.catalog.releases import Catalog, EnvError, Release, load_catalog
from oracle.catalog.runtimes import cores, parse_runtime
from oracle.load_check import abbreviate, first_error

REGISTRY = """
{deploy}
[bundles.a]
files = ["a.aimodel"]
dtype = "float32"
{runtimes}
[bundles.a.exporter]
converter = "0.4.0"
source = "test"

[bundles.b]
files = ["b.aimodel"]
dtype = "float16"
[bundles.b.exporter]
converter = "0.4.1"
source = "test"
"""


def registry(tmp_path: Path, deploy: str = "", runtimes: str = "") -> Path:
    path = tmp_path / "recipes.toml"
    path.write_text(REGISTRY.format(deploy=deploy, runtimes=runtimes))
    return path


def test_the_runtime_catalog_is_the_cores_of_the_converter_catalog_in_release_order():
    assert cores(load_catalog()) == ["1.0.0b1", "1.0.0b2", "1.0.0b3"]
    other = Catalog(
        "2.13.0",
        {
            "1.0": Release("1.0", "2.0.0", ()),
            "0.9": Release("0.9", "1.9.0", ()),
            "1.1": Release("1.1", "2.0.0", ()),
        },
    )
    assert cores(other) == ["1.9.0", "2.0.0"]


@pytest.mark.parametrize("text", ["b3", "1.0.0b3", "coreai-core 1.0.0b3", "coreai-core==1.0.0b3"])
def test_a_runtime_is_named_as_a_user_would(text):
    assert parse_runtime(text, load_catalog()) == "1.0.0b3"


def test_an_unknown_runtime_is_one_clear_line():
    with pytest.raises(EnvError, match=r"runtime 'b9' is not in the catalog .*1\.0\.0b1"):
        parse_overrides(["b9"], load_catalog())


def test_the_default_is_every_runtime_at_or_above_the_targets_core(tmp_path):
    catalog = load_catalog()
    a, _b = load_registry(registry(tmp_path))
    d = deployment(a, catalog, "0.4.2")
    assert d.cores == ("1.0.0b2", "1.0.0b3")
    assert d.source.startswith("default:") and "coreai-torch 0.4.2 pins" in d.source
    assert deployment(a, catalog, "0.4.3").cores == ("1.0.0b3",)
    # No target (scan): every runtime in the catalog.
    assert deployment(a, catalog, None).cores == ("1.0.0b1", "1.0.0b2", "1.0.0b3")


def test_the_registry_states_runtimes_for_all_bundles_or_per_bundle(tmp_path):
    catalog = load_catalog()
    path = registry(
        tmp_path, deploy='[deploy]\nruntimes = ["1.0.0b3"]', runtimes='runtimes = ["b1", "b2"]'
    )
    a, b = load_registry(path)
    assert deployment(a, catalog, "0.4.2").cores == ("1.0.0b1", "1.0.0b2")
    assert deployment(a, catalog, "0.4.2").source == "recipes.toml [bundles.a] runtimes"
    assert deployment(b, catalog, "0.4.2").cores == ("1.0.0b3",)
    assert deployment(b, catalog, "0.4.2").source == "recipes.toml [deploy] runtimes"
    # --runtime overrides the registry.
    override = parse_overrides(["1.0.0b2"], catalog)
    assert deployment(a, catalog, "0.4.2", override).cores == ("1.0.0b2",)


def test_a_registry_naming_an_unknown_runtime_fails_with_one_line(tmp_path):
    # refused when the registry is read, before anything runs, not when answered
    with pytest.raises(RegistryError, match=r"\[bundles.a\] runtimes: runtime '9.9.9'"):
        load_registry(registry(tmp_path, runtimes='runtimes = ["9.9.9"]'))
    with pytest.raises(RegistryError, match="non-empty list"):
        load_registry(registry(tmp_path, runtimes="runtimes = []"))
    with pytest.raises(RegistryError, match=r"\[deploy\] lacks 'runtimes'"):
        load_registry(registry(tmp_path, deploy="[deploy]\ncores = []"))


def test_asset_and_pipeline_records_are_in_the_fix_database_with_where_they_were_checked():
    fix = find_fix("28")
    assert fix.kind == "asset" and fix.ships_in == "0.4.1" and not fix.constructs
    assert "71ca4a8" in fix.checked and "_debug_locations.py" in fix.checked
    pins = {f.id: f for f in load_fixes() if f.kind == "pipeline"}
    assert pins["core-b2"].ships_in == "0.4.1" and "1.0.0b2" in pins["core-b2"].checked
    assert pins["core-b3"].ships_in == "0.4.3" and "1.0.0b3" in pins["core-b3"].checked
    assert find_fix("core-b3").label == "core-b3" and fix.label == "#28"


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ('kind = "magic"\nconstructs = ["pad"]', "kind must be one of lowering, asset, pipeline"),
        ("", "a lowering record needs constructs"),
        ('kind = "asset"\nconstructs = ["pad"]', "answered without constructs"),
    ],
)
def test_a_malformed_record_kind_is_one_line(tmp_path, record, message):
    path = tmp_path / "fixes.toml"
    path.write_text(f'[[fix]]\nid = "1"\ntitle = "t"\nships_in = "0.4.1"\n{record}\n')
    with pytest.raises(FixError, match=message):
        load_fixes(path)


# What coreai-core 1.0.0b2 printed when it aborted on a 0.4.0 asset (from a load check's log).
B2_LOG = (
    'loc(fused<{call_stack = ["BatchNorm1d$1", "Sequential$2", "Sequential$1"], identifiers = '
    '["_native_batch_norm_legit_no_training"]}>["/x/batchnorm.py":210:0, "torch"("op_id":9:0)]): '
    'error: expected AICode versioned location, got: loc(fused<{call_stack = ["BatchNorm1d$1", '
    '"Sequential$2"], identifiers = ["_native_batch_norm_legit_no_training"]}>["/x/b.py":210:0, '
    '"torch"("op_id":9:0)])\n'
    'loc(fused<{call_stack = ["Conv1d$1"]}>["/x/conv.py":385:0]): error: Failed to convert to '
    "versioned IR\n"
    "terminate called after throwing an instance of 'nanobind::python_error'\n"
)


def test_the_first_error_line_is_quoted_with_location_lists_abbreviated():
    assert first_error(B2_LOG) == (
        "error: expected AICode versioned location, got: "
        "loc(fused<{call_stack = [...], identifiers = [...]}>[...])"
    )
    assert first_error("noise\nterminate called after x\n") == "terminate called after x"
    assert first_error("nothing here\n") == ""
    assert abbreviate("a [b [c] d] e") == "a [...] e"
