"""The command line on the shipped registry, and on bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "recipes.toml"


def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "inventory.cli", *args], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, **env})


def one_clean_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_unknown_fix_is_a_usage_error():
    proc = run("affected", "--fix", "999", "-q")
    assert proc.returncode == 2
    assert "unknown fix '999'" in one_clean_line(proc)


def test_unknown_bundle_and_unknown_release_are_usage_errors():
    proc = run("affected", "--fix", "40", "--bundle", "nope", "-q")
    assert proc.returncode == 2 and "'nope' is not in the registry" in one_clean_line(proc)
    proc = run("affected", "--fix", "40", "--to", "0.9.9", "-q")
    assert proc.returncode == 2 and "0.9.9 is not a supported release" in one_clean_line(proc)
    proc = run("affected", "--fix", "40", "--to", "0.4.1", "-q")
    assert proc.returncode == 2 and "predates fix #40" in one_clean_line(proc)


def test_malformed_registry_names_file_and_line(tmp_path):
    bad = tmp_path / "recipes.toml"
    bad.write_text('[bundles.x]\nfiles = ["a"]\ndtype = float32\n')
    proc = run("affected", "--fix", "40", "--registry", str(bad), "-q")
    assert proc.returncode == 2
    line = one_clean_line(proc)
    assert str(bad) in line and "line" in line
    bad.write_text('[bundles.x]\nfiles = ["a"]\ndtype = "float32"\n')
    proc = run("affected", "--fix", "40", "--registry", str(bad), "-q")
    assert proc.returncode == 2 and "lacks 'exporter'" in one_clean_line(proc)


def test_missing_registry_in_json_mode_still_prints_an_envelope(tmp_path):
    proc = run("affected", "--fix", "40", "--registry", str(tmp_path / "none.toml"), "--json",
               "-q")
    assert proc.returncode == 2
    assert json.loads(proc.stdout)["error"].endswith("cannot read: No such file or directory")


@pytest.mark.slow
def test_affected_fix_40_json_on_the_shipped_registry():
    proc = run("affected", "--fix", "40", "--json", "-q")
    assert proc.returncode in (0, 1, 3), proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema_version"] == 1 and data["fix"] == "40" and data["to"] == "0.4.2"
    bundles = {b["bundle"]: b for b in data["bundles"]}
    assert set(bundles) == {"parakeet", "lfm_audio", "sortformer", "mimi", "sam3"}
    assert bundles["lfm_audio"]["exporter_recorded"] == "unknown"
    assert "assumed" in bundles["lfm_audio"]["chain"][0]
    for b in data["bundles"]:
        assert b["reexport"] in ("required", "optional", "no", "inconclusive")
        if not b["instances"]:
            assert b["probes"] == [] and b["reexport"] == "no"  # nothing converted
            continue
        assert b["probes"], b["bundle"]
        for p in b["probes"]:
            evidence = Path(p["evidence"])
            assert (evidence / "result.json").exists()
            if p["shipped"] == "identical":
                old = (evidence / "shipped.old.normalised.mlir").read_text()
                assert old == (evidence / "shipped.new.normalised.mlir").read_text()
                assert p["outputs"] == "not-run"
            elif p["shipped"] == "differs":
                assert (evidence / "shipped.diff").exists()
                assert p["runtime"] and p["runtime"].startswith("linux-cpu, coreai-core")
    exit_for = {"required": 1, "inconclusive": 3}
    assert proc.returncode == exit_for.get(data["reexport"], 0)


@pytest.mark.slow
def test_trace_check_passes_on_the_registry_and_catches_a_stale_entry(tmp_path):
    proc = run("trace", "mimi", "--check", "-q")
    assert proc.returncode == 0, proc.stderr
    assert "registry instances match a fresh trace" in proc.stdout
    stale = tmp_path / "recipes.toml"
    text = REGISTRY.read_text()
    at = text.index("count = ", text.index("[[bundles.mimi.instances]]"))
    end = text.index("\n", at)
    stale.write_text(text[:at] + f"count = {int(text[at + 8:end]) + 1}" + text[end:])
    proc = run("trace", "mimi", "--check", "-q", "--registry", str(stale))
    assert proc.returncode == 1
    assert "stale: mimi: recorded but not traced" in proc.stderr


def _checkpoint(path: Path, running_var: list[float]) -> Path:
    import numpy as np
    from safetensors.numpy import save_file

    save_file({"encoder.layers.0.conv.norm.running_var": np.array(running_var, np.float32),
               "encoder.layers.0.conv.norm.weight": np.ones(len(running_var), np.float32)},
              str(path))
    return path


@pytest.mark.slow
def test_a_value_condition_is_reported_then_decided_by_the_bundle_weights(tmp_path):
    base = ("affected", "--fix", "54", "--bundle", "sortformer", "--json", "-q")
    proc = run(*base)
    bundle = json.loads(proc.stdout)["bundles"][0]
    conditions = {c["condition"]: c for c in bundle["conditions"]}
    tiny = conditions.get("tiny-running-var")
    if tiny is None:  # the measured values did not make it worse: nothing to decide
        assert all(c["checked"] is None for c in bundle["conditions"])
        return
    assert tiny["checked"] is None and "--weights sortformer=" in bundle["reason"]
    worse = tiny["if_met"]["reexport"]

    ok = _checkpoint(tmp_path / "ok.safetensors", [0.5, 1.0, 3.0])
    proc = run(*base, "--weights", f"sortformer={ok}")
    bundle = json.loads(proc.stdout)["bundles"][0]
    tiny = {c["condition"]: c for c in bundle["conditions"]}["tiny-running-var"]
    assert tiny["checked"]["holds"] is False and bundle["reexport"] == tiny["trained"]["reexport"]

    bad = _checkpoint(tmp_path / "bad.safetensors", [0.5, 1e-7, 3.0])
    proc = run(*base, "--weights", f"sortformer={bad}")
    bundle = json.loads(proc.stdout)["bundles"][0]
    tiny = {c["condition"]: c for c in bundle["conditions"]}["tiny-running-var"]
    assert tiny["checked"]["holds"] is True and "1 of 3 running_var" in tiny["checked"]["detail"]
    assert bundle["reexport"] == worse


def test_weights_without_the_tensors_a_condition_needs_is_one_line(tmp_path):
    import numpy as np
    from safetensors.numpy import save_file

    path = tmp_path / "w.safetensors"
    save_file({"other": np.zeros(2, np.float32)}, str(path))
    proc = run("affected", "--fix", "40", "--bundle", "sortformer", "--weights",
               f"sortformer={path}", "-q")
    assert proc.returncode == 0  # fix 40 has no value condition: the file is never read
    proc = run("affected", "--fix", "40", "--weights", f"nope={path}", "-q")
    assert proc.returncode == 2 and "'nope', which is not in the registry" in one_clean_line(proc)


@pytest.mark.slow
def test_a_condition_that_needs_missing_tensors_is_one_line(tmp_path):
    import numpy as np
    from safetensors.numpy import save_file

    path = tmp_path / "w.safetensors"
    save_file({"other": np.zeros(2, np.float32)}, str(path))
    proc = run("affected", "--fix", "54", "--bundle", "sortformer", "--weights",
               f"sortformer={path}", "-q")
    bundle_has_condition = proc.returncode == 2
    if bundle_has_condition:
        assert "no tensor named *running_var" in one_clean_line(proc)
    else:  # no value condition was measured for this bundle, so the file is never read
        assert "Traceback" not in proc.stderr
