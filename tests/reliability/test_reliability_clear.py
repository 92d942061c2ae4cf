"""Reliability IV, parts 6 and 7: exit 4 only for the tool's own bugs, and every refusal says
what it refuses. Each input here used to end in exit 4 or in a silent or misleading answer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from bundles import minimal_bundle
from cli import invoke, one_line, refused

from oracle.catalog.fixes import FIXES_FILE


@pytest.mark.parametrize("variable", ["INVENTORY_CACHE", "INVENTORY_STORE"])
@pytest.mark.parametrize(
    "command", [("envs", "list"), ("cache", "prune"), ("plan", "--to", "0.4.2", "-q")]
)
def test_a_store_that_is_a_symlink_loop_is_one_line_and_exit_2(tmp_path, variable, command):
    (tmp_path / "loop").symlink_to("loop")
    env = {"INVENTORY_CACHE": str(tmp_path / "cache"), variable: str(tmp_path / "loop")}
    ran = invoke(*command, **env)
    assert ran.returncode == 2, (ran.returncode, ran.stderr)
    assert one_line(ran) == (
        f"error: {variable} {tmp_path / 'loop'}: cannot be a store "
        f"(Symlink loop from '{tmp_path / 'loop'}')"
    )


@pytest.mark.parametrize("value", ["", " ", "squeeze", "rm -rf /", "aten.", "coreai"])
def test_a_touches_entry_that_names_no_op_is_one_line(tmp_path, value):
    """A blank entry said "must be a list of strings" while nonsense passed unchecked: every
    entry must be an aten target or a Core AI op."""
    text = FIXES_FILE.read_text()
    draft = tmp_path / "draft.toml"
    draft.write_text(text.replace("[[fix]]\n", f"[[fix]]\ntouches = [{json.dumps(value)}]\n", 1))
    ran = invoke("plan", "--to", "0.4.2", "--fixes", str(draft), "-q")
    assert ran.returncode == 2
    line = one_line(ran)
    assert "touches must be aten targets ('aten.squeeze.dims') or Core AI ops" in line
    assert f"not {json.dumps(value)}" in line or f"not {value!r}" in line, line


def test_touches_that_name_ops_still_load(tmp_path):
    from oracle.catalog.fixes import load_fixes

    text = FIXES_FILE.read_text()
    draft = tmp_path / "draft.toml"
    draft.write_text(
        text.replace("[[fix]]\n", '[[fix]]\ntouches = ["aten.squeeze.dims", "coreai.conv"]\n', 1)
    )
    assert load_fixes(draft)[0].touches == ("aten.squeeze.dims", "coreai.conv")


def test_weights_naming_a_device_says_what_it_is(tmp_path):
    ran = invoke(
        "affected",
        "--fix",
        "40",
        "--weights",
        "sam3=/dev/zero",
        "-q",
        INVENTORY_CACHE=str(tmp_path / "store"),
    )
    assert ran.returncode == 2
    assert one_line(ran) == "error: /dev/zero: not a regular file (a character device)"
    fifo = tmp_path / "w.fifo"
    os.mkfifo(fifo)
    ran = invoke(
        "affected",
        "--fix",
        "40",
        "--weights",
        f"sam3={fifo}",
        "-q",
        INVENTORY_CACHE=str(tmp_path / "store"),
    )
    assert one_line(ran) == f"error: {fifo}: not a regular file (a FIFO)"


def test_weights_that_are_no_checkpoint_are_refused_before_any_bundle_is_answered(tmp_path):
    """A file of 65 MiB of zeros: it was opened when sam3's turn came, after the other
    bundles' probes had converted (the hostile round's case ran past its 120 s bound)."""
    zeros = tmp_path / "zeros.safetensors"
    with open(zeros, "wb") as handle:
        handle.truncate(65 * 1024 * 1024)
    store = tmp_path / "store"
    ran = invoke(
        "affected", "--fix", "40", "--weights", f"sam3={zeros}", "-q", INVENTORY_CACHE=str(store)
    )
    assert ran.returncode == 2
    assert one_line(ran).startswith(f"error: {zeros}: not a readable safetensors file")
    assert not (store / "results").exists()


@pytest.mark.parametrize("command", [("sweep",), ("bisect", "--allow-code", "--repo", ".")])
def test_a_registry_file_without_registry_is_refused_not_ignored(tmp_path, command):
    registry = tmp_path / "r.toml"
    registry.write_text("[bundles]\n")
    ran = invoke(
        command[0],
        "--from",
        "0.4.1",
        "--to",
        "0.4.2",
        "--registry-file",
        str(registry),
        *command[1:],
        "-q",
        INVENTORY_CACHE=str(tmp_path / "store"),
    )
    assert ran.returncode == 2
    assert one_line(ran) == (
        f"error: --registry-file {registry} is read only with --registry: "
        "add --registry to probe the shipped instances it lists"
    )


def test_repair_names_an_empty_folder_it_would_drop(tmp_path):
    bundle = minimal_bundle(tmp_path / "x.aimodel")
    (bundle / "assets").mkdir()
    out = tmp_path / "y.aimodel"
    line = refused(
        invoke("repair", str(bundle), "-o", str(out), "-q", INVENTORY_CACHE=str(tmp_path / "store"))
    )
    assert "would drop assets/ (an empty folder)" in line
    assert not out.exists()


def test_scan_json_of_a_corrupt_bundle_says_the_error_in_the_envelope(tmp_path):
    bundle = tmp_path / "bundles" / "b.aimodel"
    bundle.mkdir(parents=True)
    (bundle / "metadata.json").write_text("{")
    ran = invoke("scan", str(bundle.parent), "--json", INVENTORY_CACHE=str(tmp_path / "store"))
    assert ran.returncode == 2
    doc = json.loads(ran.stdout)
    assert doc["error"].startswith(
        f"1 of 1 bundle(s) could not be read; the first: {bundle / 'metadata.json'}: not valid JSON"
    )
    assert doc["result"]["bundles"][0]["error"] in doc["error"]


def test_affected_warns_of_an_ignore_entry_naming_no_fix(tmp_path):
    """`plan` warned; `affected` was silent (an entry for another fix is not its run's, but one
    for a fix no record has can never match anything). A bundle exported with the fix's own
    release needs no probe, so nothing is built."""
    registry = tmp_path / "r.toml"
    registry.write_text(
        '[bundles.a]\nfiles = ["a"]\ndtype = "float32"\n'
        '[bundles.a.exporter]\nconverter = "0.4.2"\nsource = "test"\n'
    )
    ignore = tmp_path / "ignore.toml"
    ignore.write_text(
        '[[ignore]]\nfix = "999"\nbundle = "a"\nreason = "typo"\nexpires = 2099-01-01\n'
    )
    ran = invoke(
        "affected",
        "--fix",
        "40",
        "--registry",
        str(registry),
        "--ignore",
        str(ignore),
        "--json",
        "-q",
        INVENTORY_CACHE=str(tmp_path / "store"),
    )
    doc = json.loads(ran.stdout)
    assert (
        "ignore entry for fix #999 / a: no fix record has that id, so it can never match"
        in doc["warnings"]
    ), (ran.stderr, doc["warnings"])


def test_the_minimal_bundle_helper_is_a_bundle(tmp_path):
    assert (minimal_bundle(tmp_path / "x.aimodel") / "metadata.json").is_file()
    assert Path(FIXES_FILE).is_file()


def test_a_sweep_whose_workers_die_is_inconclusive_not_a_standing_failure(env, tmp_path):
    """Both sides' workers abort (the worker double): "both fail alike" used to read as a
    standing limitation of the converter, exit 0; nothing was learnt of the converter."""
    from cli import spawn
    from doubles.faults import fault_env
    from registries import conv_transpose_registry

    from oracle.infra.paths import envs_dir

    env("0.4.1")
    env("0.4.2")
    store = tmp_path / "store"
    store.mkdir()
    (store / "envs").symlink_to(envs_dir())
    registry = conv_transpose_registry(tmp_path, channels=2)
    ran = spawn(
        "sweep",
        "--registry",
        "--registry-file",
        str(registry),
        "--from",
        "0.4.1",
        "--to",
        "0.4.2",
        "--no-cache",
        "--json",
        "-q",
        INVENTORY_CACHE=str(store),
        INVENTORY_STORE=str(store),
        **fault_env(INVENTORY_WORKER_FAULT="crash"),
    )
    assert ran.returncode == 3, ran.stderr
    doc = json.loads(ran.stdout)
    assert doc["result"]["changed"] == [] and len(doc["result"]["failing_both"]) == 1
    assert doc["warnings"] == [
        "1 probe(s) not run (their worker died, timed out or was lost): "
        "the sweep is inconclusive for them"
    ]


def test_scan_of_a_bundle_holding_a_symlink_loop_is_one_line(tmp_path):
    """Found by the hostile round: `l -> l` inside a bundle was exit 4 (RuntimeError)."""
    bundle = tmp_path / "bundles" / "x.aimodel"
    bundle.mkdir(parents=True)
    (bundle / "metadata.json").write_text('{"producer": "coreai-core 1.0.0b1"}')
    (bundle / "l").symlink_to("l")
    ran = invoke(
        "scan", str(bundle.parent), "--json", "-q", INVENTORY_CACHE=str(tmp_path / "store")
    )
    assert ran.returncode == 2, ran.stderr
    assert (
        one_line(ran) == f"error: {bundle / 'l'}: is a symlink loop; a bundle is read only "
        "from its own files"
    )
    assert json.loads(ran.stdout)["error"].startswith("1 of 1 bundle(s) could not be read")


@pytest.mark.parametrize("port", ["9" * 5000, "0", "65536", "99999", "-1", "x"])
def test_a_ray_address_with_a_port_that_is_no_port_is_one_line(tmp_path, port):
    """Found by the hostile round: a port of 5000 digits was exit 4 (int() refuses it). The
    address is refused before anything is sent (127.0.0.1 only)."""
    ran = invoke(
        "sweep",
        "--from",
        "0.4.1",
        "--to",
        "0.4.2",
        "-q",
        "--executor",
        "ray",
        "--ray-address",
        f"127.0.0.1:{port}",
        INVENTORY_CACHE=str(tmp_path / "s"),
    )
    assert ran.returncode == 2
    assert "not HOST:PORT with a port from 1 to 65535" in one_line(ran)
