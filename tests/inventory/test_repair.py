"""`inventory repair`: a real coreai-torch 0.4.0 asset, repaired, and checked independently of
the repair's own verification (runtimes loading it, weights read by coreai-core, outputs run)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from bundles import export
from cli import Ran, invoke
from safetensors.numpy import load_file, save_file

from inventory.repair import compare_outputs
from oracle.catalog.releases import load_catalog
from oracle.clients.worker_clients import ScanWorker
from oracle.load_check import RuntimeOutcome, run_on
from oracle.session import Session

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> Ran:
    return invoke(*args, "-q")


def tree_digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        h.update(str(path.relative_to(folder)).encode())
        if path.is_file():
            h.update(path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def asset_040(env, tmp_path_factory) -> Path:
    return export(env, "0.4.0", tmp_path_factory.mktemp("asset-040"))


@pytest.mark.slow
def test_repair_makes_a_040_asset_load_on_b3_with_the_same_weights_and_outputs(
    env, asset_040, tmp_path, json_schema
):
    before = tree_digest(asset_040)
    out = tmp_path / "repaired.aimodel"
    proc = run("repair", str(asset_040), "-o", str(out), "--json")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    json_schema(document)
    report = document["result"]
    assert document["command"] == "repair" and report["producer"] == "coreai-core 1.0.0b2"
    assert tree_digest(asset_040) == before, "the input was written to"
    assert json.loads((out / "metadata.json").read_text())["producer"] == "coreai-core 1.0.0b2"
    assert report["locations"]["locations_after"] == {"debuginfo": report["locations"]["ops"]}

    catalog = load_catalog()
    with Session(catalog, log_dir=tmp_path / "logs") as session:
        # Checked here, not taken from the report: b3 loads and runs the repaired asset ...
        on_b3 = run_on(out, "1.0.0b3", session, tmp_path / "b3")
        assert on_b3.outcome == "loads", on_b3.describe()
        # ... and on b1 it computes what the original computes, bit for bit, from one input.
        original = run_on(asset_040, "1.0.0b1", session, tmp_path / "b1-original", seed=7)
        repaired = run_on(
            out, "1.0.0b1", session, tmp_path / "b1-repaired", inputs=tmp_path / "b1-original"
        )
        b1 = session.env_for_core("1.0.0b1")
    a = load_file(original.files["main.outputs"])
    b = load_file(repaired.files["main.outputs"])
    assert a.keys() == b.keys() and a
    for key in a:
        assert a[key].dtype == b[key].dtype and a[key].tobytes() == b[key].tobytes(), key

    # Weights: every constant's bytes, as coreai-core 1.0.0b1 reads them from both files.
    worker = ScanWorker(b1, tmp_path / "scan.log")
    try:
        fingerprints = [
            worker.call({"op": "read", "bundle": str(p), "out": str(tmp_path / f"read{i}")})[
                "weights"
            ]
            for i, p in enumerate((asset_040, out))
        ]
    finally:
        worker.close()
    assert fingerprints[0]["constants"] > 0
    assert fingerprints[0]["fingerprint"] == fingerprints[1]["fingerprint"]
    assert report["weights"]["original"]["fingerprint"] == fingerprints[0]["fingerprint"]

    # The report in markdown (to --report FILE) says what the JSON says, and so does the table.
    md = tmp_path / "repair.md"
    again = run(
        "repair",
        str(asset_040),
        "-o",
        str(tmp_path / "again.aimodel"),
        "-f",
        "markdown",
        "--report",
        str(md),
    )
    assert again.returncode == 0 and again.stdout == "", again.stderr
    table = run("repair", str(asset_040), "-o", str(tmp_path / "third.aimodel")).stdout
    w, o, loc = report["weights"]["original"], report["outputs"], report["locations"]
    for said in (
        f"{loc['ops']} op and {loc['block_args']} block-argument locations",
        f"{report['producer']} (re-saved with coreai-core {report['stamper']})",
        f"byte-identical: {w['fingerprint']} ({w['constants']} tensors",
        f"bit-identical on {o['runtime']}: {o['arrays']} array(s)",
        *(f"{x['core']} {x['outcome']}" for x in report["original"] + report["repaired"]),
    ):
        assert said in md.read_text() and said in " ".join(table.split()), said

    # The repaired asset is told apart from a re-export by scan.
    scan = json.loads(run("scan", str(out), "--json").stdout)
    assert "repaired by `inventory repair`" in scan["result"]["bundles"][0]["exporter"]


@pytest.mark.slow
def test_an_asset_that_already_loads_everywhere_is_refused(env, tmp_path):
    asset = export(env, "0.4.1", tmp_path)
    proc = run("repair", str(asset), "-o", str(tmp_path / "out.aimodel"))
    assert proc.returncode == 2
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "already loads on every runtime" in lines[0], proc.stderr
    assert not (tmp_path / "out.aimodel").exists()


def test_bad_paths_are_refused_before_anything_runs(tmp_path):
    bundle = tmp_path / "b.aimodel"
    bundle.mkdir()
    (bundle / "metadata.json").write_text('{"assetVersion": "2.0"}')
    (bundle / "main.mlirb").write_bytes(b"ML\xefR....")
    taken = tmp_path / "taken.aimodel"
    taken.mkdir()
    for args, message in (
        ((str(tmp_path / "none.aimodel"), "-o", str(tmp_path / "o")), "no metadata.json"),
        ((str(bundle), "-o", str(taken)), "already exists"),
        ((str(bundle), "-o", str(bundle / "inner")), "outside the bundle"),
        ((str(bundle), "-o", str(tmp_path / "no" / "such" / "o")), "no such folder"),
    ):
        proc = run("repair", *args)
        assert proc.returncode == 2, proc.stderr
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr


def test_outputs_that_differ_by_one_bit_are_not_bit_identical(tmp_path):
    x = np.linspace(-1, 1, 12, dtype=np.float32)
    y = x.copy()
    y.view(np.uint32)[5] ^= 1  # the last mantissa bit of one value
    for name, data in (("a", x), ("b", y), ("c", x)):
        save_file({"main/output:y": data}, str(tmp_path / f"{name}.safetensors"))

    def outcome(name: str) -> RuntimeOutcome:
        return RuntimeOutcome(
            "1.0.0b1", "loads", files={"main.outputs": str(tmp_path / f"{name}.safetensors")}
        )

    assert compare_outputs(outcome("a"), outcome("c")).identical is True
    found = compare_outputs(outcome("a"), outcome("b"))
    assert found.identical is False and found.differ == 1
