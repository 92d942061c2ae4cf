"""The command line on the shipped registry, and on bad input."""

from __future__ import annotations

import json
from pathlib import Path

from cli import Ran, spawn
from cli import invoke as run

ROOT = Path(__file__).resolve().parents[3]
REGISTRY = ROOT / "recipes.toml"


def one_clean_line(proc: Ran) -> str:
    assert "Traceback" not in proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_a_shell_sees_the_same_exit_codes_and_lines_as_the_in_process_runs():
    """The one process-level check of what `invoke` stands for: `python -m inventory.cli` as a
    shell starts it gives the exit code and the line the in-process run gives."""
    for args, code in (
        (("--version",), 0),
        (("affected", "--fix", "999", "-q"), 2),
        (("plan", "--json"), 2),
    ):
        process, in_process = spawn(*args), run(*args)
        assert process.returncode == in_process.returncode == code, args
        # the usage line names the program as it was started
        shell_err = process.stderr.replace("python -m inventory.cli", "inventory")
        assert (process.stdout, shell_err) == (in_process.stdout, in_process.stderr), args


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


def test_missing_registry_in_json_mode_still_prints_an_envelope(tmp_path, json_schema):
    for command in (
        ("affected", "--fix", "40"),
        ("plan", "--to", "0.4.2"),
        ("release-notes", "--from", "0.4.1", "--to", "0.4.2"),
    ):
        proc = run(*command, "--registry", str(tmp_path / "none.toml"), "--json", "-q")
        assert proc.returncode == 2
        data = json.loads(proc.stdout)
        json_schema(data)  # the error envelope
        assert data["command"] == command[0] and data["result"] is None
        assert data["error"] == f"{tmp_path / 'none.toml'}: cannot read: No such file or directory"


def test_affected_fix_40_json_on_the_shipped_registry(matrix, json_schema):
    """Fix #40's answer, and that every claim in it is backed by the stored evidence."""
    ran = matrix.run_cli(("affected", "--fix", "40"))
    assert ran.exit == 0, ran.stderr
    json_schema(ran.data)
    data = ran.data["result"]
    assert ran.data["schema_version"] == 1 and data["fix"] == "40" and data["to"] == "0.4.2"
    assert data["reexport"] == "no"
    bundles = {b["bundle"]: b for b in data["bundles"]}
    assert set(bundles) == {"parakeet", "lfm_audio", "sortformer", "mimi", "sam3"}
    assert bundles["lfm_audio"]["exporter_recorded"] == "unknown"
    assert "assumed" in bundles["lfm_audio"]["chain"][0]
    for name in ("parakeet", "lfm_audio", "sortformer"):  # no transposed convolution traced
        b = bundles[name]
        assert not b["instances"] and b["probes"] == []  # nothing converted
        assert (b["verdict"], b["reexport"]) == ("not-affected", "no")
    # mimi's three ConvTranspose1d emit different graphs under 0.4.1 and 0.4.2, but optimize()
    # makes the shipped programs identical; sam3's ConvTranspose2d are the same program
    expected = {"mimi": ("differs", 3), "sam3": ("identical", 2)}
    for name, (emitted, count) in expected.items():
        b = bundles[name]
        assert (b["verdict"], b["reexport"]) == ("same-program", "no")
        assert len(b["probes"]) == count
        for p in b["probes"]:
            assert (p["emitted"], p["shipped"], p["outputs"]) == (emitted, "identical", "not-run")
            evidence = Path(p["evidence"])
            assert (evidence / "result.json").exists()
            old = (evidence / "shipped.old.normalised.mlir").read_text()
            assert old == (evidence / "shipped.new.normalised.mlir").read_text()
            assert (evidence / "emitted.diff").exists() == (emitted == "differs")


