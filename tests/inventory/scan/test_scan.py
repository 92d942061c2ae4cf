"""`inventory scan` on bundles the tool itself produces with every supported converter release.

No binary file is committed: the bundles are converted here, from small torch modules, in the
converter environments (session-scoped, once per run). The scan runs through the command, as a
user runs it, so what is checked is the exit code and one clean stderr line as much as the JSON.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest
from bundles import CONVERT
from cli import Ran, invoke, one_clean_line
from held_lock import torch_lock_held

from oracle.workers.scan_worker import _ResourceHasher

ROOT = Path(__file__).resolve().parents[3]
VERSIONS = ("0.4.0", "0.4.1", "0.4.2", "0.4.3")
PINS = {"0.4.0": "1.0.0b1", "0.4.1": "1.0.0b2", "0.4.2": "1.0.0b2", "0.4.3": "1.0.0b3"}


JOBS = (
    "batchnorms:batchnorms:0",
    "batchnorms-again:batchnorms:0",
    "batchnorms-other:batchnorms:1",
    "convbn:convbn:0",
    "upsampler:upsampler:0",
)


def run_scan(*args: str) -> Ran:
    return invoke("scan", *args, "-q", COLUMNS="200")


def scan_json(*args: str) -> dict:
    proc = run_scan(*args, "--json")
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout) | {"_exit": proc.returncode, "_stderr": proc.stderr}


# ---- bundles made by the converters ------------------------------------------------------------


@pytest.fixture(scope="session")
def bundles(tmp_path_factory, env) -> Path:
    """<root>/<version>/<name>.aimodel for every supported release."""
    root = tmp_path_factory.mktemp("bundles")
    script = root / "convert.py"
    script.write_text(CONVERT)
    for version in VERSIONS:
        out = root / version
        out.mkdir()
        proc = subprocess.run(
            [str(env(version).python), str(script), str(out), *JOBS], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
    script.unlink()
    return root


@pytest.fixture(scope="session")
def scanned(bundles, json_schema) -> dict[tuple[str, str], dict]:
    """One scan of the whole folder of folders: (version, name) -> the bundle's JSON."""
    data = scan_json(str(bundles))
    # the 0.4.0 bundles (no producer stamp: the 1.0.0b1 era, deployed from it on) crash on
    # 1.0.0b2 and b3: each is counted as not loading on a deployment runtime, exit 1; every
    # later release's bundle loads where it is deployed
    assert data["_exit"] == 1, data["_stderr"]
    failing = data["result"]["not_loading"]
    assert failing and all(Path(f["path"]).parent.name == "0.4.0" for f in failing), failing
    assert len(failing) == sum(
        1 for b in data["result"]["bundles"] if Path(b["path"]).parent.name == "0.4.0"
    )
    assert all({r["core"] for r in f["runtimes"]} == {"1.0.0b2", "1.0.0b3"} for f in failing)
    json_schema({k: v for k, v in data.items() if not k.startswith("_")})
    assert data["schema_version"] == 1 and data["command"] == "scan"
    out = {}
    for b in data["result"]["bundles"]:
        path = Path(b["path"])
        out[(path.parent.name, path.name.removesuffix(".aimodel"))] = b
    assert len(out) == len(VERSIONS) * len(JOBS)
    return out


