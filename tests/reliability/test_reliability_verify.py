"""`inventory verify` never answers from what it cannot trust (reliability III, section 7): a
checkpoint no training leaves, a stored part someone edited, a reference with no finite value;
and a failed build leaves its log where the answer points. No converter runs here: each case is
refused or decided before a conversion (the end-to-end checks are
tests/inventory/verify/test_verify.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli import invoke
from registries import registry_with

from inventory.verify import parts
from inventory.verify.explain import judge_drift


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_a_checkpoint_holding_nan_or_inf_is_refused_before_anything_converts(tmp_path, value):
    import torch
    from safetensors.torch import save_file

    from inventory.trace.targets import mimi

    state = {
        k: v.clone().contiguous() for k, v in mimi.build(device="cpu").module.state_dict().items()
    }
    name = next(k for k, v in state.items() if v.is_floating_point() and v.dim() == 3)
    state[name] = torch.full_like(state[name], value)
    ckpt = tmp_path / "bad.safetensors"
    save_file(state, str(ckpt))
    cache = tmp_path / "cache"
    proc = invoke(
        "verify",
        "mimi",
        "--to",
        "0.4.2",
        "--weights",
        f"mimi={ckpt}",
        "-q",
        INVENTORY_CACHE=str(cache),
    )
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert f"{name} holds" in line and "NaN/inf" in line
    assert not (cache / "envs").exists()  # refused before any environment was needed


def test_a_negative_running_variance_is_refused(tmp_path):
    import torch

    from inventory.verify.build_worker import WeightsMismatch, _refuse_untrained

    with pytest.raises(WeightsMismatch, match="negative variance"):
        _refuse_untrained("ckpt", "encoder.norm.running_var", torch.tensor([0.5, -1.0]))
    _refuse_untrained("ckpt", "encoder.norm.running_var", torch.tensor([0.5, 1e-8]))
    _refuse_untrained("ckpt", "encoder.norm.weight", torch.tensor([-0.5, 1.0]))


def test_a_reference_without_finite_values_makes_the_whole_check_inconclusive():
    row = {
        "output": "preds",
        "shape": [2],
        "bit_identical": True,
        "rel_old": 0.0,
        "rel_new": 0.0,
        "maxabs_old_new": 0.0,
        "nonfinite_old": 0,
        "nonfinite_new": 0,
        "ref_nonfinite": 2,
    }
    verdict = judge_drift([row], "rt", 1e-2)
    assert verdict.reexport == "inconclusive" and "reference holds non-finite" in verdict.reason


def test_an_edited_stored_part_is_measured_again_never_served(tmp_path, monkeypatch):
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "cache"))
    made = []

    def make(work: Path) -> dict:
        made.append(1)
        (work / "outputs.safetensors").write_bytes(b"\x01\x02\x03")
        return {"ok": True, "outputs_file": str(work / "outputs.safetensors"), "seconds": 9.5}

    kind = parts.RUNNING
    final = parts._folder("verify", "run", "b", "0.4.2", "1.0.0b2", "k")
    record, cached = parts.stored(final, make, True, lambda _: True, kind)
    assert not cached and (parts.read(final) or {}).get("seconds") == 9.5
    assert parts.stored(final, make, True, lambda _: True, kind)[1] is True and len(made) == 1
    # an edited number in the record
    stored = json.loads((final / "result.json").read_text())
    (final / "result.json").write_text(json.dumps({**stored, "seconds": 0.1}))
    assert parts.read(final) is None
    record, cached = parts.stored(final, make, True, lambda _: True, kind)
    assert not cached and record["seconds"] == 9.5 and len(made) == 2
    # an edited tensor file
    (final / "outputs.safetensors").write_bytes(b"\x01\x02\x04")
    assert parts.read(final) is None


def test_a_failed_build_points_at_a_log_that_outlives_it(tmp_path):
    def broken(raw: dict) -> None:
        raw["verify"] = {"form": "miniature", "why": "test", "build": {"no_such_argument": 1}}

    registry = registry_with(tmp_path, "mimi", broken)
    cache = tmp_path / "cache"
    proc = invoke(
        "verify",
        "mimi",
        "--to",
        "0.4.2",
        "--registry",
        str(registry),
        "--json",
        "-q",
        INVENTORY_CACHE=str(cache),
    )
    b = json.loads(proc.stdout)["result"]["bundles"][0]
    assert proc.returncode == 3 and b["status"] == "inconclusive"
    log = Path(b["error"].rsplit("(log: ", 1)[1].rstrip(")"))
    assert log.is_file() and log.parent == cache / "logs"
    assert "no_such_argument" in log.read_text()
    assert not [p for p in (cache / "results").iterdir() if p.name.startswith(".")]


def test_a_missing_upstream_package_names_the_extra_that_brings_it(tmp_path, monkeypatch):
    """A target whose upstream package is not installed (the `trace` extra's pocket_tts,
    transformers...): the answer says which extra to install."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "needs_upstream.py").write_text("import not_installed_upstream_pkg  # noqa\n")
    path = f"{package}:{os.environ['PYTHONPATH']}" if os.environ.get("PYTHONPATH") else str(package)
    monkeypatch.setenv("PYTHONPATH", path)

    def elsewhere(raw: dict) -> None:
        raw["trace"] = {**raw["trace"], "target": "needs_upstream:build"}
        raw["standin"] = {**raw.get("standin", {}), "target": "needs_upstream:build"}

    registry = registry_with(tmp_path, "mimi", elsewhere)
    proc = invoke(
        "verify",
        "mimi",
        "--to",
        "0.4.2",
        "--registry",
        str(registry),
        "--json",
        "-q",
        "--allow-code",
        INVENTORY_CACHE=str(tmp_path / "cache"),
        PYTHONPATH=path,
    )
    b = json.loads(proc.stdout)["result"]["bundles"][0]
    assert proc.returncode == 3
    assert "No module named 'not_installed_upstream_pkg'" in b["error"]
    assert "the `trace` extra" in b["error"]