def test_trace_check_passes_on_the_registry_and_catches_a_stale_entry(tmp_path, converter_envs):
    proc = run("trace", "mimi", "--check", "-q")
    assert proc.returncode == 0, proc.stderr
    assert "registry instances match a fresh trace" in proc.stdout
    stale = tmp_path / "recipes.toml"
    text = REGISTRY.read_text()
    at = text.index("count = ", text.index("[[bundles.mimi.instances]]"))
    end = text.index("\n", at)
    stale.write_text(text[:at] + f"count = {int(text[at + 8 : end]) + 1}" + text[end:])
    proc = run("trace", "mimi", "--check", "-q", "--registry", str(stale))
    assert proc.returncode == 1
    assert "stale: mimi: recorded recipe instance not given by the stand-in" in proc.stderr


def test_without_a_checkpoint_a_value_condition_is_reported_as_a_condition(matrix):
    """Behaviour without --weights: trained-looking values decide; the adversarial values that
    make it worse are reported as a condition, with how to decide it."""
    ran = matrix.run_cli(("affected", "--fix", "54"))
    assert ran.exit == 0, ran.stderr
    (bundle,) = [b for b in ran.data["result"]["bundles"] if b["bundle"] == "sortformer"]
    (tiny,) = bundle["conditions"]
    # trained-looking values: optional; a running_var below fp16's smallest normal makes the
    # 0.4.1 program return NaN/inf where 0.4.2 does not: required
    assert tiny["condition"] == "tiny-running-var" and tiny["checked"] is None
    assert (tiny["trained"]["verdict"], tiny["trained"]["reexport"]) == ("values-move", "optional")
    assert (tiny["if_met"]["verdict"], tiny["if_met"]["reexport"]) == ("values-move", "required")
    assert "NaN/inf where torch fp32 is finite, the new program none" in tiny["if_met"]["reason"]
    assert bundle["reexport"] == "optional"
    assert "--weights sortformer=CHECKPOINT.safetensors" in bundle["reason"]
    assert all(p["module"] is None for p in bundle["probes"])


def test_weights_without_the_tensors_a_condition_needs_is_one_line(tmp_path, matrix):
    """`matrix`: since #29 `affected` also sweeps the fix's step over the bundle's instances,
    which the matrix's `affected --fix 40` has stored."""
    import numpy as np
    from safetensors.numpy import save_file

    path = tmp_path / "w.safetensors"
    save_file({"other": np.zeros(2, np.float32)}, str(path))
    proc = run(
        "affected", "--fix", "40", "--bundle", "sortformer", "--weights", f"sortformer={path}", "-q"
    )
    assert proc.returncode == 0  # fix 40 has no value condition: the file is never read
    proc = run("affected", "--fix", "40", "--weights", f"nope={path}", "-q")
    assert proc.returncode == 2 and "'nope', which is not in the registry" in one_clean_line(proc)


def test_weights_naming_a_missing_file_is_one_line(tmp_path):
    missing = tmp_path / "none.safetensors"
    proc = run("affected", "--fix", "54", "--weights", f"sortformer={missing}", "-q")
    assert proc.returncode == 2
    assert one_clean_line(proc) == f"error: --weights sortformer: no file at {missing}"
    proc = run("affected", "--fix", "54", "--weights", "sortformer", "-q")
    assert proc.returncode == 2
    assert "--weights takes BUNDLE=PATH, not 'sortformer'" in one_clean_line(proc)


def test_a_checkpoint_without_a_traced_modules_tensors_is_one_line(tmp_path, converter_envs):
    import numpy as np
    from safetensors.numpy import save_file

    path = tmp_path / "w.safetensors"
    save_file({"other": np.zeros(2, np.float32)}, str(path))
    proc = run(
        "affected", "--fix", "54", "--bundle", "sortformer", "--weights", f"sortformer={path}", "-q"
    )
    assert proc.returncode == 2
    line = one_clean_line(proc)
    assert "no tensor core.encoder.layers.0.conv.batch_norm.running_mean" in line
    assert "the registry records that module path" in line
