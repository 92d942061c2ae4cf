"""`--verify` of plan and affected takes an optional value: bare it is `all` (every bundle's
whole program, as before), `--verify auto` only the bundles whose answer would be unchecked; any
other value is one line and exit 2. Parsed as the command parses it, nothing runs."""

from __future__ import annotations

from typing import Any

import pytest
import typer
from cli import invoke, refused

from inventory.cli import app
from inventory.verify.mode import VerifyMode

COMMANDS = {"plan": ["plan", "--to", "0.4.3"], "affected": ["affected", "--fix", "core-b2"]}


def _parsed(*argv: str) -> dict[str, Any]:
    command = typer.main.get_command(app).commands[argv[0]]  # type: ignore[attr-defined]
    with command.make_context(argv[0], list(argv[1:])) as ctx:
        return ctx.params


@pytest.mark.parametrize("name", COMMANDS)
def test_verify_bare_is_all_and_auto_is_auto(name):
    line = COMMANDS[name]
    assert _parsed(*line)["verify"] is None  # the default: nothing measured whole
    assert _parsed(*line, "--verify")["verify"] == VerifyMode.ALL
    # bare before another option: that option is not taken as its value
    bare = _parsed(*line, "--verify", "-q", "--bundle", "mimi")
    assert bare["verify"] == VerifyMode.ALL and bare["quiet"] and bare["bundle"] == ("mimi",)
    assert _parsed(*line, "--verify", "auto")["verify"] == VerifyMode.AUTO
    assert _parsed(*line, "--verify=auto", "-q")["verify"] == VerifyMode.AUTO
    assert _parsed(*line, "--verify", "all")["verify"] == VerifyMode.ALL
    first = _parsed(name, "--verify", "auto", *line[1:])
    assert first["verify"] == VerifyMode.AUTO


@pytest.mark.parametrize("name", COMMANDS)
def test_a_bad_verify_value_is_one_line_and_exit_2(name):
    line = refused(invoke(*COMMANDS[name], "--verify", "sometimes"))
    assert "--verify" in line and "'sometimes' is not one of 'all', 'auto'" in line
