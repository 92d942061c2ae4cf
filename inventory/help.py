"""What `--help` (and `-h`) shows: the command's prose, its examples and exit codes, and for each
value what to type (a metavar such as VERSION, BUNDLE or FILE), never a Python type.

A command's docstring is its help. Its prose paragraphs are reflowed to the terminal's width; a
paragraph that starts with `Examples:` or `Exit codes:` is kept line by line, after the options
(typer's epilog), so a command line is never broken mid-way. tests/inventory/commands/test_help.py
checks that every command has both, that each example parses, and that no Python type is shown.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from typer.core import TyperArgument, TyperCommand, TyperGroup

if TYPE_CHECKING:
    from typer._click.core import Context as ClickContext  # the click typer vendors

# `-h` beside `--help`, for every command: a context setting the subcommands inherit.
CONTEXT = {"help_option_names": ["-h", "--help"]}
EXAMPLES = "Examples:"
EXIT_CODES = "Exit codes:"
_VERBATIM = (EXAMPLES, EXIT_CODES)


def split_doc(doc: str | None) -> tuple[str, str]:
    """(help, epilog) from a docstring: the prose with each paragraph's lines joined, so help
    wraps at the terminal's width instead of where the source broke it; the `Examples:` and
    `Exit codes:` paragraphs as written (dedented, two spaces before each item)."""
    prose: list[str] = []
    kept: list[str] = []
    for paragraph in _paragraphs(doc or ""):
        if paragraph[0].strip() in _VERBATIM:
            items = [ln.rstrip() for ln in paragraph[1:]]
            indent = min((len(ln) - len(ln.lstrip()) for ln in items), default=0)
            kept.append("\n".join([paragraph[0].strip(), *(f"  {ln[indent:]}" for ln in items)]))
        else:
            prose.append(" ".join(" ".join(paragraph).split()))
    return "\n\n".join(prose), "\n\n".join(kept)


def _paragraphs(doc: str) -> list[list[str]]:
    out: list[list[str]] = [[]]
    for line in doc.strip().splitlines():
        if line.strip():
            out[-1].append(line)
        elif out[-1]:
            out.append([])
    return [p for p in out if p]


def section(epilog: str, title: str) -> list[str]:
    """The items of one verbatim section of an epilog: each line of `Examples:`; each code of
    `Exit codes:` with what it means, its continuation lines joined to it."""
    for block in epilog.split("\n\n"):
        lines = block.splitlines()
        if lines and lines[0] == title:
            items: list[str] = []
            for line in (ln.strip() for ln in lines[1:] if ln.strip()):
                if title == EXIT_CODES and items and not line.split()[0].isdigit():
                    items[-1] += " " + line
                else:
                    items.append(line)
            return items
    return []


class _Argument(TyperArgument):
    """An argument whose help shows its metavar (BUNDLE...) and no Python type beside it."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None


_UNNAMED: dict[type, type] = {}


def _no_metavar(self: Any, param: Any, ctx: Any) -> str:
    return ""


def _unnamed(kind: Any) -> Any:
    """`kind` (an argument's click type) naming no metavar of its own: typer's rich help prints
    an argument's type from it and, when it names none, as `<str>` or `<path>`. Only what help
    shows changes (click then names the argument by its metavar); a copy, because click's types
    are shared singletons. Called once per argument (it is made an `_Argument` with it)."""
    made = _UNNAMED.get(type(kind))
    if made is None:
        made = type(f"Unnamed{type(kind).__name__}", (type(kind),), {"get_metavar": _no_metavar})
        _UNNAMED[type(kind)] = made
    new = copy.copy(kind)
    new.__class__ = made
    return new


def _plain(params: list[Any]) -> None:
    """A flag takes no value, so it shows none (typer would print `<bool>`); an argument
    shows only its name (typer would add `<list[str]>`)."""
    for param in params:
        if getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
        if type(param) is TyperArgument:
            # typer builds its own parameter objects: the help display is the only change
            param.__class__ = _Argument
            param.type = _unnamed(param.type)


class _PlainHelp:
    """The parameters as help shows them: typer adds some after a group is made (the completion
    options) and the help option when asked, so they are made plain when they are listed."""

    def get_params(self, ctx: ClickContext) -> list[Any]:
        # a mixin: the command class after it in the MRO has get_params, `object` has not
        params = super().get_params(ctx)  # type: ignore[misc]
        _plain(params)
        return params


class HelpCommand(_PlainHelp, TyperCommand):
    """A command whose help names what to type and ends with its examples and exit codes."""


class HelpGroup(_PlainHelp, TyperGroup):
    """A group (`inventory`, `inventory envs`, `inventory cache`) with the same help."""
