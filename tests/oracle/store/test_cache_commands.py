"""`cache list` (what the store holds, by kind and age), `cache du` (what it takes on disk, as
`du` counts it), `cache prune --dry-run` (what prune would remove, nothing removed) and
`cache prune --all`, which asks on a terminal and needs --yes elsewhere."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli import ROOT, invoke, one_line

from oracle.store.result_store import code_digest

NOW = time.time()
DAY = 86400


def _result(folder: Path, days_old: float, size: int = 1000, code: str | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "evidence.bin").write_bytes(b"x" * size)
    (folder / "result.json").write_text(json.dumps({"code": code or code_digest()}))
    then = NOW - days_old * DAY
    os.utime(folder / "result.json", (then, then))
    return folder


@pytest.fixture
def store(tmp_path: Path) -> dict[str, str]:
    """A store holding one result of each kind, of known ages, and a run's temp folder; the
    environment variables that point the CLI at it (cache and store apart, as a shared store
    is)."""
    results = tmp_path / "store" / "results"
    _result(results / "pad-0.4.1-0.4.2-0123456789abcdef0123", 0.1, 5000)
    _result(results / "pad-0.4.1-0.4.2-1123456789abcdef0123", 40, 3000)
    _result(results / "layer_norm-0.4.1-0.4.2-0123456789abcdef0123", 3)
    _result(results / "load-0.4.0-float16-0123456789abcdef0123", 10)
    _result(results / "verify-build-mimi-0123456789abcdef0123", 0.5)
    _result(results / "verify-side-mimi-0.4.2-0123456789abcdef0123", 0.5)
    _result(results / "repair-0123456789abcdef", 2)
    (results / ".pad-0.4.1-0.4.2-2123456789abcdef0123.x").mkdir()  # a dead run's temp folder
    cache = tmp_path / "cache"
    (cache / "envs" / "coreai-torch-0.4.1").mkdir(parents=True)
    (cache / "envs" / "coreai-torch-0.4.1" / "lib.so").write_bytes(b"y" * 20000)
    (cache / "envs" / "coreai-torch-0.4.1.build.log").write_text("log\n" * 100)
    # a second environment hard-links the first's file (counted once), a third is another
    # store's, reached by a symbolic link (not followed)
    (cache / "envs" / "coreai-torch-0.4.2").mkdir()
    os.link(
        cache / "envs" / "coreai-torch-0.4.1" / "lib.so",
        cache / "envs" / "coreai-torch-0.4.2" / "lib.so",
    )
    (cache / "envs" / "torch-2.13.0").symlink_to(tmp_path)
    (cache / "logs").mkdir()
    (cache / "logs" / "w.log").write_text("z" * 7000)
    return {"INVENTORY_CACHE": str(cache), "INVENTORY_STORE": str(tmp_path / "store")}


def _du(*paths: Path) -> int:
    """coreutils du, the reference: allocated bytes, hard links once, symlinks not followed."""
    out = subprocess.run(
        ["du", "-s", "--block-size=1", "-c", *map(str, paths)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return int(out.splitlines()[-1].split()[0])


def test_cache_list_counts_results_by_kind_and_age(store, json_schema):
    proc = invoke("cache", "list", "--json", **store)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    kinds = {k["kind"]: k for k in data["kinds"]}
    assert {k: v["count"] for k, v in kinds.items()} == {
        "probe": 3,
        "load": 1,
        "verify": 2,
        "repair": 1,
        "temp": 1,
    }
    # today, this week, this month, older
    assert kinds["probe"]["ages"] == [1, 1, 0, 1]
    assert kinds["load"]["ages"] == [0, 0, 1, 0] and kinds["repair"]["ages"] == [0, 1, 0, 0]
    assert round(kinds["probe"]["oldest_days"]) == 40
    parts = {e["name"]: e["part"] for e in data["entries"]}
    assert parts["verify-side-mimi-0.4.2-0123456789abcdef0123"] == "side"
    assert parts["layer_norm-0.4.1-0.4.2-0123456789abcdef0123"] == "layer_norm"

    text = invoke("cache", "list", COLUMNS="200", **store).stdout
    row = next(ln for ln in text.splitlines() if ln.startswith("probe comparisons"))
    assert row.split()[2:7] == ["3", "1", "1", "0", "1"]


def test_cache_list_of_an_empty_store_says_so(tmp_path):
    proc = invoke("cache", "list", INVENTORY_CACHE=str(tmp_path), INVENTORY_STORE=str(tmp_path))
    assert proc.returncode == 0 and proc.stdout.startswith("no stored results in ")


def test_cache_du_agrees_with_du(store, json_schema):
    proc = invoke("cache", "du", "--json", **store)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    parts = {p["name"]: p for p in data["parts"]}
    cache, results = Path(store["INVENTORY_CACHE"]), Path(store["INVENTORY_STORE"]) / "results"
    assert parts["results"]["bytes"] == _du(results)
    assert parts["results"]["count"] == 8
    by_kind = {i["name"]: i for i in parts["results"]["items"]}
    assert by_kind["probe comparisons"]["count"] == 3
    assert by_kind["probe comparisons"]["bytes"] == _du(*results.glob("[pl]a*-0.4.1-*"))
    assert parts["environments"]["bytes"] == _du(cache / "envs")  # the hard link once
    envs = {i["name"]: i for i in parts["environments"]["items"]}
    assert set(envs) == {"coreai-torch-0.4.1", "coreai-torch-0.4.2", "torch-2.13.0"}
    assert envs["coreai-torch-0.4.1"]["bytes"] == _du(
        cache / "envs" / "coreai-torch-0.4.1", cache / "envs" / "coreai-torch-0.4.1.build.log"
    )
    assert envs["torch-2.13.0"]["note"].startswith("symbolic link to ")
    assert parts["logs"]["bytes"] == _du(cache / "logs")
    assert data["total_bytes"] == sum(p["bytes"] for p in data["parts"])
    text = invoke("cache", "du", COLUMNS="200", **store).stdout
    assert text.splitlines()[-1].split()[0] == "total"


def _names(store: dict[str, str]) -> set[str]:
    return {p.name for p in (Path(store["INVENTORY_STORE"]) / "results").iterdir()}


def test_prune_dry_run_says_what_prune_removes_and_removes_nothing(store):
    results = Path(store["INVENTORY_STORE"]) / "results"
    # results of other oracle code are pruned
    _result(results / "pad-0.4.1-0.4.2-3123456789abcdef0123", 1, code="000000000000")
    before = _names(store)
    dry = invoke("cache", "prune", "--older-than", "30", "--dry-run", **store)
    assert dry.returncode == 0, dry.stderr
    assert _names(store) == before
    assert dry.stdout.splitlines()[-1].endswith("(dry run: nothing removed)")
    predicted = sorted(
        ln.removeprefix("would remove ")
        for ln in dry.stdout.splitlines()
        if ln.startswith("would remove ")
    )
    # (the other stand-ins here carry no evidence digest, so prune reads them as damaged)
    assert {
        ".pad-0.4.1-0.4.2-2123456789abcdef0123.x: left by an interrupted run",
        "pad-0.4.1-0.4.2-3123456789abcdef0123: made by other oracle code",
    } <= set(predicted)
    real = invoke("cache", "prune", "--older-than", "30", **store)
    assert (
        sorted(
            ln.removeprefix("removed ")
            for ln in real.stdout.splitlines()
            if ln.startswith("removed ")
        )
        == predicted
    )
    assert before - _names(store) == {p.split(":")[0] for p in predicted}


def test_prune_all_without_a_terminal_needs_yes_and_removes_nothing(store):
    before = _names(store)
    proc = invoke("cache", "prune", "--all", **store)  # CliRunner's stdin is not a terminal
    assert proc.returncode == 2
    assert one_line(proc) == (
        f"error: cache prune --all would remove every stored result (7) in "
        f"{Path(store['INVENTORY_STORE']) / 'results'}: the evidence every earlier answer "
        "cites; pass --yes to confirm (nothing removed)"
    )
    assert _names(store) == before
    # a dry run asks nothing and removes nothing
    assert invoke("cache", "prune", "--all", "--dry-run", **store).returncode == 0
    assert _names(store) == before
    proc = invoke("cache", "prune", "--all", "--yes", **store)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "8 removed, 0 kept"
    assert _names(store) == set()


def _on_a_terminal(answer: str, env: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
    """`cache prune --all` with a terminal as its input, answering the question."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "inventory.cli", "cache", "prune", "--all"],
            stdin=follower,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=ROOT,
            env={**os.environ, **env},
        )
        os.write(leader, f"{answer}\n".encode())
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(leader)
        os.close(follower)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def test_prune_all_on_a_terminal_asks_first(store):
    before = _names(store)
    declined = _on_a_terminal("n", store)
    assert declined.returncode == 0, declined.stderr
    assert b"Remove every stored result (7)" in declined.stderr
    assert b"nothing removed" in declined.stderr and _names(store) == before
    confirmed = _on_a_terminal("y", store)
    assert confirmed.returncode == 0, confirmed.stderr
    assert confirmed.stdout.decode().splitlines()[-1] == "8 removed, 0 kept"
    assert _names(store) == set()


