"""Region runs (`inventory/verify/cuts.py`) on real converters and the real runtime: a differing
region is cut out of the bundle's whole program with the activations that reach it, converted
under both releases of its step, checked to reproduce the region's difference, and run against
torch fp32 at its own call sites.

sortformer in small (one layer of each encoder, as in tests/inventory/verify/test_verify.py) gives
#54's batch norm, a lowering change of 0.4.1 -> 0.4.2; sam3's miniature on a 168x168 image gives the
optimizer regions of 0.4.0 -> 0.4.1 (coreai-core 1.0.0b1 -> 1.0.0b2). A region whose cut does
not reproduce must be reported so, never measured as if it did."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli import invoke
from registries import registry_with

from inventory.registry import load_registry
from inventory.verify import chain, cuts, explain, forms, whole
from inventory.verify.built_module import BuiltModule
from inventory.verify.converted_side import ConvertedSide
from inventory.verify.regions import Region
from oracle.catalog.releases import load_catalog
from oracle.session import Session

pytestmark = pytest.mark.slow

MINI = {"chunk_mel": 160, "spkcache": 12, "layers": 2, "tf_layers": 1}


def _mini_sortformer(raw: dict) -> None:
    raw["verify"] = {
        "form": "miniature",
        "why": "test: two conformer layers",
        "build": dict(MINI),
        "seconds_per_run": 1000,
        "cost_measured": "a test's own figure",
    }


@pytest.fixture(scope="module")
def sortformer(converter_envs, tmp_path_factory, json_schema) -> tuple[dict, Path]:
    """verify --to 0.4.2 with the model-level runs over the budget: only region runs."""
    registry = registry_with(tmp_path_factory.mktemp("cuts"), "sortformer", _mini_sortformer)
    proc = invoke(
        "verify",
        "sortformer",
        "--to",
        "0.4.2",
        "--registry",
        str(registry),
        "--run-budget",
        "60",
        "--json",
        "-q",
    )
    assert "Traceback" not in proc.stderr, proc.stderr
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    return data, registry


def test_the_batch_norm_region_is_cut_reproduced_and_measured_at_each_call_site(sortformer):
    data, _ = sortformer
    [b] = data["bundles"]
    [region] = b["regions"]
    assert region["composite"] == "batch_norm" and region["calls"] == 2
    run = region["region_run"]
    assert run["reproduces"] is True and run["hops"] == 0, run
    # one output per call site, each labelled with its module
    assert [o["output"].split(" (")[1] for o in run["outputs"]] == [
        "stack.encoder.layers.0.conv.norm)",
        "stack.encoder.layers.1.conv.norm)",
    ]
    # the inputs are the activations that reach each batch norm, in the program's dtype
    assert len(run["inputs"]) == 2 and {i["dtype"] for i in run["inputs"]} == {"float16"}
    for o in run["outputs"]:
        assert o["maxabs_old_new"] > 0 and not o["bit_identical"]
        assert o["nonfinite_old"] == o["nonfinite_new"] == 0
        assert 0 < o["rel_old"] < 0.05 and 0 < o["rel_new"] < 0.05
    # the region reaches the encoder's output (preds), not the subsampling's (chunk_pe)
    assert run["reaches_outputs"] == [0]
    assert run["drift"]["outputs"] == 2
    assert run["drift"]["maxabs_old_new"] == max(o["maxabs_old_new"] for o in run["outputs"])


def test_over_the_run_budget_the_model_level_run_is_skipped_and_said_so(sortformer):
    data, _ = sortformer
    [b] = data["bundles"]
    run = b["run"]
    assert run["skipped"] is True and run["estimate_seconds"] == 2000.0  # 2 runs
    assert run["budget_seconds"] == 60.0 and "over the run budget of 60 s" in run["error"]
    # the level is the regions' drift, and says where it was measured
    assert b["verdict"] == "values-move" and "at the 1 region(s)' own cuts" in b["reason"]
    assert b["timing"]["runs"] == 0 and b["timing"]["region_runs"] > 0
    assert b["timing"]["region_conversions"] > 0 and b["timing"]["conversions"] > 0


def test_with_both_the_region_and_the_model_level_run_agree(sortformer, json_schema):
    """The same check with the budget lifted: the model-level runs are measured too (the
    region runs are read back), and the region that moves shows at the output it reaches."""
    _data, registry = sortformer
    proc = invoke(
        "verify",
        "sortformer",
        "--to",
        "0.4.2",
        "--registry",
        str(registry),
        "--run-budget",
        "inf",
        "--json",
        "-q",
    )
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    [b] = data["bundles"]
    assert b["run"]["ok"] and not b["run"]["skipped"]
    assert b["disagreements"] == []
    preds = b["run"]["outputs"][0]
    assert preds["output"] == "preds" and preds["maxabs_old_new"] > 0
    [region] = b["regions"]
    assert region["region_run"]["runtime"] == b["run"]["runtime"]


@contextlib.contextmanager
def _stored(
    registry: Path, releases: list[str]
) -> Iterator[tuple[Session, chain._Parts, BuiltModule, dict[str, ConvertedSide]]]:
    """A session with the check's build and sides (measured once, then read back)."""
    [bundle] = load_registry(registry)
    with Session(load_catalog()) as session:
        p = chain._Parts(bundle, session, None, True, False, lambda _: None, False)  # noqa: SLF001
        form = forms.compared_form(bundle)
        build = p.build(form, reference=forms.run_form(bundle) == form)
        yield session, p, build, p.sides(build, releases)


