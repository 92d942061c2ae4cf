"""Question 2: does the asset a release writes still load where it ships? Load checks with the
real converters and the real runtimes, and the answers `affected --fix 28` and `plan` give on the
shipped registry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import Ran, invoke

from oracle.catalog.releases import load_catalog
from oracle.catalog.runtimes import cores
from oracle.compare.spec import Pipeline, ProbeSpec
from oracle.infra.paths import envs_dir
from oracle.load_check import load_check, load_stored
from oracle.session import Session
from oracle.store.housekeeping import prune
from oracle.workers import asset_probe

ROOT = Path(__file__).resolve().parents[2]
VERSIONED = "error: expected AICode versioned location, got: loc(fused<"


def run(*args: str) -> Ran:
    return invoke(*args, "-q")


def answer(*args: str) -> tuple[dict, Ran]:
    proc = run(*args, "--json")
    return json.loads(proc.stdout)["result"], proc


@pytest.fixture
def private_store(env, tmp_path, monkeypatch) -> Path:
    """A fresh result store that borrows the built environments."""
    for version in load_catalog().releases:
        env(version)
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    monkeypatch.setenv("INVENTORY_CACHE", str(cache))
    return cache


def test_a_040_asset_that_b2_and_b3_refuse_is_reported_and_the_run_goes_on(
    env, private_store, tmp_path
):
    catalog = load_catalog()
    spec = ProbeSpec(asset_probe.CONSTRUCT, dict(asset_probe.DEFAULT_PARAMS), "float16", Pipeline())
    with Session(catalog, log_dir=tmp_path / "logs") as session:
        old = load_check(spec, env("0.4.0"), cores(catalog), session)
        # The same session goes on after two native aborts: a 0.4.1 asset on the same runtimes.
        new = load_check(spec, env("0.4.1"), cores(catalog), session)
    assert old.converted and not old.cached
    by_core = {o.core: o for o in old.outcomes}
    assert by_core["1.0.0b1"].outcome == "loads"
    for core in ("1.0.0b2", "1.0.0b3"):
        o = by_core[core]
        assert (o.outcome, o.signal, o.stage) == ("crashes", "SIGABRT", "load")
        assert o.error.startswith(VERSIONED), o.error
        # The error line is quoted from the runtime's own log, which is kept.
        assert "expected AICode versioned location" in Path(o.files["log"]).read_text()
    assert [o.outcome for o in new.outcomes] == ["loads"] * 3
    # The 0.4.0 asset itself is evidence: no producer in its metadata.json.
    asset = Path(old.evidence) / "export-0.4.0" / "model.aimodel"
    assert "producer" not in json.loads((asset / "metadata.json").read_text())
    # Stored like every result: read back whole, kept by `cache prune`, and a damaged file is
    # detected (and then pruned).
    again = load_stored(Path(old.evidence))
    assert again is not None and again.cached and again.outcomes == old.outcomes
    assert prune().kept == 2
    (asset / "main.mlirb").write_bytes(b"ML\xefR")
    assert load_stored(Path(old.evidence)) is None
    pruned = prune()
    assert pruned.kept == 1 and pruned.removed == (
        f"{Path(old.evidence).name}: damaged or unreadable",
    )


def test_affected_fix_28_requires_sam3_for_its_load_failure_with_both_remedies(matrix):
    ran = matrix.run_cli(("affected", "--fix", "28"))
    data = ran.data["result"]
    assert data["kind"] == "asset" and data["to"] == "0.4.1"
    by = {b["bundle"]: b for b in data["bundles"]}
    sam3 = by["sam3"]
    assert (sam3["verdict"], sam3["reexport"]) == ("does-not-load", "required")
    assert sam3["deployment"]["cores"] == ["1.0.0b2", "1.0.0b3"]
    assert "does not load on coreai-core 1.0.0b2, 1.0.0b3" in sam3["reason"]
    assert VERSIONED in sam3["reason"]
    remedies = " ".join(sam3["remedies"])
    assert "re-export with coreai-torch 0.4.1 or later" in remedies
    # runnable as printed (tests/inventory/report/test_remedies.py runs them in a shell)
    assert (
        "`inventory repair sam3_float16/sam3_float16.aimodel -o "
        "sam3_float16/repaired-sam3_float16.aimodel`"
    ) in remedies
    check = sam3["load"]["checks"][0]
    assert check["exporter"] == "0.4.0" and Path(check["evidence"], "result.json").is_file()
    for name in ("parakeet", "sortformer", "mimi"):
        b = by[name]
        assert (b["verdict"], b["reexport"]) == ("not-affected", "no"), name
        assert "already in 0.4.1" in b["reason"]
        # ... and measured: their exporter's asset loads on the deployment runtimes.
        assert b["load"]["verdict"] == "loads"
    lfm = by["lfm_audio"]
    assert (lfm["verdict"], lfm["reexport"]) == ("depends-on-exporter", "inconclusive")
    assert "assumed" not in " ".join(lfm["chain"])
    assert "required if it was exported with coreai-torch 0.4.0" in lfm["reason"]
    assert "metadata.json without `producer` means coreai-torch 0.4.0" in lfm["reason"]
    assert [r["reexport"] for r in lfm["load"]["by_exporter"]] == ["required", "no"]
    # the registry does not know the file's length suffix (`L<L>`): a glob, never a placeholder
    assert "`inventory scan lfm_audio_encoder_adapter_float16_L*.aimodel`" in lfm["reason"]
    assert any(
        "`for f in lfm_audio_encoder_adapter_float16_L*.aimodel; do inventory repair" in r
        for r in lfm["remedies"]
    )
    assert "<L>" not in json.dumps(lfm["remedies"]) + lfm["reason"]
    assert ran.exit == 1  # at least one re-export required


def test_a_runtime_override_changes_whose_loading_decides(matrix):
    data, proc = answer("affected", "--fix", "28", "--bundle", "sam3", "--runtime", "b1")
    (sam3,) = data["bundles"]
    assert sam3["deployment"] == {
        "cores": ["1.0.0b1"],
        "runtimes": ["linux-cpu, coreai-core 1.0.0b1"],
        "source": "--runtime",
    }
    assert (sam3["verdict"], sam3["reexport"]) == ("loads", "no") and proc.returncode == 0
    proc = run("affected", "--fix", "28", "--runtime", "b9")
    assert proc.returncode == 2 and "runtime 'b9' is not in the catalog" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_plan_puts_a_load_failure_first_and_names_both_remedies(matrix):
    ran = matrix.run_cli(("plan", "--to", "0.4.2"))
    plan = ran.data["result"]
    by = {b["bundle"]: b for b in plan["bundles"]}
    sam3 = by["sam3"]
    assert sam3["reexport"] == "required"
    first = sam3["required"][0]
    assert (first["fix"], first["kind"], first["verdict"]) == ("28", "asset", "does-not-load")
    assert "1.0.0b2, 1.0.0b3" in first["reason"] and VERSIONED in first["reason"]
    assert any("coreai-torch 0.4.1 or later" in r for r in first["remedies"])
    assert any("inventory repair" in r for r in first["remedies"])
    assert sam3["load"]["verdict"] == "does-not-load" and sam3["load_explained_by"] == ["28"]
    assert sam3["deployment"]["cores"] == ["1.0.0b2", "1.0.0b3"]
    for name in ("parakeet", "sortformer", "mimi"):
        b = by[name]
        assert b["load"]["verdict"] == "loads", name
        assert not [i for i in b["required"] if i["kind"] != "lowering"], name
        assert b["reexport"] != "required", name
    assert ran.exit == 1
    text = run("plan", "--to", "0.4.2").stdout
    assert (
        "sam3 #28 (required): its asset does not load on coreai-core 1.0.0b2, 1.0.0b3"
        in " ".join(text.split())
    )