def test_du_of_an_environment_is_its_folder_and_log_only(tmp_path):
    """An environment's build log counts with it; a log without its environment is its own."""
    envs = tmp_path / "envs"
    (envs / "a").mkdir(parents=True)
    (envs / "a.build.log").write_text("1" * 5000)
    (envs / "b.build.log").write_text("2" * 5000)
    data = json.loads(
        invoke(
            "cache", "du", "--json", INVENTORY_CACHE=str(tmp_path), INVENTORY_STORE=str(tmp_path)
        ).stdout
    )["result"]
    (environments,) = [p for p in data["parts"] if p["name"] == "environments"]
    assert {i["name"] for i in environments["items"]} == {"a", "b.build.log"}
    shutil.rmtree(envs)


def test_cache_list_and_du_show_sides_and_comparisons_apart(store, json_schema):
    """The converted sides (`sides/`) are their own kind and their own part: a comparison made
    over a side holds its files as hard links, which count once, with the side."""
    root = Path(store["INVENTORY_STORE"])
    side = _result(root / "sides" / "side-pad-0.4.2-0123456789abcdef0123", 0.2, 9000)
    comparison = root / "results" / "pad-0.4.1-0.4.2-0123456789abcdef0123"
    os.link(side / "evidence.bin", comparison / "side.bin")

    document = json.loads(invoke("cache", "list", "--json", **store).stdout)
    json_schema(document)
    kinds = {k["kind"]: k["count"] for k in document["result"]["kinds"]}
    assert kinds["side"] == 1 and kinds["probe"] == 3
    parts = {e["name"]: (e["kind"], e["part"]) for e in document["result"]["entries"]}
    assert parts[side.name] == ("side", "pad")
    text = invoke("cache", "list", COLUMNS="200", **store).stdout
    assert any(ln.startswith("converted sides") for ln in text.splitlines()), text

    document = json.loads(invoke("cache", "du", "--json", **store).stdout)
    json_schema(document)
    du = {p["name"]: p for p in document["result"]["parts"]}
    assert du["sides"]["count"] == 1 and du["sides"]["bytes"] == _du(root / "sides")
    assert du["results"]["count"] == 8
    # the linked file is the side's, never counted twice
    assert du["sides"]["bytes"] + du["results"]["bytes"] == _du(root / "sides", root / "results")
