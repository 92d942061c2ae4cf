"""Attribution by release step, on real conversions.

A view whose size is a dynamic input dim (`torch.export.Dim`, read with `aten.sym_size.int`)
ships a program that changes between 0.4.1 and 0.4.2 only. #13 (0.4.1) names view_dynamic, and
so does #56 (0.4.2, replace_sym_size_int): the change must be credited to #56, never to #13, and
with #56's old record (group norm and select only) it must be reported as an unexplained change
in 0.4.1->0.4.2, not blamed on #13. The case is sam3 (exported with 0.4.0) with its two
view_dynamic instances as its registry once recorded them: a dynamic input dim. Its
real views take `.item()` of a constant (`size_source = "constant"`) and change in no step, so
these tests give it a registry of their own (`dynamic_views`); the shipped registry's answer is
checked too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from cli import invoke
from doubles.oracles import DyingWorkers
from registries import registry_with

from inventory.attribution import explaining, held, locate, release_steps, stage, step_note
from oracle.catalog.fixes import Fix, load_fixes
from oracle.catalog.releases import load_catalog
from oracle.compare.spec import ProbeSpec
from oracle.session import Session

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str):
    proc = invoke(*args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _dynamic(raw: dict) -> None:
    for instance in raw["instances"]:
        if instance["kind"] == "view_dynamic":
            instance["params"].pop("size_source")
            instance["params"]["dynamic_batch"] = [1, 144]


@pytest.fixture(scope="module")
def dynamic_views(tmp_path_factory) -> str:
    """sam3 whose views read a dynamic input dim (see the module's docstring)."""
    return str(registry_with(tmp_path_factory.mktemp("attribution"), "sam3", _dynamic))


def _view_probes(data: dict) -> list[dict]:
    (sam3,) = data["bundles"]
    return [p for p in sam3["probes"] if p["spec"]["construct"] == "view_dynamic"]


def _changed(probe: dict) -> list[tuple[str, list[str]]]:
    return [(f"{s['from']}->{s['to']}", s["explained_by"]) for s in probe["steps"] if s["changed"]]


def test_release_steps_walk_the_catalog_in_order(catalog):
    assert release_steps(catalog, "0.4.0", "0.4.3") == [
        ("0.4.0", "0.4.1"),
        ("0.4.1", "0.4.2"),
        ("0.4.2", "0.4.3"),
    ]
    assert release_steps(catalog, "0.4.1", "0.4.2") == [("0.4.1", "0.4.2")]


def _fix(id: str, ships_in: str, *constructs: str, kind: str = "lowering") -> Fix:
    return Fix(id, f"fix {id}", ships_in, "", tuple(constructs), kind=kind)


def test_a_step_is_explained_only_by_lowering_records_of_that_step_naming_the_construct():
    """Pure: `explaining` decides which records a step's change is credited to (the sweeps,
    plans and release notes all go through it)."""
    fixes = [
        _fix("13", "0.4.1", "view_dynamic", "arange"),
        _fix("40", "0.4.2", "conv_transpose"),
        _fix("56", "0.4.2", "view_dynamic", "cat_dynamic"),
        _fix("core-b2", "0.4.1", "asset_hierarchy", kind="pipeline"),
        _fix("28", "0.4.1", "asset_hierarchy", kind="asset"),
    ]
    assert explaining(fixes, "view_dynamic", "0.4.1", "0.4.2") == ("56",)
    assert explaining(fixes, "view_dynamic", "0.4.0", "0.4.1") == ("13",)
    assert explaining(fixes, "view_dynamic", "0.4.0", "0.4.2") == ("13", "56")
    assert explaining(fixes, "conv_transpose", "0.4.1", "0.4.2") == ("40",)
    # without #40's record its step's conv transpose change is unexplained, never given to #56
    assert explaining([f for f in fixes if f.id != "40"], "conv_transpose", "0.4.1", "0.4.2") == ()
    # asset and pipeline records never explain a lowering change, even naming the construct
    assert explaining(fixes, "asset_hierarchy", "0.4.0", "0.4.1") == ()
    assert explaining(fixes, "view_dynamic", "0.4.2", "0.4.3") == ()


def _step_result(emitted: str, shipped: str = "differs"):
    from oracle.compare.results import Identity, ProbeResult, Side
    from oracle.compare.spec import ProbeSpec

    ok: dict[str, Any] = {"packages": {}, "ok": True}
    return ProbeResult(
        ProbeSpec("batch_norm", {}),
        Side("0.4.0", **ok),
        Side("0.4.1", **ok),
        Identity(emitted),
        Identity(shipped),
        None,
        "",
    )


def test_a_change_the_optimizer_alone_made_is_the_pipeline_records_never_the_lowerings():
    """The emitted programs are identical and the shipped ones differ: no lowering emitted
    anything else, so a lowering record naming the construct is not credited (a
    pipeline change was); the step's pipeline record is, as verify's rule (b) credits it."""
    fixes = [
        _fix("13", "0.4.1", "batch_norm"),
        _fix("54", "0.4.2", "batch_norm"),
        _fix("core-b2", "0.4.1", "asset_hierarchy", kind="pipeline"),
    ]
    assert stage(_step_result("identical")) == "optimizer"
    assert explaining(fixes, "batch_norm", "0.4.0", "0.4.1", _step_result("identical")) == (
        "core-b2",
    )
    assert explaining(fixes, "batch_norm", "0.4.0", "0.4.1", _step_result("differs")) == ("13",)
    # 0.4.3's emitted program is already optimized: the stage cannot be told, as in verify
    assert explaining(fixes, "batch_norm", "0.4.0", "0.4.1", _step_result("not-comparable")) == (
        "13",
    )
    # a step without a pipeline record leaves the optimizer's change unexplained, and says why
    assert explaining(fixes, "batch_norm", "0.4.1", "0.4.2", _step_result("identical")) == ()
    assert "only optimize()'s output differs" in step_note(_step_result("identical"), False)
    assert step_note(_step_result("identical"), True) == ""


def test_the_asset_probe_is_explained_by_the_records_of_the_constructs_it_holds():
    """Bisection saw #54's fp16 batch norm commit change the fp16 asset probe; the probe's
    blocks hold batch norms, so #54's record explains that change."""
    fixes = [_fix("54", "0.4.2", "batch_norm"), _fix("40", "0.4.2", "conv_transpose")]
    assert held("asset_hierarchy") == ("asset_hierarchy", "batch_norm")
    assert explaining(fixes, "asset_hierarchy", "0.4.1", "0.4.2") == ("54",)


def test_a_change_of_a_later_step_is_not_blamed_on_an_earlier_fix(
    converter_envs, json_schema, dynamic_views
):
    proc = run(
        "affected",
        "--fix",
        "13",
        "--to",
        "0.4.3",
        "-b",
        "sam3",
        "--registry",
        dynamic_views,
        "--json",
        "-q",
    )
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    views = _view_probes(data)
    assert len(views) == 2
    for p in views:
        # measured over the whole range the program changes (outputs bit-identical) ...
        assert p["shipped"] == "differs" and p["elsewhere"]["verdict"] == "values-identical"
        # ... in 0.4.1 -> 0.4.2 only, where #56 explains it; #13's own step leaves it alone
        assert _changed(p) == [("0.4.1->0.4.2", ["56"])]
        own = next(s for s in p["steps"] if s["to"] == "0.4.1")
        assert own["shipped"] == "identical"
        assert (p["verdict"], p["reexport"]) == ("same-program", "no")
        assert p["reason"].startswith("at 0.4.0->0.4.1, the step fix #13 ships in: ")

    proc = run(
        "affected",
        "--fix",
        "56",
        "--to",
        "0.4.3",
        "-b",
        "sam3",
        "--registry",
        dynamic_views,
        "--json",
        "-q",
    )
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    for p in _view_probes(data):
        assert (p["verdict"], p["reexport"]) == ("values-identical", "optional")
        assert p["elsewhere"] is None and _changed(p) == [("0.4.1->0.4.2", ["56"])]


def test_plan_names_the_step_and_lists_a_change_no_record_explains_apart(
    matrix, json_schema, tmp_path, dynamic_views
):
    # the shipped sam3: its views change in no step, so neither #13 nor #56 is a reason
    shipped = matrix.run_cli(("plan", "--to", "0.4.3")).data["result"]
    (sam3,) = [b for b in shipped["bundles"] if b["bundle"] == "sam3"]
    items = {
        i["fix"]: i
        for level in ("required", "inconclusive", "unchecked", "optional", "not_affected")
        for i in sam3[level]
    }
    assert items["13"]["changed_in"] == [] and items["56"]["changed_in"] == []
    assert items["56"]["verdict"] == "same-program" and sam3["unexplained"] == []

    proc = run("plan", "--to", "0.4.3", "-b", "sam3", "--registry", dynamic_views, "--json", "-q")
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    (sam3,) = data["bundles"]
    items = {
        i["fix"]: i
        for level in ("required", "inconclusive", "unchecked", "optional", "not_affected")
        for i in sam3[level]
    }
    assert items["13"]["verdict"] == "same-program" and items["13"]["changed_in"] == [
        {"step": "0.4.1->0.4.2", "explained_by": ["56"]}
    ]
    assert items["56"] in sam3["optional"]
    assert {"step": "0.4.1->0.4.2", "explained_by": ["56"]} in items["56"]["changed_in"]
    # no fix is listed as a reason whose own step leaves its probes identical
    ships_in = {f["id"]: f["ships_in"] for f in _records()}
    for level in ("required", "optional"):
        for i in sam3[level]:
            if i["kind"] == "lowering" and i["changed_in"]:
                assert any(
                    c["step"].endswith(f"->{ships_in[i['fix']]}") for c in i["changed_in"]
                ), i
    assert sam3["unexplained"] == []

    old_56 = [
        {**f, "constructs": ["group_norm", "select_dynamic"]} if f["id"] == "56" else f
        for f in _records()
    ]
    fixes = tmp_path / "old-56.toml"
    fixes.write_text(tomli_w.dumps({"fix": old_56}))
    proc = run(
        "plan",
        "--to",
        "0.4.3",
        "-b",
        "sam3",
        "--registry",
        dynamic_views,
        "--json",
        "-q",
        "--fixes",
        str(fixes),
    )
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    (sam3,) = data["bundles"]
    unexplained = [u for u in sam3["unexplained"] if u["construct"] == "view_dynamic"]
    assert {u["step"] for u in unexplained} == {"0.4.1->0.4.2"} and len(unexplained) == 2
    assert {(u["verdict"], u["reexport"]) for u in unexplained} == {
        ("values-identical", "optional")
    }
    items = {
        i["fix"]: i
        for level in ("required", "inconclusive", "unchecked", "optional", "not_affected")
        for i in sam3[level]
    }
    assert items["13"]["verdict"] == "same-program"  # still not blamed on #13
    assert {"step": "0.4.1->0.4.2", "explained_by": []} in items["13"]["changed_in"]


def _records() -> list[dict]:
    return tomllib.loads((ROOT / "oracle" / "catalog" / "fixes.toml").read_text())["fix"]


def test_sweep_over_the_shipped_instances_explains_every_change_of_0_4_2(
    matrix, json_schema, tmp_path, dynamic_views
):
    """`sweep --registry`: every distinct traced instance of the five bundles under 0.4.1 and
    0.4.2. The changes are #54's fp16 batch norms. With views that read a dynamic input dim they
    include sam3's two views, explained by #56; with #56's old record those are unexplained
    (exit 1), and nothing else is."""

    def sweep(*extra: str) -> tuple[int, dict]:
        proc = run(
            "sweep", "--registry", "--from", "0.4.1", "--to", "0.4.2", "--json", "-q", *extra
        )
        document = json.loads(proc.stdout)
        json_schema(document)
        data = document["result"]
        return proc.returncode, data

    ran = matrix.run_cli(("sweep", "--registry", "--from", "0.4.1", "--to", "0.4.2"))
    json_schema(ran.data)
    code, data = ran.exit, ran.data["result"]
    assert code == 0 and data["source"] == "registry" and data["unexplained"] == []
    changed = {c["probe"].split(":")[0]: c["explained_by"] for c in data["changed"]}
    assert changed == {
        "batch_norm/parakeet": ["54"],
        "batch_norm/lfm_audio": ["54"],
        "batch_norm/sortformer": ["54"],
    }
    assert len(data["changed"]) == 3 and data["probed"] > 40

    code, data = sweep("--registry-file", dynamic_views)
    assert code == 0
    assert {c["probe"].split(":")[0]: c["explained_by"] for c in data["changed"]} == {
        "view_dynamic/sam3": ["56"]
    }

    old_56 = [
        {**f, "constructs": ["group_norm", "select_dynamic"]} if f["id"] == "56" else f
        for f in _records()
    ]
    fixes = tmp_path / "old-56.toml"
    fixes.write_text(tomli_w.dumps({"fix": old_56}))
    code, data = sweep("--registry-file", dynamic_views, "--fixes", str(fixes))
    assert code == 1
    assert [u.split(":")[0] for u in data["unexplained"]] == ["view_dynamic/sam3"] * 2


def _both_fail(old_error: str, new_error: str):
    from oracle.compare.results import Identity, ProbeResult, Side
    from oracle.compare.spec import ProbeSpec

    side: dict[str, Any] = {"packages": {}, "ok": False, "stage": "worker"}
    return ProbeResult(
        ProbeSpec("pad", {}),
        Side("0.4.1", error=old_error, **side),
        Side("0.4.2", error=new_error, **side),
        Identity.BOTH_CANNOT_CONVERT,
        Identity.BOTH_CANNOT_CONVERT,
        None,
        "",
    )


def test_two_releases_that_fail_alike_are_no_change_though_each_error_names_its_environment():
    """A crashed worker's error names its environment: compared as written, two releases that
    crash alike counted as a change (found by bisection, whose commits are environments)."""
    from inventory.attribution import program_changed

    died = "{0} worker died of SIGABRT (log: /c/logs/{0}.worker.log)"
    assert not program_changed(
        _both_fail(died.format("coreai-torch-0.4.1"), died.format("coreai-torch-0.4.2"))
    )
    assert program_changed(
        _both_fail(died.format("coreai-torch-0.4.1"), "convert: Unsupported ATen op: pow")
    )


def test_a_failure_reads_alike_across_location_formats_and_the_sides_own_folders(tmp_path):
    """0.4.0 writes fused call-stack locations, 0.4.1 debuginfo ones (#28), and a save error
    names the side's own folder: `sweep --from 0.4.0 --to 0.4.1` counted four failures that are
    the same under both releases as unexplained changes. The full message comes from the
    traceback the worker kept (the one-line error stops at 500 characters)."""
    from inventory.attribution import program_changed
    from oracle.compare.results import Identity, ProbeResult, Side
    from oracle.compare.spec import ProbeSpec

    message = (
        "RuntimeError: Failed to apply passes to module: at {loc}:  shrink dimension 1 "
        "has dynamic dimension length in input tensor. at {loc}: see current operation"
    )
    fused = (
        'loc(fused<{call_stack = ["Consumed$1"]}>["/src/a/conv.py":81:0, "coreai"("op_id":46:0)])'
    )
    debuginfo = (
        '#debuginfo.location<loc("/src/b/conv.py":81:0) in @main metadata = '
        '[<"op_id": {type = "torch", value = 4 : ui64}>]>'
    )

    def side(release: str, loc: str) -> Side:
        trace = tmp_path / f"{release}.traceback.txt"
        trace.write_text(
            'Traceback (most recent call last):\n  File "w.py", line 1\n'
            + message.format(loc=loc)
            + "\n"
        )
        return Side(
            release,
            {},
            False,
            "optimize",
            "RuntimeError: Failed to apply passes",
            {"traceback": str(trace)},
        )

    def both(old: Side, new: Side) -> ProbeResult:
        return ProbeResult(
            ProbeSpec("conv_transpose", {}),
            old,
            new,
            Identity.BOTH_CANNOT_CONVERT,
            Identity.BOTH_CANNOT_CONVERT,
            None,
            "",
        )

    assert not program_changed(both(side("0.4.0", fused), side("0.4.1", debuginfo)))
    persist = "save: RuntimeError: failed to persist mlasset to /r/.q-{0}.ab12/{1}/model.aimodel"
    plain: dict[str, Any] = {"packages": {}, "ok": False, "stage": "save"}
    assert not program_changed(
        both(
            Side("0.4.0", error=persist.format("1", "old-0.4.0"), **plain),
            Side("0.4.1", error=persist.format("2", "new-0.4.1"), **plain),
        )
    )
    # a failure that reads otherwise is still a change
    other = Side("0.4.1", error="ValueError: convolution[0]: dim[2] 19 vs 18", **plain)
    assert program_changed(both(side("0.4.0", fused), other))


def test_programs_of_two_stages_credit_the_pipeline_record_and_the_lowerings_and_say_so():
    """A probe whose pipeline does not optimize, under 0.4.2 (ships the emitted program) and
    0.4.3 (to_coreai() returns an optimized one): the optimizer's work is part of the change
    (it was once left unexplained, or credited to a lowering record alone); a lowering
    change under it cannot be told apart, so both kinds are credited and the step says why."""
    from dataclasses import replace

    from inventory.attribution import step_between
    from oracle.compare.spec import Pipeline

    fixes = [_fix("79", "0.4.3", "batch_norm"), _fix("core-b3", "0.4.3", kind="pipeline")]
    unoptimized = replace(
        _step_result("not-comparable"),
        spec=ProbeSpec("batch_norm", {}, pipeline=Pipeline(optimize=False)),
    )
    assert stage(unoptimized) == "lowering or optimizer"
    assert explaining(fixes, "batch_norm", "0.4.2", "0.4.3", unoptimized) == ("79", "core-b3")
    assert explaining(fixes, "quantize", "0.4.2", "0.4.3", unoptimized) == ("core-b3",)
    step = step_between(
        fixes, replace(unoptimized.spec, construct="quantize"), "0.4.2", "0.4.3", unoptimized
    )
    assert step.explained_by == ("core-b3",) and "of two stages" in step.note
    # an optimizing pipeline: 0.4.3's emitted stage is not comparable, and lowering it stays
    assert stage(_step_result("not-comparable")) == "lowering"


def test_a_step_whose_environment_cannot_be_built_attributes_nothing_not_an_error(
    tmp_path, monkeypatch
):
    # a changed program over two steps is located step by step, each built when it first
    # converts: a build that fails there (the shared torch's lock held by another process,
    # INVENTORY_LOCK_TIMEOUT=0) attributes nothing, as when the environment failed up front
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path))
    monkeypatch.setenv("INVENTORY_LOCK_TIMEOUT", "0")
    catalog = load_catalog()
    spec = ProbeSpec(
        "conv_transpose",
        {
            "dim": 1,
            "in_channels": 5,
            "out_channels": 2,
            "kernel": [4],
            "stride": [2],
            "padding": [0],
            "output_padding": [1],
            "input_shape": [1, 5, 11],
        },
    )
    torch = f"torch-{catalog.torch}"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\nfrom oracle.envs.environment import locked\n"
            f"with locked({torch!r}):\n    print('held', flush=True)\n    time.sleep(300)\n",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "INVENTORY_CACHE": str(tmp_path)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        # the whole range's comparison, as a test double gives it: only one side converts
        with Session(catalog, oracle=DyingWorkers()) as fake:
            whole = fake.compare(spec, fake.env("0.4.0"), fake.env("0.4.2"))
        with Session(catalog) as session:
            steps = locate(session, spec, "0.4.0", "0.4.2", whole, load_fixes())
    finally:
        holder.kill()
        holder.wait()
    assert steps == ()
    assert not (tmp_path / "envs" / "coreai-torch-0.4.0").exists()  # nothing was built
