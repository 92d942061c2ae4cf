"""Options declared once: a command states a group (`Output`, `Execution`, `Common`) as one
parameter, its options appear in the command line where the parameter stands, with the flags
and defaults the group declares, and the command receives the group whole."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from inventory.options import Common, Execution, Output, takes


def _app(received: list[object]) -> typer.Typer:
    @takes
    def toy(*, name: str = "x", out: Output, execution: Execution, common: Common) -> None:
        received.extend([name, out, execution, common])

    app = typer.Typer()
    app.command()(toy)
    app.command("other")(lambda: None)  # two commands: typer keeps the command's name
    return app


def test_a_command_receives_each_group_it_states_whole(tmp_path: Path):
    received: list[object] = []
    target = tmp_path / "answer.json"
    ran = CliRunner().invoke(
        _app(received),
        ["toy", "--name", "y", "--json", "-o", str(target), "--jobs", "3", "-q"],
    )
    assert ran.exit_code == 0, ran.output
    assert received == [
        "y",
        Output(as_json=True, output=target),
        Execution(jobs=3),
        Common(quiet=True),
    ]


def test_a_group_s_options_stand_where_the_command_states_it():
    ran = CliRunner().invoke(_app([]), ["toy", "--help"], env={"COLUMNS": "200"})
    # a row's first flag, its colour codes (if the runner's terminal has any) dropped
    plain = re.sub(r"\x1b\[[0-9;]*m", "", ran.output)
    rows = re.findall(r"^│ (--[a-z-]+)", plain, flags=re.MULTILINE)  # not a wrapped line
    assert rows == [
        "--name",
        *("--json", "--markdown", "--format", "--output"),
        *("--executor", "--ray-address", "--store", "--jobs"),
        *("--quiet", "--progress", "--catalog"),
        "--help",
    ], ran.output


def test_an_option_of_a_group_the_command_also_names_is_refused():
    with pytest.raises(AssertionError, match="clash"):

        @takes
        def clash(*, as_json: bool = False, out: Output) -> None: ...
