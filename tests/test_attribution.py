"""Attribution by release step (issue #11), on the shipped registry and real conversions.

sam3 (exported with 0.4.0) holds dynamic views whose shipped program changes between 0.4.1 and
0.4.2 only. #13 (0.4.1) names view_dynamic, and so does #56 (0.4.2, replace_sym_size_int): the
change must be credited to #56, never to #13, and with #56's old record (group norm and select
only) it must be reported as an unexplained change in 0.4.1->0.4.2, not blamed on #13.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import tomli_w
from cli import invoke

from inventory.attribution import explaining, release_steps
from oracle.fixes import Fix

ROOT = Path(__file__).resolve().parent.parent


def run(*args: str):
    proc = invoke(*args)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _view_probes(data: dict) -> list[dict]:
    (sam3,) = data["bundles"]
    return [p for p in sam3["probes"] if p["spec"]["construct"] == "view_dynamic"]


def _changed(probe: dict) -> list[tuple[str, list[str]]]:
    return [(f"{s['from']}->{s['to']}", s["explained_by"]) for s in probe["steps"]
            if s["changed"]]


def test_release_steps_walk_the_catalog_in_order(catalog):
    assert release_steps(catalog, "0.4.0", "0.4.3") == [
        ("0.4.0", "0.4.1"), ("0.4.1", "0.4.2"), ("0.4.2", "0.4.3")]
    assert release_steps(catalog, "0.4.1", "0.4.2") == [("0.4.1", "0.4.2")]


def _fix(id: str, ships_in: str, *constructs: str, kind: str = "lowering") -> Fix:
    return Fix(id, f"fix {id}", ships_in, "", tuple(constructs), kind=kind)


def test_a_step_is_explained_only_by_lowering_records_of_that_step_naming_the_construct():
    """Pure: `explaining` decides which records a step's change is credited to (the sweeps,
    plans and release notes all go through it)."""
    fixes = [_fix("13", "0.4.1", "view_dynamic", "arange"), _fix("40", "0.4.2", "conv_transpose"),
             _fix("56", "0.4.2", "view_dynamic", "cat_dynamic"),
             _fix("core-b2", "0.4.1", "asset_hierarchy", kind="pipeline"),
             _fix("28", "0.4.1", "asset_hierarchy", kind="asset")]
    assert explaining(fixes, "view_dynamic", "0.4.1", "0.4.2") == ("56",)
    assert explaining(fixes, "view_dynamic", "0.4.0", "0.4.1") == ("13",)
    assert explaining(fixes, "view_dynamic", "0.4.0", "0.4.2") == ("13", "56")
    assert explaining(fixes, "conv_transpose", "0.4.1", "0.4.2") == ("40",)
    # without #40's record its step's conv transpose change is unexplained, never given to #56
    assert explaining([f for f in fixes if f.id != "40"], "conv_transpose", "0.4.1", "0.4.2") == ()
    # asset and pipeline records never explain a lowering change, even naming the construct
    assert explaining(fixes, "asset_hierarchy", "0.4.0", "0.4.1") == ()
    assert explaining(fixes, "view_dynamic", "0.4.2", "0.4.3") == ()


def test_a_change_of_a_later_step_is_not_blamed_on_an_earlier_fix(matrix, json_schema):
    proc = run("affected", "--fix", "13", "--to", "0.4.3", "-b", "sam3", "--json", "-q")
    data = json.loads(proc.stdout)
    json_schema(data)
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

    proc = run("affected", "--fix", "56", "--to", "0.4.3", "-b", "sam3", "--json", "-q")
    data = json.loads(proc.stdout)
    json_schema(data)
    for p in _view_probes(data):
        assert (p["verdict"], p["reexport"]) == ("values-identical", "optional")
        assert p["elsewhere"] is None and _changed(p) == [("0.4.1->0.4.2", ["56"])]


def test_plan_names_the_step_and_lists_a_change_no_record_explains_apart(
        matrix, json_schema, tmp_path):
    data = matrix.run_cli(("plan", "--to", "0.4.3")).data
    (sam3,) = [b for b in data["bundles"] if b["bundle"] == "sam3"]
    items = {i["fix"]: i for level in ("required", "inconclusive", "optional", "not_affected")
             for i in sam3[level]}
    assert items["13"]["verdict"] == "same-program" and items["13"]["changed_in"] == [
        {"step": "0.4.1->0.4.2", "explained_by": ["56"]}]
    assert items["56"] in sam3["optional"]
    assert {"step": "0.4.1->0.4.2", "explained_by": ["56"]} in items["56"]["changed_in"]
    # no fix is listed as a reason whose own step leaves its probes identical
    ships_in = {f["id"]: f["ships_in"] for f in _records()}
    for level in ("required", "optional"):
        for i in sam3[level]:
            if i["kind"] == "lowering" and i["changed_in"]:
                assert any(c["step"].endswith(f"->{ships_in[i['fix']]}")
                           for c in i["changed_in"]), i
    assert sam3["unexplained"] == []

    old_56 = [{**f, "constructs": ["group_norm", "select_dynamic"]} if f["id"] == "56" else f
              for f in _records()]
    fixes = tmp_path / "old-56.toml"
    fixes.write_text(tomli_w.dumps({"fix": old_56}))
    proc = run("plan", "--to", "0.4.3", "-b", "sam3", "--json", "-q", "--fixes", str(fixes))
    data = json.loads(proc.stdout)
    json_schema(data)
    (sam3,) = data["bundles"]
    unexplained = [u for u in sam3["unexplained"] if u["construct"] == "view_dynamic"]
    assert {u["step"] for u in unexplained} == {"0.4.1->0.4.2"} and len(unexplained) == 2
    assert {(u["verdict"], u["reexport"]) for u in unexplained} == {
        ("values-identical", "optional")}
    items = {i["fix"]: i for level in ("required", "inconclusive", "optional", "not_affected")
             for i in sam3[level]}
    assert items["13"]["verdict"] == "same-program"  # still not blamed on #13
    assert {"step": "0.4.1->0.4.2", "explained_by": []} in items["13"]["changed_in"]


def _records() -> list[dict]:
    return tomllib.loads((ROOT / "oracle" / "fixes.toml").read_text())["fix"]


def test_sweep_over_the_shipped_instances_explains_every_change_of_0_4_2(
        matrix, json_schema, tmp_path):
    """`sweep --registry`: every distinct traced instance of the five bundles under 0.4.1 and
    0.4.2. The changes are #54's fp16 batch norms and sam3's dynamic views (#56); with #56's old
    record the views are unexplained (exit 1), and nothing else is."""
    def sweep(*extra: str) -> tuple[int, dict]:
        proc = run("sweep", "--registry", "--from", "0.4.1", "--to", "0.4.2", "--json", "-q",
                   *extra)
        data = json.loads(proc.stdout)
        json_schema(data)
        return proc.returncode, data

    ran = matrix.run_cli(("sweep", "--registry", "--from", "0.4.1", "--to", "0.4.2"))
    code, data = ran.exit, ran.data
    json_schema(data)
    assert code == 0 and data["source"] == "registry" and data["unexplained"] == []
    changed = {c["probe"].split(":")[0]: c["explained_by"] for c in data["changed"]}
    assert changed == {"batch_norm/parakeet": ["54"], "batch_norm/lfm_audio": ["54"],
                       "batch_norm/sortformer": ["54"], "view_dynamic/sam3": ["56"]}
    assert len(data["changed"]) == 5 and data["probed"] > 40

    old_56 = [{**f, "constructs": ["group_norm", "select_dynamic"]} if f["id"] == "56" else f
              for f in _records()]
    fixes = tmp_path / "old-56.toml"
    fixes.write_text(tomli_w.dumps({"fix": old_56}))
    code, data = sweep("--fixes", str(fixes))
    assert code == 1
    assert [u.split(":")[0] for u in data["unexplained"]] == ["view_dynamic/sam3"] * 2
