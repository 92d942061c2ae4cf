"""Output formats: one choice per run, one renderer per format, one JSON envelope.

Modelled on pip-audit's `OutputFormatChoice`: a command picks a format (the `--json` and
`--markdown` flags, shared by every command that has them) and hands its plain result to that
format's renderer; nothing else in a command depends on the format.
"""

from __future__ import annotations

import hashlib
import importlib
import io
import json
import math
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Generic, TextIO, TypeVar

from rich.console import Console, RenderableType

from inventory.errors import UsageError
from inventory.output_file import write_file
from inventory.summary import Summary
from inventory.user_text import bounded
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
        _document = os.fdopen(
            os.dup(1), "w", encoding=getattr(saved, "encoding", None) or "utf-8", closefd=True
        )
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
    """One member per format. A new format is one member here, the commands it has a form in
    (`FORMS`), and one module, `inventory/report/<value>_report.py`, whose
    `write(document: Document) -> str` renders any command's document (`writer_for` finds it);
    table, json and markdown are written here."""

    TABLE = "table"  # the terminal rendering (rich)
    JSON = "json"  # the versioned envelope
    MARKDOWN = "markdown"
    HTML = "html"  # inventory/report/html_report.py: plan, affected, verify
    CYCLONEDX = "cyclonedx"  # inventory/report/cyclonedx_report.py: scan, plan, affected

    @classmethod
    def choose(
        cls,
        as_json: bool = False,
        markdown: bool = False,
        chosen: str | None = None,
        command: str | None = None,
    ) -> OutputFormat:
        """The one format of a run: `--format`, or its aliases `--json` and `--markdown`; two of
        them together are a usage error (never one silently winning), and so is a format
        `command` has no form in (checked here, before the run)."""
        fmt = cls._chosen(as_json, markdown, chosen)
        if command is not None:
            check_supported(command, fmt)
        return fmt

    @classmethod
    def _chosen(cls, as_json: bool, markdown: bool, chosen: str | None) -> OutputFormat:
        given = [
            flag
            for flag, on in (
                ("--json", as_json),
                ("--markdown", markdown),
                (f"--format {chosen}", chosen is not None),
            )
            if on
        ]
        if len(given) > 1:
            raise UsageError(f"{' and '.join(given)}: give one output format")
        if chosen is not None:
            try:
                return cls(chosen.strip().lower())
            except ValueError:
                raise UsageError(
                    f"--format {chosen}: not a format (one of {', '.join(f.value for f in cls)})"
                ) from None
        if as_json:
            return cls.JSON
        if markdown:
            return cls.MARKDOWN
        return cls.TABLE


TOOL = "inventory"
# the project's root: an input file inside it is named relative to it (no machine path)
_ROOT = Path(__file__).resolve().parent.parent


def envelope(
    command: str,
    result: dict[str, Any] | None = None,
    warnings: Sequence[str] = (),
    error: str | None = None,
    summary: dict[str, Any] | None = None,
    inputs: dict[str, Any] | None = None,
) -> str:
    """The JSON every command prints: `schema_version`, `version` and `tool` (name and version,
    read from the package metadata), `command`, `inputs` (each data file the answer read, with
    its SHA-256), `summary` (counts per level, per bundle its level and top reason; null for a
    command whose answer is not per bundle), `result`, `warnings`, `error`. Those keys and no
    other: the command's answer is under `result` alone, never repeated at the top level. The
    error and warnings are bounded as the lines on stderr are (`inventory.user_text`)."""
    body = {
        "schema_version": SCHEMA_VERSION,
        "version": version(),
        "tool": {"name": TOOL, "version": version()},
        "command": command,
        "inputs": inputs or {},
        "summary": summary,
        "result": result,
        "warnings": [bounded(w) for w in warnings],
        "error": None if error is None else bounded(error),
    }
    return json.dumps(_strict(body), indent=2, allow_nan=False)


def input_files(**files: Path | None) -> dict[str, Any]:
    """name -> {file, sha256} of the data files an answer read: the registry, the fix database,
    the release catalog (always), so two answers can be told to rest on the same inputs."""
    from oracle.catalog import CATALOG_FILE

    out = {}
    for name, path in {**files, "catalog": CATALOG_FILE}.items():
        if path is None or not Path(path).is_file():
            continue
        resolved = Path(path).resolve()
        shown = resolved.relative_to(_ROOT) if resolved.is_relative_to(_ROOT) else Path(path)
        out[name] = {
            "file": str(shown),
            "sha256": hashlib.sha256(resolved.read_bytes()).hexdigest(),
        }
    return out


