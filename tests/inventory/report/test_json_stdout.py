"""With `--json`, standard output holds the JSON document and nothing else: what a library, an
engine (Ray printed a dead raylet's log there), a worker or a child process prints goes to
stderr (`inventory.output.document_only`).

Each `--json` command runs as a process of its own (only a process shows file descriptor 1)
under the noisy double (`tests/helpers/doubles/faults.py`: prints to `sys.stdout`, writes to fd 1, a
child inheriting it, a warning, prints again at exit), with input that answers at once; one
run answers real probes while every conversion crashes (`INVENTORY_WORKER_FAULT=crash`). The
Ray executor under a lost node: `test_executor_ray.py`.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import spawn
from doubles.faults import NOISE, fault_env

from inventory.cli import app
from oracle.infra.paths import envs_dir


def _inputs(tmp: Path) -> dict[str, tuple[str, ...]]:
    """Per `--json` command, arguments it answers at once with (a document or the envelope of
    a refusal: either way, the whole of stdout)."""
    empty = tmp / "empty.toml"
    empty.write_text("[bundles]\n")
    bundle = tmp / "bundles" / "b.aimodel"
    bundle.mkdir(parents=True)
    (bundle / "metadata.json").write_text("{")
    return {
        "affected": ("affected", "--fix", "40", "--registry", str(empty)),
        "bisect": ("bisect", "--from", "0.4.1", "--to", "0.4.2", "--repo", str(tmp)),
        "cache": ("cache", "list"),
        "draft": ("draft", "--from", "0.4.1", "--to", "0.4.2", "--repo", str(tmp)),
        "envs": ("envs", "discover", "--catalog", str(empty)),
        "envs list": ("envs", "list"),
        "fixes": ("fixes",),
        "plan": ("plan", "--to", "0.4.2", "--registry", str(empty)),
        "release-notes": (
            "release-notes",
            "--from",
            "0.4.1",
            "--to",
            "0.4.2",
            "--fixes",
            str(empty),
        ),
        "repair": ("repair", str(tmp), "-o", str(tmp / "out")),
        "scan": ("scan", str(bundle.parent)),
        "sweep": ("sweep", "--from", "0.4.1", "--to", "0.4.2", "--fixes", str(empty)),
        "verify": ("verify", "b", "--to", "0.4.2", "--registry", str(empty)),
    }


def _json_commands() -> set[str]:
    import typer.main

    group = typer.main.get_command(app)
    found = set()
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        subs = getattr(command, "commands", {name: command})
        for sub in subs.values():
            if any("--json" in getattr(p, "opts", ()) for p in sub.params):
                found.add(name)
    return found


def test_every_json_command_is_run_under_the_noise(tmp_path):
    assert {name.split()[0] for name in _inputs(tmp_path)} == _json_commands()


@pytest.mark.parametrize(
    "command",
    [
        "affected",
        "bisect",
        "cache",
        "draft",
        "envs",
        "envs list",
        "fixes",
        "plan",
        "release-notes",
        "repair",
        "scan",
        "sweep",
        "verify",
    ],
)
def test_stdout_is_the_json_document_whatever_else_prints(command, tmp_path):
    args = _inputs(tmp_path)[command]
    quiet = () if command in ("cache", "envs list", "fixes") else ("-q",)  # no progress
    ran = spawn(
        *args,
        "--json",
        *quiet,
        INVENTORY_CACHE=str(tmp_path / "store"),
        **fault_env(INVENTORY_FAULT="noisy"),
    )
    assert ran.returncode in (0, 1, 2, 3), ran.stderr
    doc = json.loads(ran.stdout)  # the whole of stdout, or this raises
    assert doc["command"].split()[0] == command.split()[0] and NOISE not in ran.stdout
    # the noise happened, all of it, and went to stderr
    assert ran.stderr.count(NOISE) >= 6, ran.stderr


def test_an_answer_whose_conversions_crash_keeps_stdout_to_the_document(env, tmp_path):
    """Real probes, each conversion aborting natively (the worker double), the noise around
    them: stdout is one JSON document, the bundle inconclusive in it."""
    from registries import conv_transpose_registry

    env("0.4.1")
    env("0.4.2")
    store = tmp_path / "store"  # of its own: the crashed results are not the shared store's
    store.mkdir()
    (store / "envs").symlink_to(envs_dir())
    registry = conv_transpose_registry(tmp_path, channels=2)
    ran = spawn(
        "affected",
        "--fix",
        "40",
        "--registry",
        str(registry),
        "--no-cache",
        "--json",
        "-q",
        INVENTORY_CACHE=str(store),
        INVENTORY_STORE=str(store),
        **fault_env(INVENTORY_FAULT="noisy", INVENTORY_WORKER_FAULT="crash"),
    )
    assert ran.returncode == 3, ran.stderr
    doc = json.loads(ran.stdout)
    assert doc["command"] == "affected" and NOISE not in ran.stdout
    assert ran.stderr.count(NOISE) >= 6, ran.stderr
    assert doc["result"]["reexport"] == "inconclusive"
    assert "worker died of SIGABRT" in doc["result"]["bundles"][0]["probes"][0]["old"]["error"]