def composites(bundle: dict, kind: str) -> list[dict]:
    (entry,) = bundle["entries"]
    return [c for c in entry["composites"] if c["kind"] == kind]


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_every_version_is_read_by_its_own_core(scanned, version):
    b = scanned[(version, "batchnorms")]
    assert b["error"] is None
    assert b["reader"]["core"] == PINS[version]
    assert b["asset_version"] == "2.0"
    if version == "0.4.0":
        assert b["producer"] is None and b["created"] is None
        assert any("no producer" in n for n in b["notes"])
        assert b["reader"]["why"].startswith("no producer")
    else:
        assert b["producer"] == f"coreai-core {PINS[version]}"
        assert b["created"] and not any("no producer" in n for n in b["notes"])
    assert "matches main.hash" in b["integrity"]


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_every_bundle_is_loaded_on_every_runtime_and_its_exporter_inferred(scanned, version):
    b = scanned[(version, "batchnorms")]
    loads = {o["core"]: o for o in b["loads"]}
    assert set(loads) == set(PINS.values())
    if version == "0.4.0":
        # Reported, contained, and the next runtime still tried.
        assert loads["1.0.0b1"]["outcome"] == "loads"
        for core in ("1.0.0b2", "1.0.0b3"):
            assert loads[core]["outcome"] == "crashes" and loads[core]["signal"] == "SIGABRT"
            assert "expected AICode versioned location" in loads[core]["error"]
            assert Path(loads[core]["log"]).is_file()
        assert b["exporter"].startswith("coreai-torch 0.4.0 (no producer")
    else:
        assert {o["outcome"] for o in loads.values()} == {"loads"}
        assert version in b["exporter"]


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_batch_norms_scan_as_composite_call_sites_with_shared_bodies(scanned, version):
    (bn,) = composites(scanned[(version, "batchnorms")], "batch_norm")
    assert bn["call_sites"] == 3 and bn["nested"] == 0
    # The two identical batch norms are one body with two call sites after optimize.
    assert sorted(body["call_sites"] for body in bn["bodies"]) == [1, 2]
    shared = next(body for body in bn["bodies"] if body["call_sites"] == 2)
    assert shared["input_shapes"][0] == [1, 4, 8, 8] and shared["name"].startswith("batch_norm")
    (entry,) = scanned[(version, "batchnorms")]["entries"]
    assert not any(op.endswith("invoke") for op in entry["ops"])  # every invoke resolved
    assert entry["inputs"] == [{"name": "x", "shape": [1, 4, 8, 8], "dtype": "float32"}]
    assert entry["inlined"]["coreai.relu"] == 1


@pytest.mark.slow
def test_conv_then_batch_norm_is_folded_from_core_b2_on(scanned):
    assert [c["call_sites"] for c in composites(scanned[("0.4.0", "convbn")], "batch_norm")] == [1]
    for version in ("0.4.1", "0.4.2", "0.4.3"):
        assert composites(scanned[(version, "convbn")], "batch_norm") == []


@pytest.mark.slow
@pytest.mark.parametrize("version", VERSIONS)
def test_dynamic_shapes_and_conv_transpose(scanned, version):
    b = scanned[(version, "upsampler")]
    (entry,) = b["entries"]
    assert entry["inputs"][0]["shape"] == [1, 4, "?"]
    assert any(d.startswith("input x") for d in entry["dynamic"])
    assert entry["dynamic_results"] > 0
    assert entry["ops"].get("coreai.conv_transpose2d") == 1  # 1-D goes through the 2-D op
    assert [c["call_sites"] for c in composites(b, "group_norm")] == [1]


@pytest.mark.slow
def test_weights_fingerprint_is_content_not_names(scanned):
    for version in VERSIONS:
        same = scanned[(version, "batchnorms")]
        again = scanned[(version, "batchnorms-again")]
        other = scanned[(version, "batchnorms-other")]
        assert same["weights"]["fingerprint"] == again["weights"]["fingerprint"]
        assert same["weights"]["fingerprint"] != other["weights"]["fingerprint"]
        assert same["weights"]["constants"] > 0 and same["weights"]["bytes"] > 0


@pytest.mark.slow
def test_producer_less_bundle_is_never_read_first_by_a_newer_core(bundles):
    """1.0.0b2/b3 abort natively on a 1.0.0b1 asset: the abort is contained and reported."""
    proc = run_scan(str(bundles / "0.4.0" / "batchnorms.aimodel"), "--reader", "0.4.3")
    assert proc.returncode == 2
    line = one_clean_line(proc)
    assert "coreai-core 1.0.0b3 cannot read it" in line and "SIGABRT" in line


