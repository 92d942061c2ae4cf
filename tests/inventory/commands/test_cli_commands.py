"""Every command driven through the CLI as a user runs it: exit codes, output formats, options,
housekeeping. Each run goes through the typer app in this process (tests/helpers/cli.py `invoke`);
the JSON it prints is also checked against its published schema (`schemas/`)."""

from __future__ import annotations

import json
import os
import shutil
import time
import tomllib
from pathlib import Path

import tomli_w
from cli import Ran, invoke, spawn
from doubles.faults import fault_env

from oracle.infra.paths import envs_dir

ROOT = Path(__file__).resolve().parents[3]


def run(*args: str, **env: str) -> Ran:
    # lines are read whole: a width of their own, not one another test's run left behind
    proc = invoke(*args, **{"COLUMNS": "200", **env})
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def private_cache(tmp_path: Path) -> Path:
    """An empty result store of its own that borrows the built environments (so nothing stored
    by another run is reused, and no environment is rebuilt)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    return cache


# ---- exit 3: a worker that dies ---------------------------------------------------------------


def test_an_injected_worker_crash_is_inconclusive_and_exit_3(converter_envs, tmp_path, json_schema):
    cache = private_cache(tmp_path)
    proc = run(
        "affected",
        "--fix",
        "40",
        "--bundle",
        "parakeet",
        "--bundle",
        "sam3",
        "--json",
        "-q",
        "--no-cache",
        INVENTORY_CACHE=str(cache),
        INVENTORY_WORKER_FAULT="crash",
    )
    assert proc.returncode == 3, proc.stderr
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    assert data["reexport"] == "inconclusive"
    by = {b["bundle"]: b for b in data["bundles"]}
    # the rest of the run goes on: parakeet is still answered (it holds no conv transpose)
    assert (by["parakeet"]["verdict"], by["parakeet"]["reexport"]) == ("not-affected", "no")
    sam3 = by["sam3"]
    assert (sam3["verdict"], sam3["reexport"]) == ("inconclusive", "inconclusive")
    # both of sam3's probes were tried: the worker that died on the first was started again
    assert len(sam3["probes"]) == 2
    for p in sam3["probes"]:
        assert (p["emitted"], p["shipped"], p["verdict"]) == (
            "both-cannot-convert",
            "both-cannot-convert",
            "inconclusive",
        )
        assert "worker died of SIGABRT" in p["old"]["error"]
        assert "worker died of SIGABRT" in p["new"]["error"]
        assert p["reason"].startswith("neither converter converted the probe (worker: ")


def test_a_hung_worker_is_killed_after_the_timeout_the_environment_sets(converter_envs, tmp_path):
    cache = private_cache(tmp_path)
    # a process of its own: the worker timeout is read when the client module is imported
    proc = spawn(
        "affected",
        "--fix",
        "40",
        "--registry",
        str(_registry(tmp_path)),
        "--json",
        "-q",
        INVENTORY_CACHE=str(cache),
        INVENTORY_WORKER_TIMEOUT="3",
        **fault_env(INVENTORY_WORKER_FAULT="hang"),
    )
    assert proc.returncode == 3, proc.stderr
    (probe,) = json.loads(proc.stdout)["result"]["bundles"][0]["probes"]
    assert probe["verdict"] == "inconclusive"
    for side in ("old", "new"):
        assert "worker did not answer within 3 s; killed" in probe[side]["error"]


# ---- sweep: exit 1 for a change no record explains --------------------------------------------


# Shipped programs of these dynamic-shape regimes change from 0.4.1 to 0.4.2 (outputs
# bit-identical). #56's record as the first release of the tool had it (group norm and select
# only) left them unexplained; read against 366c34a, #56 rewrote
# replace_sym_size_int, which every dynamic-size graph goes through, and its record now names them.
DYNAMIC_0_4_2 = [
    "arange/end-from-dynamic-dim",
    "repeat_symbolic/batch-symbolic",
    "repeat_symbolic/batch-symbolic-fp16",
    "cat_dynamic/reshaped-dynamic-batch",
    "view_dynamic/split-heads-dynamic-batch",
    "view_dynamic/merge-dynamic-batch",
    "view_dynamic/symfloat-dynamic-hw-fp16",
    "view_dynamic/flatten-dynamic-batch-fp16",
]


def test_the_library_sweep_explains_every_change_of_0_4_2_and_exits_1_without_a_record(
    matrix, tmp_path, json_schema
):
    """The library sweep 0.4.1 -> 0.4.2 (the session's matrix runs it once): the real database
    explains every change; with #56's old record the eight dynamic-shape changes are
    unexplained, exit 1 (a second run, answered from the store)."""
    ran = matrix.run_cli(("sweep", "--from", "0.4.1", "--to", "0.4.2"))
    json_schema(ran.data)
    real = ran.data["result"]
    assert ran.exit == 0 and real["unexplained"] == [] and real["source"] == "library"
    dynamic = {c["probe"]: c for c in real["changed"] if c["probe"] in DYNAMIC_0_4_2}
    assert sorted(dynamic) == sorted(DYNAMIC_0_4_2)
    for c in dynamic.values():
        assert (c["shipped"], c["outputs"], c["explained_by"]) == (
            "differs",
            "bit-identical",
            ["56"],
        )
    by_40 = [c["probe"] for c in real["changed"] if c["explained_by"] == ["40"]]
    assert "conv_transpose/1d-op1-p0" in by_40 and "conv_transpose/2d-op1-p0" in by_40
    assert real["probed"] == len(real["changed"]) + real["unchanged"] + len(real["failing_both"])

    records = tomllib.loads((ROOT / "oracle" / "catalog" / "fixes.toml").read_text())["fix"]
    old_56 = tmp_path / "old-56.toml"
    old_56.write_text(
        tomli_w.dumps(
            {
                "fix": [
                    {**f, "constructs": ["group_norm", "select_dynamic"]} if f["id"] == "56" else f
                    for f in records
                ]
            }
        )
    )
    proc = run("sweep", "--from", "0.4.1", "--to", "0.4.2", "--json", "-q", "--fixes", str(old_56))
    assert proc.returncode == 1
    document = json.loads(proc.stdout)
    json_schema(document)
    lacking = document["result"]
    assert lacking["unexplained"] == DYNAMIC_0_4_2

    proc = run("sweep", "--from", "0.4.1", "--to", "0.4.2", "--fixes", str(tmp_path / "none"), "-q")
    assert proc.returncode == 2 and "none: cannot read" in proc.stderr


# ---- release-notes, --markdown, --tolerance -----------------------------------------------------
L28 = "[apple/coreai-torch#28](https://github.com/apple/coreai-torch/pull/28)"
L54 = "[apple/coreai-torch#54](https://github.com/apple/coreai-torch/pull/54)"
L79 = "[apple/coreai-torch#79](https://github.com/apple/coreai-torch/pull/79)"


def test_release_notes_as_table_and_markdown(converter_envs):
    proc = run("release-notes", "--from", "0.4.2", "--to", "0.4.3", "-q")
    assert proc.returncode == 0, proc.stderr
    rows = [ln for ln in proc.stdout.splitlines() if "#79" in ln]
    assert any("1d-op-eq-stride" in r and "new-cannot-convert" in r for r in rows), proc.stdout
    assert "measured on: no run needed" in proc.stdout  # nothing differed that could run

    proc = run("release-notes", "--from", "0.4.2", "--to", "0.4.3", "--markdown", "-q")
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    assert md.startswith("# coreai-torch 0.4.2 → 0.4.3: what changes in converted programs")
    # an upstream reference links to the converter's pull request, not the host's issue
    assert f"## {L79} conv transpose rejects output_padding >= stride and >= dilation" in md
    assert "| `1d-op-eq-stride` | new-cannot-convert | new-cannot-convert | not-run | - |" in md
    assert "Shipped bundles holding conv_transpose: mimi, sam3." in md

    proc = run("release-notes", "--from", "0.4.3", "--to", "0.4.2", "-q")
    assert proc.returncode == 2 and "must be a later release" in proc.stderr


def test_affected_and_plan_in_markdown(converter_envs):
    proc = run("affected", "--fix", "54", "--bundle", "sortformer", "--markdown", "-q")
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    assert md.startswith(f"# Fix {L54} Compute fp16 batch norm in fp32")
    # each instance with its parameters, as the terminal gives it
    assert (
        "| sortformer | 0.4.1 | 17x dwconv k9 -> BatchNorm1d 512 var=default params fp16 "
        "fp16 | values-move | **optional** |"
    ) in md
    assert "max\\|old-new\\|" in md  # pipes in a cell are escaped, the table stays whole

    proc = run("plan", "--to", "0.4.2", "--markdown", "-q")
    assert proc.returncode == 1, proc.stderr  # sam3's asset does not load on 1.0.0b2/b3
    md = proc.stdout
    assert md.startswith("# Re-export plan for coreai-torch 0.4.2")
    assert "Deployment runtimes: coreai-core 1.0.0b2, 1.0.0b3 (default:" in md
    # each bundle's coverage cell, from the same plan's JSON (the figures move with every
    # probe kind added; what is held here is the markdown line that carries them)
    ran = run("plan", "--to", "0.4.2", "--json", "-q")
    covers = {
        b["bundle"]: _cover_cell(b["coverage"]) for b in json.loads(ran.stdout)["result"]["bundles"]
    }
    # nothing changes mimi, but most of its ops are neither probed nor checked whole:
    # unchecked, its coverage (counted over its recipe's census) saying why
    cover = covers["mimi"]
    assert cover.endswith("not covered of 318 ops") and not cover.startswith("100%"), cover
    assert (
        "| mimi | 0.4.1 | **unchecked** | 1.0.0b2 loads, 1.0.0b3 loads | - | - | "
        f"coverage ({cover}) | - | {cover} |"
    ) in md
    # the pipeline record the asset probe answered alone is not checked on the bundle's program
    lfm, sam3 = covers["lfm_audio"], covers["sam3"]
    assert (
        "| lfm_audio | 0.4.0 (assumed) | **inconclusive** | depends on the exporter | - | "
        f"{L28} (depends-on-exporter) | core-b2 (asset-probe-same-program), coverage ({lfm}) | "
        f"{L54} (values-move, changes in 0.4.1->0.4.2) | {lfm} |"
    ) in md
    assert (
        "| sam3 | 0.4.0 | **required** | 1.0.0b2 crashes, 1.0.0b3 crashes | "
        f"{L28} (does-not-load) | - | core-b2 (asset-probe-same-program), coverage ({sam3}) | - | "
        f"{sam3} |"
    ) in md
    # the summary table comes first, worst level first
    assert md.index("| sam3 | **required** |") < md.index("| bundle | exporter |")


def _cover_cell(coverage: dict) -> str:
    """The coverage cell as the plan's JSON counts it: each class's share of the census."""
    total = coverage["ops"]
    share = {k: sum(v.values()) / total for k, v in coverage["classes"].items()}
    return (
        f"{share['probed']:.0%} probed, {share['whole-program']:.0%} whole, "
        f"{share['not covered']:.0%} not covered of {total} ops"
    )


def test_tolerance_turns_an_optional_move_into_a_required_one(converter_envs, json_schema):
    """sortformer's #54 probe: error vs torch old 0.00106, new 0.000772 (relative). Within the
    fp16 default (1e-2) that is optional; with --tolerance between the two it is required."""
    base = ("--bundle", "sortformer", "--json", "-q")
    proc = run("affected", "--fix", "54", *base)
    assert proc.returncode == 0
    assert json.loads(proc.stdout)["result"]["bundles"][0]["reexport"] == "optional"

    proc = run("affected", "--fix", "54", "--tolerance", "0.0009", *base)
    assert proc.returncode == 1, proc.stderr
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    (probe,) = data["bundles"][0]["probes"]
    assert (probe["verdict"], probe["reexport"]) == ("values-move", "required")
    assert (
        probe["reason"].startswith("shipped outputs wrong")
        and "tolerance 0.0009" in probe["reason"]
    )

    proc = run("plan", "--to", "0.4.2", "--tolerance", "0.0009", *base)
    assert proc.returncode == 1, proc.stderr
    (bundle,) = json.loads(proc.stdout)["result"]["bundles"]
    assert [i["fix"] for i in bundle["required"]] == ["54"]


# ---- envs list, cache prune ---------------------------------------------------------------------


def test_envs_list_names_exact_versions_and_deviations(converter_envs, catalog, tmp_path):
    proc = run("envs", "list")
    assert proc.returncode == 0, proc.stderr
    listed: dict[str, list[str]] = {}  # environment line -> its deviation lines
    for line in proc.stdout.splitlines():
        if line.startswith("  deviation: "):
            listed[list(listed)[-1]].append(line.removeprefix("  deviation: "))
        elif not line.startswith("  "):  # an environment (its other lines: what it recorded)
            listed[line] = []
    for version, env in converter_envs.items():
        (line,) = [ln for ln in listed if ln.startswith(f"coreai-torch-{version}: ")]
        assert line.startswith(
            f"coreai-torch-{version}: coreai-torch {version}, coreai-core {env.core}, torch 2.13.0"
        )
        if version in ("0.4.0", "0.4.1"):  # they declare torch<=2.11
            deviation, *measured = listed[line]
            assert deviation.startswith(f"coreai-torch {version} declares torch<=2.11")
            assert deviation.endswith("without dependency resolution")
            # then, one line each, the measurements that justify it (scripts/torch-sensitivity)
            assert measured and measured == [c.cited() for c in catalog.torch_checks(version)]
        else:
            assert listed[line] == []

    proc = run("envs", "list", INVENTORY_CACHE=str(tmp_path / "empty"))
    assert proc.returncode == 0
    assert proc.stdout.strip() == "no converter environments yet (inventory envs build)"


def _registry(tmp_path: Path) -> Path:
    registry = tmp_path / "r.toml"
    registry.write_text(
        '[bundles.a]\nfiles = ["a"]\ndtype = "float32"\n'
        '[bundles.a.exporter]\nconverter = "0.4.1"\nsource = "test"\n'
        '[[bundles.a.instances]]\nkind = "conv_transpose"\ndtype = "float32"\nsource = "test"\n'
        "params = { dim = 1, in_channels = 4, out_channels = 2, kernel = [3], stride = [2], "
        "padding = [1], output_padding = [0], input_shape = [1, 4, 5] }\n"
    )
    return registry


def test_cache_prune_removes_leftovers_damage_and_other_code(converter_envs, tmp_path):
    cache = private_cache(tmp_path)
    proc = run(
        "affected",
        "--fix",
        "40",
        "--registry",
        str(_registry(tmp_path)),
        "--json",
        "-q",
        INVENTORY_CACHE=str(cache),
    )
    assert proc.returncode == 0, proc.stderr
    results = cache / "results"
    (good,) = list(results.iterdir())
    leftover = results / f".{good.name}.interrupted"
    shutil.copytree(good, leftover)
    damaged = shutil.copytree(good, results / f"{good.name}-damaged")
    victim = next(damaged.rglob("shipped.mlir"))
    victim.write_text(victim.read_text()[:40])
    other = shutil.copytree(good, results / f"{good.name}-other")
    record = json.loads((other / "result.json").read_text())
    (other / "result.json").write_text(json.dumps({**record, "code": "000000000000"}))

    # the comparison's two converted sides are stored apart, and kept with it
    assert len(list((cache / "sides").iterdir())) == 2
    dry = run("cache", "prune", "--dry-run", INVENTORY_CACHE=str(cache))
    assert dry.stdout.splitlines()[-1] == "3 would remove, 3 kept (dry run: nothing removed)"
    assert len(list(results.iterdir())) == 4  # nothing removed
    proc = run("cache", "prune", INVENTORY_CACHE=str(cache))
    assert proc.returncode == 0, proc.stderr
    # the dry run said exactly what prune removes
    assert [
        ln.replace("would remove", "removed") for ln in dry.stdout.splitlines()[:-1]
    ] == proc.stdout.splitlines()[:-1]
    assert sorted(ln for ln in proc.stdout.splitlines() if ln.startswith("removed")) == sorted(
        [
            f"removed {leftover.name}: left by an interrupted run",
            f"removed {damaged.name}: damaged or unreadable",
            f"removed {other.name}: made by other oracle code",
        ]
    )
    assert proc.stdout.splitlines()[-1] == "3 removed, 3 kept"
    assert [p.name for p in results.iterdir()] == [good.name]
    assert (envs_dir() / "torch-2.13.0").exists()  # environments stay

    backup = shutil.copytree(good, tmp_path / "backup")
    week_ago = time.time() - 7 * 86400
    os.utime(good / "result.json", (week_ago, week_ago))
    proc = run("cache", "prune", "--older-than", "8", INVENTORY_CACHE=str(cache))
    assert proc.stdout.splitlines()[-1] == "0 removed, 3 kept"
    proc = run("cache", "prune", "--older-than", "6", "--dry-run", INVENTORY_CACHE=str(cache))
    assert proc.stdout.splitlines() == [
        f"would remove {good.name}: older than 6 days",
        "1 would remove, 2 kept (dry run: nothing removed)",
    ]
    proc = run("cache", "prune", "--older-than", "6", INVENTORY_CACHE=str(cache))
    assert proc.stdout.splitlines() == [
        f"removed {good.name}: older than 6 days",
        "1 removed, 2 kept",
    ]

    shutil.copytree(backup, good)
    sides = sorted(p.name for p in (cache / "sides").iterdir())
    proc = run("cache", "prune", "--all", "--yes", INVENTORY_CACHE=str(cache))
    assert proc.stdout.splitlines() == [
        f"removed {good.name}: --all",
        *(f"removed {name}: --all" for name in sides),
        "3 removed, 0 kept",
    ]
    assert not any(results.iterdir()) and not any((cache / "sides").iterdir())
