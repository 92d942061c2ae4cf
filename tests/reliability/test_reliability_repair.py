"""Reliability III, parts 8 and 9: `repair` loses nothing and leaks nothing.

* A bundle holding files the repair does not write (`weights/w.bin`, `README.txt`) used to be
  "repaired ... verified" without them; a `weights -> /etc` symlink was followed. Now either is
  refused before anything runs, naming what would be dropped or followed.
* The runtimes that abort on a 0.4.0 asset left two empty `tmp*.aimodelx` folders in the system
  temp directory per repair: workers now get a TMPDIR of their own in the store, removed with
  them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bundles import export, minimal_bundle
from cli import invoke, refused

ROOT = Path(__file__).resolve().parents[2]


def test_a_bundle_with_files_repair_does_not_write_is_refused_naming_them(tmp_path):
    bundle = minimal_bundle(tmp_path / "x.aimodel")
    (bundle / "weights").mkdir()
    (bundle / "weights" / "w.bin").write_bytes(b"\1" * 8)
    (bundle / "README.txt").write_text("r")
    store, out = tmp_path / "store", tmp_path / "y.aimodel"
    line = refused(invoke("repair", str(bundle), "-o", str(out), "-q", INVENTORY_CACHE=str(store)))
    assert line == (
        f"refused: {bundle}: repair writes main.hash, main.mlirb, metadata.json "
        "only and would drop README.txt, weights/w.bin; move them out of the "
        "bundle (and back into the repaired one if they belong there)"
    )
    assert not out.exists() and not store.exists()  # before anything ran


def test_a_symlink_out_of_the_bundle_is_refused_and_never_followed(tmp_path):
    bundle = minimal_bundle(tmp_path / "x.aimodel")
    (bundle / "weights").symlink_to("/etc")
    (bundle / "loop").symlink_to("loop")
    line = refused(
        invoke(
            "repair",
            str(bundle),
            "-o",
            str(tmp_path / "y.aimodel"),
            "-q",
            INVENTORY_CACHE=str(tmp_path / "store"),
        )
    )
    assert line == (
        f"refused: {bundle}: loop -> loop, weights -> /etc: a symlink out of the "
        "bundle; repair follows none"
    )
    # a symlink that stays inside is an entry like any other: named, not silently dropped
    (bundle / "weights").unlink()
    (bundle / "loop").unlink()
    (bundle / "alias.json").symlink_to("metadata.json")
    line = refused(
        invoke(
            "repair",
            str(bundle),
            "-o",
            str(tmp_path / "y.aimodel"),
            "-q",
            INVENTORY_CACHE=str(tmp_path / "store"),
        )
    )
    assert "would drop alias.json;" in line


def test_a_repair_leaves_no_tmp_aimodelx_in_the_system_temp_directory(env, tmp_path):
    """The real repair of a 0.4.0 asset (two runtimes abort on it), in a process of its own
    whose TMPDIR is a fresh folder: nothing is left there, nor in the store's tmp/."""
    asset = export(env, "0.4.0", tmp_path / "asset")
    system_tmp, store = tmp_path / "system-tmp", tmp_path / "store"
    system_tmp.mkdir()
    store.mkdir()
    (store / "envs").symlink_to(Path(env("0.4.0").path).parent)
    out = tmp_path / "repaired.aimodel"
    proc = subprocess.run(
        [sys.executable, "-m", "inventory.cli", "repair", str(asset), "-o", str(out), "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(system_tmp), "INVENTORY_CACHE": str(store)},
    )
    assert proc.returncode == 0, proc.stderr
    assert out.is_dir()  # repaired, so the aborting runtimes did run
    assert sorted(p.name for p in system_tmp.iterdir()) == []
    assert sorted(p.name for p in (store / "tmp").iterdir()) == []