def test_a_cut_that_does_not_reproduce_its_region_is_reported_not_measured(sortformer):
    """A region made of a layer norm, which no fix of 0.4.1 -> 0.4.2 changes: every cut of it,
    however wide, gives identical programs, so it is reported as not reproducing, with each
    attempt, and has no drift."""
    _data, registry = sortformer
    with _stored(registry, ["0.4.1", "0.4.2"]) as (session, p, build, sides):
        nodes = json.loads(Path(sides["0.4.2"].files["nodes"]).read_text())
        norm = next(n for n, v in nodes.items() if v["target"] == "aten.native_layer_norm.default")
        step = p.pair(sides, "0.4.1", "0.4.2")
        envs = [session.env("0.4.2")]
        out = cuts.region_runs(p, step, [Region("main", "", nodes={norm})], build, envs, {})
    [entry] = out["regions"]
    assert entry["reproduces"] is False and entry["drift"] is None
    assert [a["hops"] for a in entry["attempts"]] == list(cuts.HOPS)
    assert all(a["outcome"].startswith("does not reproduce") for a in entry["attempts"])
    assert "no cut reproduces the region's difference" in entry["why"]


def _sam3_small(raw: dict) -> None:
    # the miniature's run form (168x168) as the compared form, exported with 0.4.0
    build = json.loads(json.dumps(raw["verify"]["build"]))
    build["config_overrides"]["vision_config"]["backbone_config"]["image_size"] = 168
    build["image"] = 168
    raw["verify"] = {"form": "miniature", "why": "test: the run form", "build": build}


def test_a_sam3_optimizer_region_is_reproduced_by_its_cut(converter_envs, tmp_path):
    """sam3's rope (squeeze, neg, unsqueeze in a ViT block's attention): the same lowering in
    0.4.0 and 0.4.1, shipped differently by coreai-core 1.0.0b1's and 1.0.0b2's optimizer. Its
    cut (its own three nodes) reproduces that and is measured on 1.0.0b1 (1.0.0b2 refuses the
    0.4.0 asset)."""
    registry = registry_with(tmp_path, "sam3", _sam3_small)
    with _stored(registry, ["0.4.0", "0.4.1"]) as (session, p, build, sides):
        step = p.pair(sides, "0.4.0", "0.4.1")
        shipped = whole.differing(step, sides["0.4.0"], sides["0.4.1"], "shipped")
        emitted = whole.differing(step, sides["0.4.0"], sides["0.4.1"], "emitted")
        texts = explain.stage_texts(step, sides["0.4.0"], sides["0.4.1"])
        rope = next(
            r
            for r in shipped
            if "aten.neg.default" in r.ops and any("attention" in m for m in r.modules)
        )
        assert explain.stage_of(rope, emitted, texts) == "optimizer"
        envs = [session.env("0.4.1"), session.env("0.4.0")]  # b2 first, as the chain tries
        out = cuts.region_runs(p, step, [rope], build, envs, {})
    [entry] = out["regions"]
    assert entry["reproduces"] is True and entry["hops"] == 0, entry
    assert entry["runtime"] == "linux-cpu, coreai-core 1.0.0b1"
    assert any("1.0.0b2" in a for a in entry["runtime_attempts"])
    [row] = entry["drift"]
    # the same values on both runtimes' programs, and right against torch fp32
    assert row["bit_identical"] and row["maxabs_old"] == 0.0
