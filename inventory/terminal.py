"""The terminal side of every command: consoles, progress lines, the one-line error and exit."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

import typer
from rich.console import Console

from inventory.errors import USER_ERRORS, ExitCode
from inventory.output import envelope

err = Console(stderr=True)
# Piped output (CI logs, files) gets a readable width instead of rich's 80-column default.
out = Console() if Console().is_terminal else Console(width=150)

Progress = Callable[[str], None]


def fail(message: str, as_json: bool = False, command: str = "") -> None:
    """One line on stderr (and an envelope with `error` in JSON mode), exit code 2."""
    if as_json:
        print(envelope(command, error=message))
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(ExitCode.USAGE)


@contextmanager
def answering(command: str, as_json: bool = False) -> Iterator[None]:
    """Turn any user error raised inside into one line and exit code 2."""
    try:
        yield
    except USER_ERRORS as exc:
        fail(str(exc), as_json, command)


@contextmanager
def progress(enabled: bool) -> Iterator[Progress]:
    """A one-line status on stderr while environments build and probes convert (plain lines
    when stderr is not a terminal)."""
    if not enabled or not err.is_terminal:
        yield lambda msg: err.print(f"[dim]{msg}[/dim]", highlight=False) if enabled else None
        return
    with err.status("starting") as status:
        yield lambda msg: status.update(msg)


def warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False, soft_wrap=True)


def finish(code: ExitCode) -> None:
    if code != ExitCode.OK:
        raise typer.Exit(code)


def paragraphs(doc: str | None) -> str:
    """A docstring as help text: the lines of each paragraph joined, so `--help` wraps them at
    the terminal's width instead of breaking mid-sentence where the source did."""
    parts = [" ".join(p.split()) for p in (doc or "").strip().split("\n\n")]
    return "\n\n".join(p for p in parts if p)


def command(app: typer.Typer, name: str) -> Callable[[Callable], Callable]:
    """Register a command with its docstring as reflowed help."""

    def register(fn: Callable) -> Callable:
        return app.command(name, help=paragraphs(fn.__doc__))(fn)

    return register
