"""Help that teaches: every command's `--help` (and `-h`) shows 1-3 examples that parse as that
command, and its exit codes; every value names what to type (VERSION, BUNDLE, FILE), a flag
names none, and no Python type (`<bool>`, `<list[str]>`) is ever shown. Shell completion is on
and completes the project's own names."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import typer
from cli import invoke

from inventory.cli import app
from inventory.errors import ExitCode
from inventory.help import EXAMPLES, EXIT_CODES, section, split_doc

# `<bool>`, `<str>`, `<path>`, `<list[str]>`, `<float>`: what typer prints for a Python type
PYTHON_TYPE = re.compile(r"<[a-z_]+(\[[a-z_, |]+\])?>")
# An example line must not wrap on an 80-column terminal (help is indented by 3).
WIDTH = 76


def _commands() -> list[tuple[tuple[str, ...], typer.core.TyperCommand]]:
    out: list[tuple[tuple[str, ...], Any]] = []

    def walk(command: object, path: tuple[str, ...]) -> None:
        subcommands = getattr(command, "commands", None)
        if subcommands:
            # each command as it runs (a group lists them before importing their modules)
            for name in list(subcommands):
                walk(command.get_command(None, name), (*path, name))  # type: ignore[attr-defined]
        else:
            out.append((path, command))

    walk(typer.main.get_command(app), ())
    return out


COMMANDS = _commands()
IDS = [" ".join(path) for path, _ in COMMANDS]


def test_every_command_is_covered():
    # the walk finds them all: a new command is checked by the tests below without listing it
    assert {
        "plan",
        "affected",
        "fixes",
        "cache list",
        "cache du",
        "cache prune",
        "envs build",
        "verify",
        "trace",
    } <= set(IDS)


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_help_has_examples_that_parse_as_the_command(path, command):
    examples = section(command.epilog or "", EXAMPLES)
    assert 1 <= len(examples) <= 3, (path, examples)
    for example in examples:
        assert len(example) <= WIDTH, example
        argv = shlex.split(example)
        assert tuple(argv[: 1 + len(path)]) == ("inventory", *path), example
        # parsed as the command parses it (every required option present, every value of the
        # right type), without running it
        args = argv[1 + len(path) :]
        with command.make_context(" ".join(("inventory", *path)), args):
            pass


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_help_lists_exit_codes(path, command):
    codes = section(command.epilog or "", EXIT_CODES)
    numbers = [int(line.split()[0]) for line in codes]
    assert all(n in {c.value for c in ExitCode} for n in numbers), codes
    # success, a usage error and a defect are every command's
    assert {0, 2, 4} <= set(numbers), (path, codes)
    assert numbers == sorted(numbers), codes
    for line in codes:
        assert len(line.split(None, 1)) == 2, line  # each code says what it means


@pytest.mark.parametrize(("path", "command"), COMMANDS, ids=IDS)
def test_help_names_what_to_type_and_h_is_help(path, command):
    long = invoke(*path, "--help", COLUMNS="100")
    short = invoke(*path, "-h", COLUMNS="100")
    assert long.returncode == short.returncode == 0, short.stderr
    assert short.stdout == long.stdout
    shown = long.stdout
    assert not PYTHON_TYPE.search(shown), PYTHON_TYPE.search(shown)
    assert "Examples:" in shown and "Exit codes:" in shown
    for param in command.params:
        if getattr(param, "is_flag", False):
            continue  # a flag takes no value and shows none
        # a value names what to type, in capitals or as its choices (local|ray, HOST:PORT)
        assert (
            param.metavar and param.metavar == param.metavar.upper() or "|" in (param.metavar or "")
        ), (path, param.name, param.metavar)
        assert param.metavar in shown, (path, param.name)


def test_plan_h_works_and_the_root_lists_the_exit_codes():
    proc = invoke("plan", "-h")
    assert proc.returncode == 0 and "Usage: inventory plan" in proc.stdout
    root = invoke("-h", COLUMNS="100")
    assert root.returncode == 0
    assert [
        int(x.split()[0])
        for x in section(split_doc(sys.modules["inventory.cli"].__doc__)[1], EXIT_CODES)
    ] == [0, 1, 2, 3, 4, 143]
    assert "--install-completion" in root.stdout and not PYTHON_TYPE.search(root.stdout)


def test_a_docstring_keeps_its_examples_and_exit_codes_line_by_line():
    doc = """First line
    of the prose.

    Examples:
    inventory x --a 1

    Exit codes:
    0  fine
    3  inconclusive, said on
       two lines
    """
    text, epilog = split_doc(doc)
    assert text == "First line of the prose."
    assert epilog == (
        "Examples:\n  inventory x --a 1\n\nExit codes:\n  0  fine\n"
        "  3  inconclusive, said on\n     two lines"
    )
    assert section(epilog, EXIT_CODES) == ["0  fine", "3  inconclusive, said on two lines"]


def _complete(words: str) -> list[str]:
    """What bash completion offers for the last word of `words` (typer's protocol, the
    installed console script as a shell runs it)."""
    script = Path(sys.executable).with_name("inventory")
    cword = len(words.split()) - (0 if words.endswith(" ") else 1)
    proc = subprocess.run(
        [str(script)],
        capture_output=True,
        text=True,
        env={
            **os.environ,
            "_INVENTORY_COMPLETE": "complete_bash",
            "COMP_WORDS": words,
            "COMP_CWORD": str(cword),
        },
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_shell_completion_completes_commands_releases_fixes_and_bundles():
    assert _complete("inventory pl") == ["plan"]
    assert _complete("inventory cache ") == ["list", "du", "prune"]
    assert _complete("inventory plan --to 0.4.") == ["0.4.0", "0.4.1", "0.4.2", "0.4.3"]
    # a line being typed may repeat an option (refused when run, never when completed)
    assert _complete("inventory plan -f json -f table --to 0.4.") == [
        "0.4.0",
        "0.4.1",
        "0.4.2",
        "0.4.3",
    ]
    assert _complete("inventory affected --fix 5") == ["54", "55", "56"]
    assert "sam3" in _complete("inventory verify ")
