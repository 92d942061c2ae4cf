"""Output formats: one choice per run, one renderer per format, one JSON envelope.

Modelled on pip-audit's `OutputFormatChoice`: a command picks a format (the `--json` and
`--markdown` flags, shared by every command that has them) and hands its plain result to that
format's renderer; nothing else in a command depends on the format.
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Generic, TextIO, TypeVar

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


# Where the JSON document goes while a command answers in JSON (`document_only`); else stdout.
_document: TextIO | None = None


def emit(text: str, end: str = "\n") -> None:
    """The command's document (a JSON envelope, Markdown): the only writer of standard output."""
    stream = _document if _document is not None else sys.stdout
    stream.write(text + end)
    stream.flush()


@contextmanager
def document_only() -> Iterator[None]:
    """Standard output holds the document and nothing else: for the command's whole run, file
    descriptor 1 and `sys.stdout` are stderr, so what Ray, a library, a worker or a child
    process prints (Ray printed 46 lines of a dead raylet's log before the JSON of a sweep)
    lands on stderr, and `emit` alone writes to the real stdout. In a process of its own the
    redirection is kept to the end (Ray's exit handlers run after the command); in-process (a
    test's runner, whose stdout has no descriptor) only `sys.stdout` is redirected."""
    global _document
    saved = sys.stdout
    try:
        fd = saved.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    if fd == 1:
        saved.flush()
        _document = os.fdopen(os.dup(1), "w", encoding=getattr(saved, "encoding", None)
                              or "utf-8", closefd=True)
        os.dup2(2, 1)
    else:
        _document = saved
    sys.stdout = sys.stderr
    try:
        yield
    finally:
        document, _document = _document, None
        document.flush()
        if fd == 1:
            document.close()  # fd 1 stays stderr: nothing after the document reaches stdout
        else:
            sys.stdout = saved


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
               warnings: Sequence[str] = (), error: str | None = None) -> None:
        if fmt is OutputFormat.JSON:
            emit(envelope(self.command, self.record(value), warnings, error))
        elif fmt is OutputFormat.MARKDOWN and self.markdown is not None:
            emit(self.markdown(value), end="")
        else:
            console.print(self.table(value))
