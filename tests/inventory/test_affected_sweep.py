"""`affected --fix N` converts the probes N's constructs need and no other: the registry sweep of
N's own step (the changes of that step no record explains) is read from the store where `plan`
or `sweep --registry` left it, computed only with `--sweep`, else said not looked for.

One bundle exported with 0.4.1 holds a conv_transpose (#40's construct) and a layer norm (no
construct of #40's): the sweep of 0.4.1 -> 0.4.2 converts both, #40's answer only the first.
Each test runs the real CLI on a result store of its own (the environments shared), so what it
converted is what that store holds.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest
from cli import Ran, invoke
from registries import conv_transpose_registry

from oracle.infra.paths import envs_dir

LAYER_NORM = (
    '[[bundles.a.instances]]\nkind = "layer_norm"\ndtype = "float32"\nsource = "test"\n'
    "params = { normalized_shape = [8], input_shape = [1, 5, 8], elementwise_affine = true, "
    "bias = true, eps = 1e-05 }\n"
)
NOT_LOOKED_FOR = "not looked for"


def _registry(tmp_path: Path) -> Path:
    registry = conv_transpose_registry(tmp_path, channels=6)
    registry.write_text(registry.read_text() + LAYER_NORM)
    return registry


def _cache(tmp_path: Path, name: str) -> Path:
    """An empty result store that borrows the built environments."""
    cache = tmp_path / name
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    return cache


def _run(cache: Path, *args: str) -> Ran:
    proc = invoke(*args, "-q", INVENTORY_CACHE=str(cache))
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _affected(cache: Path, registry: Path, *extra: str) -> tuple[Ran, dict]:
    proc = _run(cache, "affected", "--fix", "40", "--registry", str(registry), "--json", *extra)
    (bundle,) = json.loads(proc.stdout)["result"]["bundles"]
    return proc, bundle


def _stored(cache: Path) -> set[str]:
    """The comparisons the store holds, by construct and releases (`<kind>-<old>-<new>-key`)."""
    return {p.name for p in (cache / "results").iterdir() if not p.name.startswith(".")}


def _kinds(names: set[str]) -> set[str]:
    return {n.split("-", 1)[0] for n in names}


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Path:
    return _registry(tmp_path_factory.mktemp("registry"))


@pytest.fixture(scope="module")
def unswept(tmp_path_factory, registry, converter_envs) -> tuple[Path, Ran, dict]:
    """`affected --fix 40` on an empty store."""
    cache = _cache(tmp_path_factory.mktemp("unswept"), "cache")
    proc, bundle = _affected(cache, registry)
    return cache, proc, bundle


def test_on_an_empty_store_only_the_fixs_probes_convert_and_the_sweep_is_not_looked_for(
    unswept, json_schema
):
    cache, proc, bundle = unswept
    json_schema(json.loads(proc.stdout))
    # #40's probe of the conv_transpose, nothing of the layer norm the sweep would convert
    assert _kinds(_stored(cache)) == {"conv_transpose"}
    assert bundle["unrecorded_state"] == NOT_LOOKED_FOR and bundle["unrecorded"] == []
    line = bundle["chain"][-1]
    assert line.startswith(
        "changes of this bundle's instances in 0.4.1->0.4.2 that no record explains were not "
        "looked for (no stored registry sweep of that step: the store holds 1 of its 2 "
        "comparison(s))"
    ), line
    assert line.endswith(
        "`inventory plan --to 0.4.2` or `inventory affected --fix 40 --sweep` looks"
    ), line


def test_every_format_says_the_unrecorded_changes_were_not_looked_for(unswept, registry):
    cache, _, _ = unswept
    before = _stored(cache)
    said = "changes of the fix's step no record explains: not looked for"
    for fmt in ("table", "markdown", "html"):
        out = _run(cache, "affected", "--fix", "40", "--registry", str(registry), "-f", fmt)
        assert said in " ".join(html.unescape(out.stdout).split()), fmt
    bom = json.loads(
        _run(
            cache, "affected", "--fix", "40", "--registry", str(registry), "-f", "cyclonedx"
        ).stdout
    )
    (model,) = [c for c in bom["components"] if c.get("bom-ref") == "bundle:a"]
    props = {p["name"]: p["value"] for p in model.get("properties", [])}
    assert props["inventory:unrecorded_state"] == NOT_LOOKED_FOR
    assert _stored(cache) == before  # rendering again converted nothing


def test_after_a_registry_sweep_of_the_step_the_stored_sweep_is_read_and_nothing_converts(
    unswept, registry
):
    cache, _, _ = unswept
    _run(
        cache,
        "sweep",
        "--registry",
        "--registry-file",
        str(registry),
        "--from",
        "0.4.1",
        "--to",
        "0.4.2",
    )
    before = _stored(cache)
    assert _kinds(before) == {"conv_transpose", "layer_norm"}
    _, bundle = _affected(cache, registry)
    assert _stored(cache) == before  # read, not converted
    assert bundle["unrecorded_state"] == "stored"
    assert not any("not looked for" in line for line in bundle["chain"])


def test_sweep_computes_the_registry_sweep_of_the_step(tmp_path, registry, converter_envs):
    cache = _cache(tmp_path, "cache")
    _, bundle = _affected(cache, registry, "--sweep")
    assert _kinds(_stored(cache)) == {"conv_transpose", "layer_norm"}
    assert bundle["unrecorded_state"] == "computed"
    assert not any("not looked for" in line for line in bundle["chain"])
