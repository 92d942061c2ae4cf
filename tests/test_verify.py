"""`inventory verify` on real converters and the real runtime: whole programs built from the
bundles' targets, converted whole under two releases, compared, located and run.

mimi is verified at full size (the shipped registry's form). sortformer's full form takes about
two minutes per release pair here, so these tests give it a registry of their own whose
verify form is a miniature (one conformer layer, one transformer layer, a short chunk): the
same constructs in the same regime at a fraction of the cost. The full answers are recorded in
the README (scripts/verify-bundles)."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import tomli_w
from cli import Ran, invoke, spawn

from oracle.paths import envs_dir

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "recipes.toml"



# sortformer in small: every construct kind of the full step, one layer of each encoder
MINI = {"chunk_mel": 160, "spkcache": 12, "layers": 1, "tf_layers": 1}


def run(*args: str, **env: str) -> Ran:
    proc = invoke(*args, **env)
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def verify_json(*args: str, json_schema=None, **env: str) -> tuple[int, dict]:
    proc = run("verify", *args, "--json", "-q", **env)
    data = json.loads(proc.stdout)
    if json_schema is not None:
        json_schema(data)
    return proc.returncode, data


def registry_with(tmp_path: Path, name: str, change) -> Path:
    """A copy of the shipped registry's bundle `name`, changed by `change(raw)`."""
    raw = tomllib.loads(REGISTRY.read_text())["bundles"][name]
    change(raw)
    path = tmp_path / f"{name}.toml"
    path.write_text(tomli_w.dumps({"bundles": {name: raw}}))
    return path


def mini_sortformer(raw: dict) -> None:
    raw["verify"] = {"form": "miniature", "why": "test: one layer of each encoder",
                     "build": dict(MINI)}


@pytest.fixture(scope="module")
def sortformer_mini(converter_envs, tmp_path_factory, json_schema) -> tuple[int, dict, Path]:
    registry = registry_with(tmp_path_factory.mktemp("verify"), "sortformer", mini_sortformer)
    code, data = verify_json("sortformer", "--to", "0.4.2", "--registry", str(registry),
                             json_schema=json_schema)
    return code, data, registry


@pytest.mark.parametrize("to", ["0.4.2", "0.4.3"])
def test_mimi_whole_program_is_identical_and_agrees_with_every_probe(converter_envs, to,
                                                                     json_schema):
    code, data = verify_json("mimi", "--to", to, json_schema=json_schema)
    b = data["bundles"][0]
    assert code == 0, b
    assert b["status"] == "consistent"
    assert b["form"]["form"] == "full" and b["form"]["standin"] is True
    assert b["shipped"]["identity"] == "identical"
    assert b["answer"].startswith(f"identical shipped programs: no fix between 0.4.1 and {to}")
    assert b["probes"]["probed"] > 0 and b["probes"]["changed"] == []
    assert b["run"] is None and b["regions"] == []
    # cost is reported per side; the evidence is in the store
    assert all(s["ok"] and s["seconds"] > 0 and s["peak_mb"] > 0 for s in b["sides"].values())
    evidence = Path(b["evidence"])
    assert (evidence / "shipped.old.normalised.mlir").read_text() == \
        (evidence / "shipped.new.normalised.mlir").read_text()
    assert (evidence / "build" / "program.pt2").is_file()
    # content-addressed: the second run reads the stored record
    code, again = verify_json("mimi", "--to", to)
    assert code == 0 and again["bundles"][0]["cached"] is True


def test_a_probe_that_changes_where_the_whole_program_does_not_is_an_inconsistency(
        converter_envs, tmp_path, json_schema):
    """mimi's whole program is identical under 0.4.1 and 0.4.2; a registry that (wrongly) says
    it holds an fp16 batch norm, whose probe does change in 0.4.2 (#54), must be caught."""
    sortformer = tomllib.loads(REGISTRY.read_text())["bundles"]["sortformer"]
    batch_norm = next(i for i in sortformer["instances"] if i["kind"] == "batch_norm")

    def add_batch_norm(raw: dict) -> None:
        raw["instances"] = [*raw["instances"], batch_norm]

    registry = registry_with(tmp_path, "mimi", add_batch_norm)
    code, data = verify_json("mimi", "--to", "0.4.2", "--registry", str(registry),
                             json_schema=json_schema)
    b = data["bundles"][0]
    assert code == 3
    assert b["status"] == "inconsistent"
    assert [c["construct"] for c in b["probes"]["changed"]] == ["batch_norm"]
    assert any("whole shipped programs are identical" in i and "batch_norm" in i
               for i in b["inconsistencies"]), b["inconsistencies"]


def test_sortformer_differs_only_in_its_batch_norm_composite_explained_by_54(sortformer_mini):
    code, data, _ = sortformer_mini
    b = data["bundles"][0]
    assert code == 0, b["inconsistencies"]
    assert b["status"] == "consistent"
    assert b["shipped"]["identity"] == "differs"
    [region] = b["regions"]
    assert region["composite"] == "batch_norm" and region["constructs"] == ["batch_norm"]
    assert region["modules"] == ["stack.encoder.layers.0.conv.norm"]
    assert region["ops"] == ["aten._native_batch_norm_legit_no_training.default"]
    assert "54" in region["explained_by"]
    assert [c["construct"] for c in b["probes"]["changed"]] == ["batch_norm"] * len(
        b["probes"]["changed"])


