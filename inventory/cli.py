"""The command line: parse arguments, call one service, hand its result to one renderer.

Examples:
inventory plan --to 0.4.3
inventory affected --fix 40
inventory fixes

Exit codes:
  0  nothing to re-export
  1  at least one re-export required (each command's --help says what 1
     means there)
  2  usage or configuration error (for repair: a refusal), one line on
     stderr
  3  inconclusive: a run failed or the registry cannot tell (never
     reported as a pass)
  4  internal error: a defect in inventory, never a finding
     (INVENTORY_DEBUG=1 prints the traceback)
143  stopped by SIGTERM (cleaned up like Ctrl-C)
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
from collections.abc import Iterator, MutableMapping
from typing import Annotated, Any

import typer
import typer.core

from inventory.help import CONTEXT, HelpGroup, split_doc
from inventory.signals import stop_on_sigterm
from inventory.terminal import OneLineErrorGroup, command
from inventory.version import version

# Every command, in the order `--help` lists them: (group, name, `module:function` under
# inventory/commands/). A command's module is imported when it runs (or its help is shown),
# never for `--version` or the list of commands: `command` gives each its docstring as help and
# the one wrapper that turns any error into one line and an exit code.
TABLE = (
    ("", "affected", "affected:affected_cmd"),
    ("", "plan", "plan:plan_cmd"),
    ("", "fixes", "fixes:fixes_cmd"),
    ("", "release-notes", "release_notes:release_notes_cmd"),
    ("", "sweep", "sweep:sweep_cmd"),
    ("cache", "list", "cache:cache_list"),
    ("cache", "du", "cache:cache_du"),
    ("cache", "prune", "cache:cache_prune"),
    ("", "trace", "trace:trace_cmd"),
    ("envs", "build", "envs:envs_build"),
    ("envs", "list", "envs:envs_list"),
    ("envs", "discover", "envs:envs_discover"),
    ("", "scan", "scan:scan_cmd"),
    ("", "repair", "repair:repair_cmd"),
    ("", "verify", "verify:verify_cmd"),
    ("", "bisect", "bisect:bisect_cmd"),
    ("", "draft", "draft:draft_cmd"),
)


class _Listed(typer.core.TyperCommand):
    """A command as the list of a group's commands shows it (its name and its help, read from
    its module's source without importing it); never run."""


class _Commands(MutableMapping[str, Any]):
    """A group's commands by name, each imported the first time it is read (`get`, `[]`,
    `items()`): what typer, click and the tests read off a group is the command itself; only
    the names, and `listed` for the group's own help, leave the modules unimported."""

    def __init__(self, group: str, commands: dict[str, Any]) -> None:
        self._group, self._commands = group, commands

    def listed(self, name: str) -> Any:
        """The command as the list of commands shows it, imported or not."""
        return self._commands.get(name)

    def __getitem__(self, name: str) -> Any:
        found = self._commands[name]
        if isinstance(found, _Listed):
            found = self._commands[name] = _loaded(self._group, name)
        return found

    def __setitem__(self, name: str, command: Any) -> None:
        self._commands[name] = command

    def __delitem__(self, name: str) -> None:
        del self._commands[name]

    def __contains__(self, name: object) -> bool:
        return name in self._commands

    def __iter__(self) -> Iterator[str]:
        return iter(self._commands)

    def __len__(self) -> int:
        return len(self._commands)


class _LazyGroup(typer.core.TyperGroup):
    """A group whose commands are imported when one is run or its help asked for: each is in
    `commands` from the start (so the list, the order and "Did you mean" hold for all of them),
    as a `_Listed` until it is first read, which its own help listing does not do."""

    GROUP = ""  # the TABLE's name of this group

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        listed: dict[str, Any] = {
            name: _Listed(name=name, help=_help(target))
            for group, name, target in TABLE
            if group == self.GROUP
        }
        # the sub-groups typer made, listed after the commands
        self.lazy = _Commands(self.GROUP, {**listed, **self.commands})
        self.commands = self.lazy
        self._listing = False

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.lazy)  # the names only: nothing imported

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        return self.lazy.listed(cmd_name) if self._listing else self.lazy.get(cmd_name)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


def _help(target: str) -> str:
    """The help a command's docstring gives, read from its module's source."""
    module, function = target.split(":")
    spec = importlib.util.find_spec(f"inventory.commands.{module}")
    assert spec is not None and spec.origin is not None  # every TABLE entry is a module
    with open(spec.origin, encoding="utf-8") as source:
        tree = ast.parse(source.read())
    found = next(
        n
        for n in tree.body
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef) and n.name == function
    )
    return split_doc(ast.get_docstring(found, clean=False))[0]


def _loaded(group: str, name: str) -> Any:
    """The command `name` of `group`, its module imported, registered as every command is."""
    target = next(t for g, n, t in TABLE if (g, n) == (group, name))
    module, function = target.split(":")
    fn = getattr(importlib.import_module(f"inventory.commands.{module}"), function)
    single = typer.Typer(add_completion=False)
    command(single, name, f"{group} {name}" if group else name)(fn)
    return typer.main.get_command(single)


class _RootGroup(_LazyGroup, OneLineErrorGroup):
    GROUP = ""


class _EnvsGroup(_LazyGroup, HelpGroup):
    GROUP = "envs"


class _CacheGroup(_LazyGroup, HelpGroup):
    GROUP = "cache"


app = typer.Typer(
    help="Does a new coreai-torch release change the on-device bundles you already shipped?",
    epilog=split_doc(__doc__)[1],
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,  # -h beside --help, in every command
    cls=_RootGroup,  # a usage error is one line (under --json, the error envelope)
)
envs_app = typer.Typer(
    help="Converter environments (one per coreai-torch release).",
    no_args_is_help=True,
    cls=_EnvsGroup,
)
app.add_typer(envs_app, name="envs")
cache_app = typer.Typer(
    help="The store: stored results, environments, runs and temp folders.",
    no_args_is_help=True,
    cls=_CacheGroup,
)
app.add_typer(cache_app, name="cache")


def _version(value: bool) -> None:
    if value:
        print(f"inventory {version()}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    stop_on_sigterm()


# The TABLE with each group's app: what the docs' checks walk.
_APPS = {"": app, "envs": envs_app, "cache": cache_app}
COMMANDS = tuple((_APPS[group], name, target) for group, name, target in TABLE)


def main() -> None:  # pragma: no cover - console entry for `python -m inventory.cli`
    sys.exit(app())


if __name__ == "__main__":
    main()