@pytest.mark.slow
def test_a_bundle_its_producer_s_core_cannot_read_is_read_by_the_next_beside_one_read_first(
    bundles, tmp_path
):
    """Every bundle's first choice is read in one batch; one that core cannot read goes on
    down its plan. A 0.4.0 bundle whose metadata names coreai-core 1.0.0b3 is tried with b3
    (it aborts), then b2 (it aborts), and read by b1, saying so; the 0.4.2 bundle beside it is
    read by its own core."""
    folder = tmp_path / "shipped"
    shutil.copytree(bundles / "0.4.0" / "convbn.aimodel", folder / "edited.aimodel")
    shutil.copytree(bundles / "0.4.2" / "convbn.aimodel", folder / "own.aimodel")
    meta = folder / "edited.aimodel" / "metadata.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "producer": "coreai-core 1.0.0b3"}))
    data = scan_json(str(folder), "--runtime", "b1")
    assert data["_exit"] == 0, data["_stderr"]
    by_name = {b["name"]: b for b in data["result"]["bundles"]}
    edited, own = by_name["edited.aimodel"], by_name["own.aimodel"]
    assert (own["reader"]["core"], own["attempts"]) == ("1.0.0b2", [])
    assert (edited["reader"]["core"], edited["reader"]["why"]) == ("1.0.0b1", "fallback")
    assert [a.split(":")[0] for a in edited["attempts"]] == [
        "coreai-core 1.0.0b3",
        "coreai-core 1.0.0b2",
    ]
    # the core's own line, read from the read's log, and how its process ended
    assert all("versioned IR (died of SIGABRT)" in a for a in edited["attempts"])
    assert any("may have been edited" in n for n in edited["notes"])
    assert any(
        w.startswith("edited.aimodel: read with coreai-core 1.0.0b1") for w in data["warnings"]
    )
    # each read kept its own log, the failed ones too
    logs = {Path(b["reader"]["log"]).parent for b in (edited, own)}
    assert len(logs) == 2 and all(log.is_dir() for log in logs)