def test_sortformer_drift_is_measured_per_output_on_one_runtime(sortformer_mini):
    _code, data, _ = sortformer_mini
    run_ = data["bundles"][0]["run"]
    assert run_["ok"] and run_["runtime"] == "linux-cpu, coreai-core 1.0.0b2", run_
    assert [o["output"] for o in run_["outputs"]] == ["preds", "chunk_pe"]
    preds, chunk_pe = run_["outputs"]
    # the batch norm sits after chunk_pe: the subsampling output is the same on both sides,
    # while the encoder's output moves
    assert chunk_pe["maxabs_old_new"] == 0.0
    assert preds["maxabs_old_new"] > 0.0
    assert preds["nonfinite_old"] == preds["nonfinite_new"] == 0
    assert 0 < preds["maxabs_new"] < 1 and 0 < preds["maxabs_old"] < 1


def test_a_region_no_probe_explains_is_unexplained_and_exit_3(sortformer_mini, tmp_path,
                                                             json_schema):
    """The same whole program, with a registry that has lost the batch-norm instance: the
    differing batch-norm region is then explained by no probe."""
    def without_batch_norm(raw: dict) -> None:
        mini_sortformer(raw)
        raw["instances"] = [i for i in raw["instances"] if i["kind"] != "batch_norm"]

    registry = registry_with(tmp_path, "sortformer", without_batch_norm)
    code, data = verify_json("sortformer", "--to", "0.4.2", "--registry", str(registry),
                             json_schema=json_schema)
    b = data["bundles"][0]
    assert code == 3
    assert b["cached"] is True  # the same whole program: read back, not measured again
    assert b["probes"]["changed"] == []
    assert any(i.startswith("unexplained:") and "batch_norm" in i for i in b["inconsistencies"])


def test_a_run_that_exceeds_the_timeout_is_inconclusive_not_stored(sortformer_mini, tmp_path):
    _code, _data, registry = sortformer_mini
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    # a process of its own: the run timeout is read when the verify module is imported
    proc = spawn("verify", "sortformer", "--to", "0.4.2", "--registry", str(registry), "--json",
                 "-q", INVENTORY_CACHE=str(cache), INVENTORY_VERIFY_RUN_TIMEOUT="0.5")
    code, data = proc.returncode, json.loads(proc.stdout)
    b = data["bundles"][0]
    assert code == 3 and b["status"] == "inconclusive"
    assert "did not answer within" in " ".join(b["run"]["attempts"])
    assert not list((cache / "results").glob("verify-*"))


def test_a_bad_form_is_one_line_and_exit_2(tmp_path):
    def bad(raw: dict) -> None:
        raw["verify"] = {"form": "tiny"}

    registry = registry_with(tmp_path, "sortformer", bad)
    proc = run("verify", "sortformer", "--to", "0.4.2", "--registry", str(registry))
    assert proc.returncode == 2
    assert "form must be full or miniature, not 'tiny'" in proc.stderr
    proc = run("verify", "sortformer", "--to", "0.4.1")
    assert proc.returncode == 2 and "--to must be a later release" in proc.stderr


def test_plan_verify_adds_the_whole_bundle_check_to_the_plan(converter_envs, json_schema):
    proc = run("plan", "--to", "0.4.2", "-b", "mimi", "--verify", "--json", "-q")
    data = json.loads(proc.stdout)
    json_schema(data)
    [b] = data["bundles"]
    assert b["verify"]["status"] == "consistent" and b["verify"]["form"] == "full"
    assert b["verify"]["answer"].startswith("identical shipped programs")
    assert proc.returncode == 0
    plain = run("plan", "--to", "0.4.2", "-b", "mimi", "--json", "-q")
    assert "verify" not in json.loads(plain.stdout)["bundles"][0]


def test_weights_are_loaded_by_name_and_a_checkpoint_matching_nothing_is_exit_2(
        converter_envs, tmp_path, json_schema):
    import torch
    from safetensors.torch import save_file

    from inventory.trace.targets import mimi

    bad = tmp_path / "unrelated.safetensors"
    save_file({"nothing.here": torch.zeros(3)}, str(bad))
    proc = run("verify", "mimi", "--to", "0.4.2", "--weights", f"mimi={bad}", "-q")
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert "no tensor matches the module's state by name and shape" in line

    state = {k: v.clone().contiguous() for k, v in
             mimi.build(device="cpu").module.state_dict().items()}
    first = next(k for k, v in state.items() if v.is_floating_point() and v.dim() == 3)
    state[first] = state[first] * 1.5  # not what a seeded build holds
    good = tmp_path / "mimi.safetensors"
    save_file(state, str(good))
    code, data = verify_json("mimi", "--to", "0.4.2", "--weights", f"mimi={good}",
                             json_schema=json_schema)
    b = data["bundles"][0]
    assert code == 0 and b["cached"] is False  # other weights: another program, measured
    assert b["build"]["weights"]["loaded"] == len(state) == b["build"]["weights"]["state_entries"]
    assert b["shipped"]["identity"] == "identical"
