"""Output: one writer per format (`writer_for`, the one switch), one JSON envelope, one writer of
standard output.

Modelled on pip-audit's `_format/`: a command picks a format (`inventory.report.formats`) and
hands its plain result, with its `Renderer`, to that format's writer as a `Document`; nothing
else in a command depends on the format. A new format is one member of `OutputFormat`, one
writer module `inventory/report/<format>_report.py` whose `write(document: Document[Any])`
renders it, and its branch in `writer_for`; a command that has a form in it says so in its
`forms(...)`.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, TypeVar, assert_never

from rich.console import Console, RenderableType

from inventory.output_file import write_file
from inventory.report.document import Document as Document
from inventory.report.document import Renderer as Renderer
from inventory.report.document import Writer, Written
from inventory.report.formats import OutputFormat as OutputFormat
from inventory.report.formats import forms as forms
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


def render(
    renderer: Renderer[T],
    value: T,
    fmt: OutputFormat,
    console: Console,
    warnings: Sequence[str] = (),
    error: str | None = None,
    to: Path | None = None,
) -> None:
    """The document in `fmt`, on standard output (the table through `console`) or, `to`,
    written to that file (the table as plain text at the console's width)."""
    written = writer_for(fmt)(Document(renderer, value, tuple(warnings), error))
    if to is not None:
        text = (
            written
            if isinstance(written, str)
            else _plain(written, console.width, renderer.soft_wrap)
        )
        write_file(to, text)
    elif isinstance(written, str):
        emit(written, end="" if written.endswith("\n") else "\n")
    else:
        # a line a renderer keeps whole (a path) is printed whole, never cut at the width
        console.print(written, soft_wrap=renderer.soft_wrap, crop=False)


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
    # a command without one is refused before the run (its `forms`): a defect, not a usage error
    assert d.renderer.markdown is not None, f"{d.command} has no markdown form"
    from inventory.report.text import for_release_page

    return for_release_page(d.renderer.markdown(d.value), d.renderer.fixes)


def _table(d: Document[Any]) -> Written:
    return d.renderer.table(d.value)


def writer_for(fmt: OutputFormat) -> Writer:
    """The writer of each format: the one switch, exhaustive (`assert_never`: a format without
    a branch fails mypy). A format of its own module is imported only when it is chosen: the
    html writer imports the cyclonedx one and its schema validator, seconds of imports a run in
    another format never pays."""
    match fmt:
        case OutputFormat.TABLE:
            return _table
        case OutputFormat.JSON:
            return _json
        case OutputFormat.MARKDOWN:
            return _markdown
        case OutputFormat.HTML:
            from inventory.report import html_report

            return html_report.write
        case OutputFormat.CYCLONEDX:
            from inventory.report import cyclonedx_report

            return cyclonedx_report.write
        case _:
            assert_never(fmt)


def _plain(renderable: RenderableType, width: int, soft_wrap: bool = False) -> str:
    """A terminal rendering as the text a file holds (no colour codes)."""
    console = Console(width=width, file=io.StringIO(), record=True, markup=False, emoji=False)
    console.print(renderable, soft_wrap=soft_wrap, crop=False)
    return console.export_text()
