"""Output formats: one choice per run, one renderer per format, one JSON envelope.

Modelled on pip-audit's `OutputFormatChoice`: a command picks a format (the `--json` and
`--markdown` flags, shared by every command that has them) and hands its plain result to that
format's renderer; nothing else in a command depends on the format.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TypeVar

from rich.console import Console, RenderableType

from inventory.version import version

SCHEMA_VERSION = 1
T = TypeVar("T")
# Strict JSON (RFC 8259) has no NaN or infinity; a measured max |old-new| can be infinite (NaN on
# one side only), so such numbers are written as these strings, never as bare `Infinity`.
_NONFINITE = {math.inf: "inf", -math.inf: "-inf"}


def _strict(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else _NONFINITE[value]
    if isinstance(value, dict):
        return {k: _strict(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict(v) for v in value]
    return value


class OutputFormat(StrEnum):
    TABLE = "table"  # the terminal rendering (rich)
    JSON = "json"  # the versioned envelope
    MARKDOWN = "markdown"

    @classmethod
    def choose(cls, as_json: bool = False, markdown: bool = False) -> OutputFormat:
        if as_json:
            return cls.JSON
        if markdown:
            return cls.MARKDOWN
        return cls.TABLE


def envelope(command: str, result: dict[str, Any] | None = None,
             warnings: Sequence[str] = (), error: str | None = None) -> str:
    """The JSON every command prints: `schema_version`, `version` (the tool's, from its package
    metadata), `command`, `result`, `warnings`, `error`; the fields of `result` are repeated at
    the top level (consumers read them there)."""
    body = {"schema_version": SCHEMA_VERSION, "version": version(), "command": command,
            "result": result, "warnings": list(warnings), "error": error}
    return json.dumps(_strict({**(result or {}), **body}), indent=2, allow_nan=False)


@dataclass(frozen=True)
class Renderer(Generic[T]):
    """How one command's result looks in each format it supports."""

    command: str
    record: Callable[[T], dict[str, Any]]  # the JSON `result`
    table: Callable[[T], RenderableType]
    markdown: Callable[[T], str] | None = None

    def render(self, value: T, fmt: OutputFormat, console: Console,
               warnings: Sequence[str] = ()) -> None:
        if fmt is OutputFormat.JSON:
            print(envelope(self.command, self.record(value), warnings))
        elif fmt is OutputFormat.MARKDOWN and self.markdown is not None:
            print(self.markdown(value), end="")
        else:
            console.print(self.table(value))
