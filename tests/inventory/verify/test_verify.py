"""`inventory verify` on real converters and the real runtime: whole programs built from the
bundles' targets, converted whole under every release from the exporter to the target, compared
step by step, located, attributed and run.

mimi is verified at full size (the shipped registry's form). sortformer's full form takes about
two minutes per release here, so these tests give it a registry of their own whose verify form
is a miniature (one conformer layer, one transformer layer, a short chunk): the same constructs
in the same regime at a fraction of the cost. That registry also says it was exported with
coreai-torch 0.4.0 (the shipped one says 0.4.1), so its chain has two steps: 0.4.0 -> 0.4.1,
where nothing of its program changes, and 0.4.1 -> 0.4.2, where #54 changes its batch norm; and
the 0.4.0 asset is one a 1.0.0b2 runtime refuses, so the chain runs on 1.0.0b1. The full
answers are recorded in docs/measurements.md (scripts/verify-bundles)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from cli import Ran, invoke, spawn
from registries import registry_with
from store_answers import borrowing_store

from oracle.infra.paths import envs_dir

ROOT = Path(__file__).resolve().parents[3]
REGISTRY = ROOT / "recipes.toml"
# a release-day draft database without #54's record (tests/golden/drafts)
DRAFT_NO54 = ROOT / "tests" / "golden" / "drafts" / "no54.toml"


# sortformer in small: every construct kind of the full step, one layer of each encoder
MINI = {"chunk_mel": 160, "spkcache": 12, "layers": 1, "tf_layers": 1}


def run(*args: str, **env: str) -> Ran:
    proc = invoke(*args, **env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def verify_json(*args: str, json_schema=None, **env: str) -> tuple[int, dict]:
    proc = run("verify", *args, "--json", "-q", **env)
    document = json.loads(proc.stdout)
    if json_schema is not None:
        json_schema(document)
    return proc.returncode, document["result"]


def mini_sortformer(raw: dict) -> None:
    raw["verify"] = {
        "form": "miniature",
        "why": "test: one layer of each encoder",
        "build": dict(MINI),
    }
    # as if exported with 0.4.0: a chain of two steps (see the module's docstring)
    raw["exporter"] = {**raw["exporter"], "converter": "0.4.0", "core": "1.0.0b1"}


@pytest.fixture(scope="module")
def sortformer_mini(converter_envs, tmp_path_factory, json_schema) -> tuple[int, dict, Path]:
    registry = registry_with(tmp_path_factory.mktemp("verify"), "sortformer", mini_sortformer)
    code, data = verify_json(
        "sortformer", "--to", "0.4.2", "--registry", str(registry), json_schema=json_schema
    )
    return code, data, registry


@pytest.fixture(scope="module")
def own_store(converter_envs, tmp_path_factory) -> dict[str, str]:
    """A result store of these tests' own (the environments shared) for checks of the shipped
    registry's forms: a stored whole-program check joins `plan` and answers a pipeline record
    in `affected` (one answer), so one left in the session's store would change the golden
    answers, which are of a store without checks (tests/golden/README.md)."""
    cache = tmp_path_factory.mktemp("verify-store")
    (cache / "envs").symlink_to(envs_dir())
    return {"INVENTORY_CACHE": str(cache)}


@pytest.mark.parametrize("to", ["0.4.2", "0.4.3"])
def test_mimi_whole_program_is_identical_and_agrees_with_every_probe(
    converter_envs, to, json_schema, own_store
):
    code, data = verify_json("mimi", "--to", to, json_schema=json_schema, **own_store)
    b = data["bundles"][0]
    assert code == 0, b
    assert b["status"] == "consistent" and b["consistent"] is True
    assert b["form"]["form"] == "full" and b["form"]["standin"] is True
    assert b["shipped"]["identity"] == "identical"
    assert b["verdict"] == "same-program" and b["reexport"] == "no"
    assert b["answer"].startswith(f"identical shipped programs: no fix between 0.4.1 and {to}")
    assert b["probes"]["probed"] > 0 and b["probes"]["changed"] == []
    assert b["run"] is None and b["regions"] == [] and b["unrecorded"] == []
    # every release of the chain converted once, every step compared
    releases = ["0.4.1", "0.4.2", "0.4.3"][: 2 if to == "0.4.2" else 3]
    assert b["releases"] == releases and list(b["sides"]) == releases
    assert [s["step"] for s in b["steps"]] == [
        f"{a}->{c}" for a, c in zip(releases, releases[1:], strict=False)
    ]
    # cost is reported per side; the evidence is in the store
    assert all(s["ok"] and s["seconds"] > 0 and s["peak_mb"] > 0 for s in b["sides"].values())
    evidence = Path(b["evidence"])
    assert (evidence / "shipped.old.normalised.mlir").read_text() == (
        evidence / "shipped.new.normalised.mlir"
    ).read_text()
    assert (Path(b["build"]["evidence"]) / "program.pt2").is_file()
    # content-addressed: the second run reads the stored parts
    code, again = verify_json("mimi", "--to", to, **own_store)
    assert code == 0 and again["bundles"][0]["cached"] is True


def test_0_4_3s_emitted_program_is_captured_before_its_optimizer(converter_envs, own_store):
    """0.4.3's to_coreai() returns an optimized program; the worker prints it before the
    coreai-core b3 rewrite runs, so its emitted program is comparable with 0.4.2's (mimi's are
    the same) and the stage of a change can be told in that step too."""
    _code, data = verify_json("mimi", "--to", "0.4.3", **own_store)
    last = data["bundles"][0]["steps"][-1]
    assert last["step"] == "0.4.2->0.4.3"
    assert last["emitted"]["identity"] == "identical"


def test_a_probe_that_changes_where_the_whole_program_does_not_is_an_inconsistency(
    converter_envs, tmp_path, json_schema, own_store
):
    """mimi's whole program is identical under 0.4.1 and 0.4.2; a registry that (wrongly) says
    it holds an fp16 batch norm, whose probe does change in 0.4.2 (#54), must be caught."""
    sortformer = tomllib.loads(REGISTRY.read_text())["bundles"]["sortformer"]
    batch_norm = next(i for i in sortformer["instances"] if i["kind"] == "batch_norm")

    def add_batch_norm(raw: dict) -> None:
        raw["instances"] = [*raw["instances"], batch_norm]

    registry = registry_with(tmp_path, "mimi", add_batch_norm)
    code, data = verify_json(
        "mimi", "--to", "0.4.2", "--registry", str(registry), json_schema=json_schema, **own_store
    )
    b = data["bundles"][0]
    assert code == 3
    assert b["status"] == "inconsistent"
    assert [c["construct"] for c in b["probes"]["changed"]] == ["batch_norm"]
    assert any(
        "whole shipped programs are identical" in i and "batch_norm" in i
        for i in b["inconsistencies"]
    ), b["inconsistencies"]


def test_sortformer_changes_only_in_0_4_2_in_its_batch_norm_lowering_explained_by_54(
    sortformer_mini,
):
    code, data, _ = sortformer_mini
    b = data["bundles"][0]
    assert code == 0, (b["inconsistencies"], b["unrecorded"])
    assert b["status"] == "consistent" and b["unrecorded"] == []
    assert b["releases"] == ["0.4.0", "0.4.1", "0.4.2"]
    first, second = b["steps"]
    assert first["step"] == "0.4.0->0.4.1" and first["shipped"]["identity"] == "identical"
    assert second["step"] == "0.4.1->0.4.2" and second["shipped"]["identity"] == "differs"
    assert b["shipped"]["identity"] == "differs"  # the exporter's against the target's
    [region] = b["regions"]
    assert region["step"] == "0.4.1->0.4.2"
    # the lowering emits something else for the batch norm (not the optimizer)
    assert region["stage"] == "lowering"
    assert region["composite"] == "batch_norm" and region["constructs"] == ["batch_norm"]
    assert region["modules"] == ["stack.encoder.layers.0.conv.norm"]
    assert region["ops"] == ["aten._native_batch_norm_legit_no_training.default"]
    assert region["explained_by"] == ["54"]
    assert region["explained_how"] == {"54": "construct batch_norm"}
    assert region["unrecorded"] is False
    changed = b["probes"]["changed"]
    assert changed and {(c["construct"], c["step"]) for c in changed} == {
        ("batch_norm", "0.4.1->0.4.2")
    }


def test_the_chain_runs_on_one_runtime_and_measures_each_step(sortformer_mini):
    _code, data, _ = sortformer_mini
    b = data["bundles"][0]
    run_ = b["run"]
    # 1.0.0b2 refuses the 0.4.0 asset (#28): the whole chain runs on 1.0.0b1, and says so
    assert run_["ok"] and run_["runtime"] == "linux-cpu, coreai-core 1.0.0b1", run_
    assert any("1.0.0b2" in a and "0.4.0" in a for a in run_["attempts"]), run_["attempts"]
    assert sorted(run_["seconds"]) == ["0.4.0", "0.4.1", "0.4.2"]
    assert [o["output"] for o in run_["outputs"]] == ["preds", "chunk_pe"]
    preds, chunk_pe = run_["outputs"]
    # the batch norm sits after chunk_pe: the subsampling output is the same on both sides,
    # while the encoder's output moves
    assert chunk_pe["maxabs_old_new"] == 0.0
    assert preds["maxabs_old_new"] > 0.0
    assert preds["nonfinite_old"] == preds["nonfinite_new"] == 0
    assert 0 < preds["maxabs_new"] < 1 and 0 < preds["maxabs_old"] < 1
    first, second = b["steps"]
    # the step where nothing changes moves nothing; the other moves what the whole pair moves
    assert all(r["bit_identical"] for r in first["drift"])
    assert [r["maxabs_old_new"] for r in second["drift"]] == [
        r["maxabs_old_new"] for r in run_["outputs"]
    ]
    assert first["runtime"] == second["runtime"] == run_["runtime"]
    assert b["verdict"] == "values-move" and b["reexport"] in ("optional", "required")


def test_a_change_no_record_of_its_step_explains_is_unrecorded_with_its_drift(
    sortformer_mini, json_schema
):
    """Release day: a draft database without #54's record. The same whole program (read
    back), but its batch-norm region is then explained by no record: listed as an unrecorded
    change of 0.4.1 -> 0.4.2 with the step's drift, exit 1."""
    _code, mine, registry = sortformer_mini
    code, data = verify_json(
        "sortformer",
        "--to",
        "0.4.2",
        "--registry",
        str(registry),
        "--fixes",
        str(DRAFT_NO54),
        json_schema=json_schema,
    )
    b = data["bundles"][0]
    assert code == 1 and data["unrecorded"] is True
    assert b["cached"] is True  # the same whole program: read back, not measured again
    [region] = b["regions"]
    assert region["unrecorded"] is True and region["explained_by"] == []
    [u] = b["unrecorded"]
    assert u["step"] == "0.4.1->0.4.2" and u["stage"] == "lowering"
    assert u["constructs"] == ["batch_norm"] and u["regions"] == 1
    assert u["modules"] == ["stack.encoder.layers.0.conv.norm"]
    assert "54" not in u["records_of_step"] and "55" in u["records_of_step"]
    assert u["drift"] == mine["bundles"][0]["steps"][1]["drift"]
    assert u["reexport"] == mine["bundles"][0]["reexport"]


def test_plan_and_verify_give_one_answer(sortformer_mini, json_schema):
    """`plan --verify` and `verify` field by field; `plan` without --verify reads the stored
    check; an unrecorded change sets the plan's level (the draft without #54)."""
    _code, _data, registry = sortformer_mini
    for fixes in (None, DRAFT_NO54):
        extra = ["--fixes", str(fixes)] if fixes else []
        _c, checked = verify_json(
            "sortformer", "--to", "0.4.2", "--registry", str(registry), *extra
        )
        for flag in (["--verify"], []):
            proc = run(
                "plan",
                "--to",
                "0.4.2",
                "-b",
                "sortformer",
                "--registry",
                str(registry),
                *extra,
                *flag,
                "--json",
                "-q",
            )
            document = json.loads(proc.stdout)
            json_schema(document)
            [b] = document["result"]["bundles"]
            assert b["verify"] == checked["bundles"][0], (fixes, flag)
            if fixes:
                [u] = b["verify"]["unrecorded"]
                levels = ("required", "inconclusive", "unchecked", "optional", "no")
                assert levels.index(b["reexport"]) <= levels.index(u["reexport"])
            # the pipeline record is answered on the same stored program
            [pin] = [
                i
                for level in ("required", "optional", "inconclusive", "unchecked", "not_affected")
                for i in b[level]
                if i["fix"] == "core-b2"
            ]
            assert (
                "the whole miniature program is identical across 0.4.0->0.4.1" in pin["reason"]
            ), pin["reason"]
            if not fixes:
                [item] = [
                    i
                    for level in (
                        "required",
                        "optional",
                        "inconclusive",
                        "unchecked",
                        "not_affected",
                    )
                    for i in b[level]
                    if i["fix"] == "54"
                ]
                [joined] = item["whole_program"]
                assert joined["step"] == "0.4.1->0.4.2" and joined["stage"] == "lowering"
                assert joined["rule"] == "construct batch_norm"


def test_a_pipeline_record_is_answered_on_the_bundles_own_program(sortformer_mini, json_schema):
    """core-b2 ships in 0.4.1: for a bundle exported with 0.4.0 its step is 0.4.0 -> 0.4.1,
    which the stored check measured: no region of that step, so the pin changes nothing this
    bundle ships; and the answer agrees with what verify says of that step."""
    _code, data, registry = sortformer_mini
    proc = run(
        "affected",
        "--fix",
        "core-b2",
        "-b",
        "sortformer",
        "--registry",
        str(registry),
        "--json",
        "-q",
    )
    out = json.loads(proc.stdout)
    json_schema(out)
    [b] = out["result"]["bundles"]
    whole = b["whole_program"]
    step = data["bundles"][0]["steps"][0]
    assert whole["step"] == step["step"] == "0.4.0->0.4.1"
    assert whole["shipped"] == step["shipped"]["identity"] == "identical"
    assert whole["evidence"] == step["evidence"]
    assert b["verdict"] == "same-program" and b["reexport"] == "no"
    assert b["probes"] == []  # not the asset probe


def test_a_run_that_exceeds_the_timeout_is_inconclusive_not_stored(sortformer_mini, tmp_path):
    _code, _data, registry = sortformer_mini
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    # a process of its own, as a user sets the variable (oracle.infra.settings reads it when a run
    # starts)
    # a limit no run meets, the regions' small cuts included (a region measured at its cut would
    # judge the level without the model-level run)
    proc = spawn(
        "verify",
        "sortformer",
        "--to",
        "0.4.2",
        "--registry",
        str(registry),
        "--json",
        "-q",
        INVENTORY_CACHE=str(cache),
        INVENTORY_VERIFY_RUN_TIMEOUT="0.001",
    )
    code, data = proc.returncode, json.loads(proc.stdout)["result"]
    b = data["bundles"][0]
    assert code == 3 and b["status"] == "inconclusive"
    assert "did not answer within" in " ".join(b["run"]["attempts"])
    [region] = b["regions"]
    assert region["region_run"]["reproduces"] is True and region["region_run"]["drift"] is None
    assert "did not answer within" in " ".join(region["region_run"]["runtime_attempts"])
    results = cache / "results"
    # the build and the conversions are kept (they repeat), and so would be a runtime's refusal
    # of an asset (an abort, the same every time); a run that timed out is not
    assert list(results.glob("verify-side-*")) and list(results.glob("verify-cutside-*"))
    stored = [
        json.loads((f / "result.json").read_text())
        for f in [*results.glob("verify-run-*"), *results.glob("verify-cutrun-*")]
    ]
    assert all(not r["ok"] and "SIGABRT" in r["error"] for r in stored), stored


def test_the_chain_s_sides_are_one_batch_of_calls_converted_two_at_a_time(
    sortformer_mini, tmp_path
):
    """The three releases' whole-program conversions are handed to the executor as one batch
    (`Oracle.calls`), the local executor converts two at once, and its ledger says so: the
    second started before the first ended, the third after one of them ended."""
    _code, _data, registry = sortformer_mini
    cache = borrowing_store(tmp_path, "cache")
    args = ("sortformer", "--to", "0.4.2", "--registry", str(registry), "--run-budget", "0")
    proc = spawn("verify", *args, "--json", "-q", INVENTORY_CACHE=str(cache))
    assert proc.returncode == 0, proc.stderr  # every change explained (#54), as in full
    calls = [
        c
        for p in sorted((cache / "runs" / "local").glob("*.json"))
        for c in json.loads(p.read_text())["calls"]
    ]
    sides = [c for c in calls if c["kind"] == "program-conversion" and c["batch"] == 1]
    assert sorted(c["release"] for c in sides) == ["0.4.0", "0.4.1", "0.4.2"]
    assert all(c["ok"] for c in sides)
    first, second, third = sorted(sides, key=lambda c: c["started"])
    assert second["started"] < first["ended"]  # two at once
    assert third["started"] >= min(first["ended"], second["ended"])  # never three
    # the region's cut and its two sides follow, each a call of its own kind
    assert {"region-cut", "program-conversion"} <= {c["kind"] for c in calls if c["batch"] > 1}


def test_a_bad_form_is_one_line_and_exit_2(tmp_path):
    def bad(raw: dict) -> None:
        raw["verify"] = {"form": "tiny"}

    registry = registry_with(tmp_path, "sortformer", bad)
    proc = run("verify", "sortformer", "--to", "0.4.2", "--registry", str(registry))
    assert proc.returncode == 2
    assert "form must be full or miniature, not 'tiny'" in proc.stderr
    proc = run("verify", "sortformer", "--to", "0.4.1")
    assert proc.returncode == 2 and "--to must be a later release" in proc.stderr


def test_plan_verify_adds_the_whole_bundle_check_to_the_plan(
    converter_envs, json_schema, own_store
):
    proc = run("plan", "--to", "0.4.2", "-b", "mimi", "--verify", "--json", "-q", **own_store)
    data = json.loads(proc.stdout)
    json_schema(data)
    [b] = data["result"]["bundles"]
    assert b["verify"]["status"] == "consistent" and b["verify"]["form"]["form"] == "full"
    assert b["verify"]["answer"].startswith("identical shipped programs")
    assert proc.returncode == 0
    # without --verify the stored check is read: the same answer
    plain = run("plan", "--to", "0.4.2", "-b", "mimi", "--json", "-q", **own_store)
    assert json.loads(plain.stdout)["result"]["bundles"][0]["verify"] == b["verify"]


def test_weights_are_loaded_by_name_and_a_checkpoint_matching_nothing_is_exit_2(
    converter_envs, tmp_path, json_schema
):
    import torch
    from safetensors.torch import save_file

    from inventory.trace.targets import mimi

    bad = tmp_path / "unrelated.safetensors"
    save_file({"nothing.here": torch.zeros(3)}, str(bad))
    proc = run("verify", "mimi", "--to", "0.4.2", "--weights", f"mimi={bad}", "-q")
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert "no tensor matches the module's state by name and shape" in line

    state = {
        k: v.clone().contiguous() for k, v in mimi.build(device="cpu").module.state_dict().items()
    }
    first = next(k for k, v in state.items() if v.is_floating_point() and v.dim() == 3)
    state[first] = state[first] * 1.5  # not what a seeded build holds
    good = tmp_path / "mimi.safetensors"
    save_file(state, str(good))
    code, data = verify_json(
        "mimi", "--to", "0.4.2", "--weights", f"mimi={good}", json_schema=json_schema
    )
    b = data["bundles"][0]
    assert code == 0 and b["cached"] is False  # other weights: another program, measured
    assert b["build"]["weights"]["loaded"] == len(state) == b["build"]["weights"]["state_entries"]
    assert b["shipped"]["identity"] == "identical"


def test_without_a_stored_check_a_pipeline_record_falls_back_to_the_asset_probe_and_says_so(matrix):
    """The shipped registry on the suite's store without checks: core-b2 is answered with the
    asset probe, its verdict says so (never a bare same-program: sam3's own program moves in
    that step), and the chain says it holds none of sam3's own patterns. Its level is
    `unchecked`, never "no": counted apart in the summary, exit 5, with the one command that
    checks the step on sam3's own program. (A stored check is read instead:
    tests/inventory/test_one_answer.py, test_a_pipeline_record_is_answered_on_the_...)"""
    run = matrix.run_cli(("affected", "--fix", "core-b2"))
    data = run.data["result"]
    sam3 = next(b for b in data["bundles"] if b["bundle"] == "sam3")
    assert run.exit == 5
    summary = run.data["summary"]
    assert summary["counts"]["unchecked"] >= 1
    assert {
        "bundle": "sam3",
        "level": "unchecked",
        "reason": "core-b2 (asset-probe-same-program)",
    } in (summary["bundles"])
    assert "`inventory verify sam3 --to 0.4.1` checks its whole program" in sam3["reason"]
    assert sam3["whole_program"] is None
    assert [p["probe"] for p in sam3["probes"]] and sam3["probes"][0]["probe"].startswith(
        "asset_hierarchy"
    )
    assert sam3["probes"][0]["verdict"] == "same-program"
    assert sam3["verdict"] == "asset-probe-same-program" and sam3["reexport"] == "unchecked"
    assert sam3["not_checked"].startswith("no whole-program check holding 0.4.0->0.4.1 is stored")
    assert sam3["reason"].startswith("answered by the asset probe alone, not on sam3's own program")
    assert any("the asset probe stands in" in line for line in sam3["chain"]), sam3["chain"]