@pytest.mark.slow
@pytest.mark.parametrize("version", ("0.4.0", "0.4.2"))
def test_truncated_program_fails_cleanly(bundles, tmp_path, version):
    bundle = tmp_path / "truncated.aimodel"
    shutil.copytree(bundles / version / "batchnorms.aimodel", bundle)
    program = bundle / "main.mlirb"
    program.write_bytes(program.read_bytes()[: program.stat().st_size // 2])
    proc = run_scan(str(bundle))
    assert proc.returncode == 2
    assert "does not match main.hash" in one_clean_line(proc)
    # Without the stored hash the parser itself meets the truncation (a native abort in every
    # core): still one line and exit 2.
    (bundle / "main.hash").unlink()
    proc = run_scan(str(bundle))
    assert proc.returncode == 2
    line = one_clean_line(proc)
    assert "cannot read it" in line and "truncated or corrupt" in line


@pytest.mark.slow
def test_a_bad_bundle_does_not_stop_the_others(bundles, tmp_path, json_schema):
    shutil.copytree(bundles / "0.4.2" / "convbn.aimodel", tmp_path / "good.aimodel")
    shutil.copytree(bundles / "0.4.2" / "convbn.aimodel", tmp_path / "bad.aimodel")
    (tmp_path / "bad.aimodel" / "metadata.json").write_text('{"producer": "coreai-co')
    data = scan_json(str(tmp_path))
    assert data["_exit"] == 2
    json_schema({k: v for k, v in data.items() if not k.startswith("_")})
    by_name = {b["name"]: b for b in data["result"]["bundles"]}
    assert by_name["good.aimodel"]["error"] is None
    assert "not valid JSON" in by_name["bad.aimodel"]["error"]


@pytest.mark.slow
def test_a_reader_environment_that_cannot_be_built_is_each_bundle_s_answer_not_the_run_s(
    bundles, tmp_path, json_schema
):
    """Reader environments are built when a read first needs them: in a fresh cache whose
    builds all fail, every bundle is still reported, with the reason, and the scan is
    inconclusive (exit 3: scan again), not a bundle that cannot be read (2)."""
    shutil.copytree(bundles / "0.4.2" / "convbn.aimodel", tmp_path / "a.aimodel")
    shutil.copytree(bundles / "0.4.0" / "batchnorms.aimodel", tmp_path / "b.aimodel")
    cache = tmp_path / "cache"
    with torch_lock_held(cache) as timed_out:
        proc = invoke(
            "scan",
            str(tmp_path / "a.aimodel"),
            str(tmp_path / "b.aimodel"),
            "--json",
            "-q",
            INVENTORY_CACHE=str(cache),
            INVENTORY_LOCK_TIMEOUT="2",
        )
    assert proc.returncode == 3 and "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    json_schema(data)
    errors = {b["name"]: b["error"] for b in data["result"]["bundles"]}
    assert sorted(errors) == ["a.aimodel", "b.aimodel"]
    assert all(e and "environment not built: " + timed_out in e for e in errors.values()), errors


# ---- against the registry ----------------------------------------------------------------------

REGISTRY = """
[bundles.convnet]
files = ["convbn.aimodel"]
dtype = "float32"
[bundles.convnet.exporter]
converter = "{converter}"
core = "{core}"
source = "test"
[bundles.convnet.trace]
target = "none"
summary = "1 instance(s) of batch_norm"
[[bundles.convnet.instances]]
kind = "batch_norm"
count = 1
dtype = "float32"
source = "test"
[bundles.convnet.instances.params]
num_features = 4

[bundles.vocoder]
files = ["renamed_vocoder.aimodel"]
dtype = "float32"
fingerprint = "{fingerprint}"
[bundles.vocoder.exporter]
converter = "0.4.2"
core = "1.0.0b2"
source = "test"
[bundles.vocoder.trace]
target = "none"
summary = "2 instance(s) of conv_transpose"
[[bundles.vocoder.instances]]
kind = "conv_transpose"
count = 2
dtype = "float32"
source = "test"
[bundles.vocoder.instances.params]
dim = 1
"""


def _registry(tmp_path: Path, fingerprint: str, converter: str, core: str) -> Path:
    path = tmp_path / "recipes.toml"
    path.write_text(REGISTRY.format(fingerprint=fingerprint, converter=converter, core=core))
    return path


def _findings(data: dict, bundle: str) -> dict[str, dict]:
    (link,) = [link for link in data["result"]["links"] if link["bundle"] == bundle]
    return {f["subject"]: f for f in link["findings"]} | {"_link": link}


@pytest.mark.slow
def test_registry_batch_norm_visible_on_b1_and_folded_on_b2(bundles, scanned, tmp_path):
    fp = scanned[("0.4.2", "upsampler")]["weights"]["fingerprint"]
    registry = _registry(tmp_path, fp, "0.4.0", "1.0.0b1")
    data = scan_json(
        str(bundles / "0.4.0" / "convbn.aimodel"), "--against-registry", "--registry", str(registry)
    )
    found = _findings(data, "convnet")
    assert found["batch_norm"]["status"] == "agree"
    assert found["exporter"]["status"] == "agree"  # no producer: the 1.0.0b1 era
    assert any("lowerings baked into plain ops" in c for c in found["_link"]["cannot_establish"])
    # The registry states no runtimes, so the bundle must load on every runtime in the catalog;
    # a 0.4.0 asset does not load on 1.0.0b2 and b3: that is a disagreement (exit 1).
    assert data["_exit"] == 1, data["_stderr"]
    assert found["loads"]["status"] == "disagree"
    assert "expected AICode versioned location" in found["loads"]["scanned"]
    assert "every runtime in the catalog" in found["loads"]["traced"]
    # Deployed on 1.0.0b1 only (--runtime), nothing disagrees.
    data = scan_json(
        str(bundles / "0.4.0" / "convbn.aimodel"),
        "--against-registry",
        "--registry",
        str(registry),
        "--runtime",
        "b1",
    )
    assert data["_exit"] == 0, data["_stderr"]
    assert _findings(data, "convnet")["loads"]["status"] == "agree"

    registry = _registry(tmp_path, fp, "0.4.2", "1.0.0b2")
    data = scan_json(
        str(bundles / "0.4.2" / "convbn.aimodel"), "--against-registry", "--registry", str(registry)
    )
    found = _findings(data, "convnet")
    assert found["batch_norm"]["status"] == "cannot-tell"
    assert "folds a batch norm" in found["batch_norm"]["reason"]
    assert any("0.4.1 and 0.4.2" in c for c in found["_link"]["cannot_establish"])
    assert data["_exit"] == 0


@pytest.mark.slow
def test_registry_exporter_and_instance_disagreements(bundles, scanned, tmp_path, json_schema):
    fp = scanned[("0.4.2", "upsampler")]["weights"]["fingerprint"]
    # The registry says 0.4.1 (core b2); the 0.4.0 bundle carries no producer.
    registry = _registry(tmp_path, fp, "0.4.1", "1.0.0b2")
    data = scan_json(
        str(bundles / "0.4.0" / "convbn.aimodel"),
        str(bundles / "0.4.2" / "upsampler.aimodel"),
        "--against-registry",
        "--registry",
        str(registry),
    )
    assert data["_exit"] == 1
    json_schema({k: v for k, v in data.items() if not k.startswith("_")})
    convnet = _findings(data, "convnet")
    assert convnet["exporter"]["status"] == "disagree"
    assert "1.0.0b1" in convnet["exporter"]["reason"]
    # Matched by its weights fingerprint although its file name is not in the registry; it
    # holds one conv transpose where the trace recorded two.
    vocoder = _findings(data, "vocoder")
    assert list(vocoder["_link"]["matched_by"].values()) == ["fingerprint"]
    assert vocoder["conv_transpose"]["status"] == "disagree"
    assert vocoder["conv_transpose"]["scanned"].startswith("1 ")
    # Present, never traced, and the tracer detects group norms (its detectors import here,
    # beside torch): the bundle holds more than the trace recorded.
    assert vocoder["group_norm"]["status"] == "disagree"
    assert vocoder["group_norm"]["reason"].startswith("the bundle holds more than the trace")
    assert vocoder["exporter"]["status"] == "agree"


@pytest.mark.slow
def test_registry_text_report_and_unmatched_bundle(bundles, tmp_path):
    registry = _registry(tmp_path, "sha256:none", "0.4.2", "1.0.0b2")
    proc = run_scan(
        str(bundles / "0.4.2" / "batchnorms.aimodel"),
        "--against-registry",
        "--registry",
        str(registry),
    )
    assert proc.returncode == 0, proc.stderr
    assert "no registry entry" in proc.stdout and "batch_norm x3 call sites" in proc.stdout


# ---- what needs no converter -------------------------------------------------------------------


def test_bad_paths_are_one_line_usage_errors(tmp_path):
    proc = run_scan(str(tmp_path / "nope"))
    assert proc.returncode == 2 and "no such file or directory" in one_clean_line(proc)
    (tmp_path / "file.aimodel").write_text("x")
    proc = run_scan(str(tmp_path / "file.aimodel"))
    assert proc.returncode == 2 and "not a folder" in one_clean_line(proc)
    (tmp_path / "empty").mkdir()
    proc = run_scan(str(tmp_path / "empty"))
    assert proc.returncode == 2 and "no .aimodel bundle" in one_clean_line(proc)
    proc = run_scan()
    assert proc.returncode == 2 and "give a bundle folder" in one_clean_line(proc)
    proc = run_scan(str(tmp_path / "nope"), "--json")
    assert json.loads(proc.stdout)["error"].endswith("no such file or directory")


def test_unreadable_bundle_files_are_one_line_errors(tmp_path):
    bundle = tmp_path / "m.aimodel"
    bundle.mkdir()
    proc = run_scan(str(bundle))
    assert proc.returncode == 2 and "no metadata.json" in one_clean_line(proc)
    (bundle / "metadata.json").write_text('{"assetVersion": "2.0"}')
    proc = run_scan(str(bundle))
    assert proc.returncode == 2 and "no main.mlirb" in one_clean_line(proc)
    (bundle / "main.mlirb").write_bytes(b"#!/bin/sh\nrm -rf /\n")
    proc = run_scan(str(bundle))
    assert proc.returncode == 2 and "not MLIR bytecode" in one_clean_line(proc)
    (bundle / "main.mlirb").write_bytes(b"")
    proc = run_scan(str(bundle))
    assert proc.returncode == 2 and "empty file" in one_clean_line(proc)


def test_resource_blobs_hash_the_same_in_any_chunking():
    rng = random.Random(0)
    blobs = {
        f"resource_{i}": bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
        for i in range(4)
    }
    body = "module {\n  %0 = coreai.constant dense_resource<resource_0> : tensor<2xf32>\n}\n"
    entries = ",\n".join(f'      {k}: "0x10000000{v.hex().upper()}"' for k, v in blobs.items())
    text = (
        body + "\n{-#\n  dialect_resources: {\n    builtin: {\n" + entries + "\n    }\n  }\n#-}\n"
    )
    want = {k: (hashlib.sha256(v).hexdigest(), len(v)) for k, v in blobs.items()}
    for _ in range(20):
        sink = _ResourceHasher()
        at = 0
        while at < len(text):
            step = rng.randrange(1, 40)
            sink.write(text[at : at + step])
            at += step
        assert sink.digests == want


def test_invokes_resolve_to_composites_through_plain_graphs():
    from inventory.scan import resolve_entry

    def graph(name, ops, invokes=None, composite=None, public=False, noinline=True):
        return {
            "name": name,
            "public": public,
            "noinline": noinline,
            "composite": composite,
            "template_op": None,
            "inputs": [{"name": "x", "shape": [2, "?"], "dtype": "f16", "dynamic": True}],
            "outputs": [],
            "ops": ops,
            "invokes": invokes or {},
            "dynamic_results": 0,
            "result_dtypes": {"f32": 1},
        }

    graphs = {
        g["name"]: g
        for g in [
            graph(
                "main",
                {"coreai.relu": 1, "coreai.invoke": 3},
                {"block_abcdefgh": 2, "missing": 1},
                public=True,
                noinline=False,
            ),
            # a plain private graph (no declaration, no composite-like name) is inlined per call
            graph(
                "block_abcdefgh",
                {"coreai.conv2d": 1, "coreai.invoke": 2},
                {"layer_norm_qwertyui": 1, "hardswish_zxcvbnmq": 1},
                noinline=False,
            ),
            graph("layer_norm_qwertyui", {"coreai.rsqrt": 1}, composite="layer_norm"),
            graph(
                "hardswish_zxcvbnmq",
                {"coreai.invoke": 1},
                {"hard_sigmoid_asdfghjk": 1},
                composite="hardswish",
            ),
            # no declaration at all: recognised by its name only, and said so
            graph("hard_sigmoid_asdfghjk", {"coreai.clamp": 1}),
        ]
    }
    entry = resolve_entry(graphs["main"], graphs)
    by_kind = {c.kind: c for c in entry.composites}
    assert by_kind["layer_norm"].call_sites == 2 and len(by_kind["layer_norm"].bodies) == 1
    assert by_kind["layer_norm"].bodies[0]["call_sites"] == 2
    assert by_kind["layer_norm"].declared_by == "composite_decl"
    assert by_kind["hard_sigmoid"].nested == 2 and by_kind["hard_sigmoid"].call_sites == 0
    assert by_kind["hard_sigmoid"].declared_by == "name"
    assert entry.ops == {"coreai.conv2d": 2, "coreai.relu": 1}
    assert entry.inlined == {
        "coreai.clamp": 2,
        "coreai.conv2d": 2,
        "coreai.rsqrt": 2,
        "coreai.relu": 1,
    }
    assert entry.unresolved == {"missing": 1}
    assert entry.dynamic == ["input x: [2, ?]"]


def test_a_fifo_is_never_opened(tmp_path):
    bundle = tmp_path / "m.aimodel"
    bundle.mkdir()
    (bundle / "metadata.json").write_text('{"assetVersion": "2.0"}')
    os.mkfifo(bundle / "main.mlirb")
    proc = run_scan(str(bundle))
    assert proc.returncode == 2 and "not a regular file" in one_clean_line(proc)


@pytest.mark.slow
def test_scan_in_markdown_holds_what_the_json_holds(bundles):
    """Every bundle with each runtime's answer, and each one not loading where it is deployed,
    is in the markdown as in the JSON (the one document, two formats)."""
    data = scan_json(str(bundles / "0.4.0"))
    proc = run_scan(str(bundles / "0.4.0"), "-f", "markdown")
    assert proc.returncode == data["_exit"] == 1, proc.stderr
    md = proc.stdout
    for b in data["result"]["bundles"]:
        loads = "; ".join(f"{o['core']} {o['outcome']}" for o in b["loads"])
        assert f"| {b['name']} |" in md and loads in md, b["name"]
    for f in data["result"]["not_loading"]:
        assert f"**{f['bundle']}** does not load on a deployment runtime" in md
