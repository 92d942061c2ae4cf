"""What a writer renders: a command's `Renderer` (how its result looks in each form it has) and
the `Document` of one run (the result, its renderer, the run's warnings and error). Every writer
takes a `Document`; the JSON writer serialises `Document.record()`, and the HTML and CycloneDX
writers read that same record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from rich.console import RenderableType

from inventory.report.formats import BASIC, OutputFormat
from inventory.summary import Summary

T = TypeVar("T")

# what a writer gives: text for standard output or a file, or a rich renderable for the terminal
Written = str | RenderableType


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
    # the formats the command has a form in (`forms(...)`), the ones `--format` may choose
    forms: frozenset[OutputFormat] = BASIC

    def __post_init__(self) -> None:
        # a command stating a markdown form has a markdown renderer: a defect otherwise
        if OutputFormat.MARKDOWN in self.forms and self.markdown is None:
            raise ValueError(f"{self.command} states a markdown form and has no markdown renderer")


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
        """The command's answer as the JSON envelope holds it under `result`."""
        return self.renderer.record(self.value)

    def summary(self) -> Summary | None:
        return self.renderer.summary(self.value) if self.renderer.summary else None


# the signature of every format's writer (inventory.output.writer_for)
Writer = Callable[[Document[Any]], Written]
