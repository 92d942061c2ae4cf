"""Every command an answer prints (`inventory scan ...`, `inventory repair ...`) is runnable as
printed: the registry's file names, a placeholder as a shell glob, no `OUT` to fill in. Run here
by a real shell, in a folder holding the shipped files, against a stand-in `inventory` on PATH
that records its arguments (named as such: it stands in for the installed console script, whose
own parser then reads the arguments it was given)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import typer

from inventory.cli import app
from inventory.registry import DEFAULT_REGISTRY, load_registry
from inventory.shell_commands import repair_command, scan_command, shell_path

BUNDLES = load_registry(DEFAULT_REGISTRY)
# what a shipped file with a placeholder is called on disk here (lfm_audio's `L<L>`)
PLACEHOLDER = re.compile(r"<[^<>]+>")

STAND_IN = """#!/bin/sh
# test double of the `inventory` console script: records its arguments, one JSON line per call
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "$RECORD"
"""


def _run_in_shell(command: str, folder: Path, tmp_path: Path) -> list[list[str]]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stand_in = bin_dir / "inventory"
    stand_in.write_text(STAND_IN)
    stand_in.chmod(0o755)
    record = tmp_path / "calls.jsonl"
    record.unlink(missing_ok=True)
    proc = subprocess.run(
        ["sh", "-c", command],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "RECORD": str(record)},
    )
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in record.read_text().splitlines()]


def _parses(argv: list[str]) -> None:
    """The arguments are a valid command line of the real CLI (parsed, nothing run)."""
    root: Any = typer.main.get_command(app)  # a group: it has commands
    command = root.commands[argv[0]]
    with command.make_context(f"inventory {argv[0]}", argv[1:]):
        pass


@pytest.mark.parametrize("bundle", BUNDLES, ids=[b.name for b in BUNDLES])
def test_the_printed_commands_run_on_the_shipped_files(bundle, tmp_path):
    shipped = tmp_path / "shipped"
    on_disk = [PLACEHOLDER.sub("384", name) for name in bundle.files]
    for name in on_disk:
        (shipped / name).mkdir(parents=True)
    for command in (scan_command(bundle.files), repair_command(bundle.files)):
        assert not PLACEHOLDER.search(command) and " OUT" not in command, command
    scan = _run_in_shell(scan_command(bundle.files), shipped, tmp_path)
    assert scan == [["scan", *on_disk]]
    _parses(scan[0])
    repairs = _run_in_shell(repair_command(bundle.files), shipped, tmp_path)
    assert [r[1] for r in repairs] == [str(Path(n)) for n in on_disk]
    for argv, name in zip(repairs, on_disk, strict=True):
        out = Path(argv[3])
        assert argv[0] == "repair" and argv[2] == "-o"
        assert out.parent == Path(name).parent and out.name == f"repaired-{Path(name).name}"
        _parses(argv)
    # the repaired copies are not matched by the glob again: a second run repairs the same
    for name in on_disk:
        (shipped / Path(name).parent / f"repaired-{Path(name).name}").mkdir()
    again = _run_in_shell(repair_command(bundle.files), shipped, tmp_path)
    assert [r[1] for r in again] == [r[1] for r in repairs]


def test_a_name_with_a_placeholder_is_a_glob_and_the_rest_is_quoted():
    assert (
        shell_path("lfm_audio_encoder_adapter_float16_L<L>.aimodel")
        == "lfm_audio_encoder_adapter_float16_L*.aimodel"
    )
    assert shell_path("my model <N>.aimodel") == "'my model '*.aimodel"
    assert repair_command(["sam3_float16/sam3_float16.aimodel"]) == (
        "inventory repair sam3_float16/sam3_float16.aimodel -o "
        "sam3_float16/repaired-sam3_float16.aimodel"
    )