@dataclass(frozen=True)
class Renderer(Generic[T]):
    """How one command's result looks in each format it supports."""

    command: str
    record: Callable[[T], dict[str, Any]]  # the JSON `result`
    table: Callable[[T], RenderableType]
    markdown: Callable[[T], str] | None = None
    summary: Callable[[T], Summary] | None = None  # per bundle: its level and top reason
    inputs: dict[str, Any] = field(default_factory=dict)  # `input_files(...)`
    # the fix records the answer read (`--fixes`): the markdown links each `#N` as they say
    fixes: Path | None = None
    # the table's lines are never wrapped (each is a record a person copies whole: repair's)
    soft_wrap: bool = False

    def render(
        self,
        value: T,
        fmt: OutputFormat,
        console: Console,
        warnings: Sequence[str] = (),
        error: str | None = None,
        to: Path | None = None,
    ) -> None:
        """The document in `fmt`, on standard output (the table through `console`) or, `to`,
        written to that file (the table as plain text at the console's width)."""
        document = Document(self, value, tuple(warnings), error)
        written = writer_for(fmt)(document)
        if to is not None:
            text = (
                written
                if isinstance(written, str)
                else _plain(written, console.width, self.soft_wrap)
            )
            write_file(to, text)
        elif isinstance(written, str):
            emit(written, end="" if written.endswith("\n") else "\n")
        else:
            # a line a renderer keeps whole (a path) is printed whole, never cut at the width
            console.print(written, soft_wrap=self.soft_wrap, crop=False)


@dataclass(frozen=True)
class Document(Generic[T]):
    """What a writer renders: the command's answer, its renderer (the command's own record,
    table and markdown), and the run's warnings and error."""

    renderer: Renderer[T]
    value: T
    warnings: tuple[str, ...] = ()
    error: str | None = None

    @property
    def command(self) -> str:
        return self.renderer.command

    def record(self) -> dict[str, Any]:
        return self.renderer.record(self.value)

    def summary(self) -> Summary | None:
        return self.renderer.summary(self.value) if self.renderer.summary else None


Written = str | RenderableType


def _json(d: Document[Any]) -> str:
    summary = d.summary()
    return envelope(
        d.command,
        d.record(),
        d.warnings,
        d.error,
        summary.to_json() if summary else None,
        d.renderer.inputs,
    )


def _markdown(d: Document[Any]) -> str:
    # a command without one is refused before the run (`FORMS`): this is a defect, not a usage
    assert d.renderer.markdown is not None, f"{d.command} has no markdown form"
    from inventory.report.text import for_release_page

    return for_release_page(d.renderer.markdown(d.value), d.renderer.fixes)


def _table(d: Document[Any]) -> Written:
    return d.renderer.table(d.value)


_BUILT_IN: dict[OutputFormat, Callable[[Document[Any]], Written]] = {
    OutputFormat.TABLE: _table,
    OutputFormat.JSON: _json,
    OutputFormat.MARKDOWN: _markdown,
}


# The commands each format has a form in (table and json: every command). Stated here, not asked
# of the writer's module, so that a format is refused before the run without importing its writer:
# the html writer imports the cyclonedx one and its schema validator, seconds of imports (17-21 s
# on a loaded machine) spent on a refusal. test_reliability_cli.py holds each writer to it.
FORMS: dict[OutputFormat, frozenset[str]] = {
    OutputFormat.MARKDOWN: frozenset(
        {"affected", "plan", "release-notes", "sweep", "verify", "scan", "bisect", "repair"}
    ),
    OutputFormat.HTML: frozenset({"plan", "affected", "verify"}),
    OutputFormat.CYCLONEDX: frozenset({"scan", "plan", "affected"}),
}


def check_supported(command: str, fmt: OutputFormat) -> None:
    """A format the command has no form in is a usage error, said before the run (no writer
    imported, nothing read or built)."""
    able = FORMS.get(fmt)
    if able is None or command in able:
        return
    raise UsageError(
        f"--format {fmt.value}: {command} has no {fmt.value} form "
        f"(commands with one: {', '.join(sorted(able))})"
    )


def writer_for(fmt: OutputFormat) -> Callable[[Document[Any]], Written]:
    """The writer of a format: built in, or the `write` of inventory/report/<fmt>_report.py."""
    if fmt in _BUILT_IN:
        return _BUILT_IN[fmt]
    module = importlib.import_module(f"inventory.report.{fmt.value}_report")
    return module.write


def _plain(renderable: RenderableType, width: int, soft_wrap: bool = False) -> str:
    """A terminal rendering as the text a file holds (no colour codes)."""
    console = Console(width=width, file=io.StringIO(), record=True, markup=False, emoji=False)
    console.print(renderable, soft_wrap=soft_wrap, crop=False)
    return console.export_text()
