"""The terminal side of every command: consoles, progress lines, the one-line error and exit."""

from __future__ import annotations

import functools
import os
import re
import sys
import threading
import traceback
import typing
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.text import Text

from inventory.errors import USER_ERRORS, ExitCode
from inventory.help import HelpCommand, HelpGroup, split_doc
from inventory.output import document_only, emit, envelope
from inventory.output_file import ReadsAfter, Writes, check_outputs
from inventory.user_text import bounded
from oracle.infra import CATALOG_VAR, Notice, Progress, Routine, Tally, check_all
from oracle.store import location as store_location

if TYPE_CHECKING:
    from typer._click.core import Context as ClickContext  # the click typer vendors

# Bundle names, notes, fix ids and error messages are user text: rich must print them literally
# (no markup, no :emoji: codes), so styles are given as `style=` or `Text`, never as markup.
_LITERAL: dict[str, Any] = {"markup": False, "emoji": False}
err = Console(stderr=True, **_LITERAL)
out = Console(**_LITERAL)
PIPED_WIDTH = 150


def fit_width() -> None:
    """Piped output (CI logs, files) is as wide as COLUMNS says, else a readable 150 instead of
    rich's 80-column default; a terminal is as wide as it is. Read at each answer, so the
    width of this run is the one in force (not the one when the module was imported)."""
    if out.is_terminal:
        return
    columns = os.environ.get("COLUMNS", "")
    out.width = int(columns) if columns.isdigit() and int(columns) > 0 else PIPED_WIDTH


fit_width()
# INVENTORY_DEBUG=1: an internal error also prints its traceback (still exit code 4).
DEBUG_ENV = "INVENTORY_DEBUG"


def fail(message: str, as_json: bool = False, command: str = "") -> None:
    """One line on stderr (and an envelope with `error` in JSON mode), exit code 2."""
    if as_json:
        emit(envelope(command, error=message))
    err.print(labelled("error:", "red", message), highlight=False, soft_wrap=True)
    raise typer.Exit(ExitCode.USAGE)


def labelled(label: str, style: str, message: str) -> Text:
    """`label message` with only the label styled: the message is printed as it is, bounded
    (`inventory.user_text`: what it relays from a builder or a worker may be megabytes)."""
    return Text.assemble((label, style), " ", bounded(message))


def internal_error(exc: Exception, as_json: bool = False, command: str = "") -> None:
    """A defect, not an answer: one line (the traceback only with INVENTORY_DEBUG=1), exit 4."""
    detail = " ".join(str(exc).split())
    message = f"internal error ({type(exc).__name__})" + (f": {detail}" if detail else "")
    if as_json:
        emit(envelope(command, error=message))
    if os.environ.get(DEBUG_ENV, "") not in ("", "0"):
        traceback.print_exception(exc, file=sys.stderr)
    err.print(labelled("error:", "red", message), highlight=False, soft_wrap=True)
    raise typer.Exit(ExitCode.INTERNAL)


# typer's own exits and usage errors. typer 0.29 vendors click (no `click` is installed beside
# it unless another package brings one), so they are named through typer, never click.
_OWN_EXITS = tuple(
    e for e in (typer.Exit, typer.Abort, getattr(typer, "TyperException", None)) if e is not None
)


@contextmanager
def answering(command: str, as_json: bool = False) -> Iterator[None]:
    """Turn any user error raised inside into one line and exit code 2, and anything unexpected
    into one line and exit code 4 (never 1, which is a finding)."""
    try:
        yield
    except USER_ERRORS as exc:
        fail(str(exc), as_json, command)
    except _OWN_EXITS:
        raise  # typer.Exit is a RuntimeError: a command's own exit code, not a defect
    except Exception as exc:
        internal_error(exc, as_json, command)


# `--progress auto|on|off` (every command that reports progress): set while the command line is
# parsed, read when the work starts, back to auto when the command ends
PROGRESS_MODES = ("auto", "on", "off")
_progress_mode = "auto"


def progress_mode(value: str | None) -> str | None:
    """The typer callback of `--progress`: a mode, or one line and exit 2."""
    global _progress_mode
    if value is None:
        return value
    mode = value.strip().lower()
    if mode not in PROGRESS_MODES:
        raise typer.BadParameter(f"{value!r}: one of {', '.join(PROGRESS_MODES)}")
    _progress_mode = mode
    return mode


@contextmanager
def progress(enabled: bool) -> Iterator[Progress]:
    """What the work is doing, on stderr: on a terminal a transient status (the latest line of
    each phase); piped (a CI log, a file) one line per phase with its counts, never a line per
    result. `--progress off` (or `-q`) prints nothing but notices; `--progress on` prints the
    piped lines even on a terminal."""

    def notice(msg: str) -> bool:
        """A Notice (an environment rebuilt) stays on screen, even in a quiet run."""
        if isinstance(msg, Notice):
            err.print(labelled("note:", "yellow", msg), highlight=False, soft_wrap=True)
            return True
        return False

    mode = _progress_mode
    if not enabled or mode == "off":

        def quiet(msg: str) -> None:
            if not isinstance(msg, Tally):
                notice(msg)

        yield quiet
        return
    if mode == "on" or not err.is_terminal:
        lines = PhaseLines(
            lambda line: err.print(line, style="dim", highlight=False, soft_wrap=True)
        )

        def piped(msg: str) -> None:
            if isinstance(msg, Tally):
                lines.tally(msg)
            elif notice(msg):
                pass
            elif isinstance(msg, Routine):
                lines.update(msg)
            else:
                err.print(msg, style="dim", highlight=False)

        try:
            yield piped
        finally:
            lines.close()
        return
    phases = Phases()
    with err.status("starting") as status:

        def spinner(msg: str) -> None:
            # a str status is parsed as markup by rich's spinner whatever the console says
            if not isinstance(msg, Tally) and not notice(msg):
                status.update(phases.update(msg))

        yield spinner


class PhaseLines:
    """Piped progress: one line when a phase of routine steps (`Routine`: a bundle's records, a
    sweep) starts (`sweep 0.4.1->0.4.2: starting, 47 steps`: a phase can take minutes, and a
    reader of a log must see what it waits for), and one when it ends, with how many steps it
    took and how many probe comparisons were read from the store or made now (`parakeet: 14
    steps; 23 probes: 23 stored, 0 converted`). A phase is what a line names before its first
    `: `, when that is short; a longer one (a probe's own label) belongs to the phase in course."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self.write = write
        self.phase: str | None = None
        self.steps = 0
        self.counts = {Tally.STORED: 0, Tally.CONVERTED: 0}
        self._lock = threading.Lock()

    def tally(self, kind: str) -> bool:
        with self._lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
        return False  # never a line of its own

    def update(self, msg: str) -> None:
        head, sep, _ = msg.partition(": ")
        key = _COUNTER.sub("", head) if sep and len(head) <= 40 else None
        with self._lock:
            if key is not None and key != self.phase:
                self._flush()
                self._start(key, head)
            elif self.phase is None:
                self._start(_COUNTER.sub("", head)[:40], head)
            self.steps += 1

    def _start(self, phase: str, head: str) -> None:
        self.phase = phase
        counted = _COUNTER.search(head)  # `[1/47]`: the steps the phase will take
        total = counted.group(0).strip(" []").split("/")[1] if counted else None
        self.write(f"{phase}: starting" + (f", {total} steps" if total else ""))

    def _flush(self) -> None:
        if self.phase is None:
            return
        stored, made = self.counts[Tally.STORED], self.counts[Tally.CONVERTED]
        probes = stored + made
        counts = (
            f"; {probes} probe{'' if probes == 1 else 's'}: {stored} stored, {made} converted"
            if probes
            else ""
        )
        self.write(f"{self.phase}: {self.steps} step{'' if self.steps == 1 else 's'}{counts}")
        self.phase, self.steps = None, 0
        self.counts = {Tally.STORED: 0, Tally.CONVERTED: 0}

    def close(self) -> None:
        with self._lock:
            self._flush()


_COUNTER = re.compile(r"\s*\[\d+/\d+\]")


class Phases:
    """The status of work that runs side by side (environments building while probes convert):
    the latest line of each of the last few phases, a phase being what a line names before its
    first `: ` (an environment, a bundle, a sweep)."""

    def __init__(self, keep: int = 4) -> None:
        self.keep = keep
        self.lines: dict[str, str] = {}
        self._lock = threading.Lock()

    def update(self, msg: str) -> Text:
        phase = _COUNTER.sub("", msg.split(": ", 1)[0])
        with self._lock:
            self.lines.pop(phase, None)
            self.lines[phase] = msg
            while len(self.lines) > self.keep:
                self.lines.pop(next(iter(self.lines)))
            return Text("\n".join(self.lines.values()))


def warn(warnings: Sequence[str]) -> None:
    for warning in warnings:
        err.print(labelled("warning:", "yellow", warning), highlight=False, soft_wrap=True)


def finish(code: ExitCode) -> None:
    if code != ExitCode.OK:
        raise typer.Exit(code)


@contextmanager
def user_catalog(path: object) -> Iterator[None]:
    """`--catalog FILE`: INVENTORY_CATALOG for the command's run (every read of the catalog,
    the processes it starts included), as it was before once it ends."""
    if path is None:
        yield
        return
    from inventory.errors import UsageError

    file = Path(str(path)).expanduser()
    if not file.is_file():
        why = "not a regular file" if file.exists() else "no such file"
        raise UsageError(f"--catalog {path}: {why}")
    before = os.environ.get(CATALOG_VAR)
    os.environ[CATALOG_VAR] = str(file.resolve())
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(CATALOG_VAR, None)
        else:
            os.environ[CATALOG_VAR] = before


def command(app: typer.Typer, name: str, full_name: str = "") -> Callable[[Callable], Callable]:
    """Register a command with its docstring as help (the prose reflowed, its examples and exit
    codes kept line by line: `inventory.help`); whatever escapes it (rendering included) goes
    through `answering`, so no command ends in a traceback. `full_name`: a subcommand's name in
    its JSON envelope (`cache du`)."""

    def register(fn: Callable) -> Callable:
        files = _file_options(fn)

        @functools.wraps(fn)
        def guarded(*args: object, **kwargs: object) -> object:
            fit_width()  # this run's width, whatever an earlier command of this process set
            chosen = kwargs.get("output_format")
            as_json = bool(kwargs.get("as_json", False)) or (
                isinstance(chosen, str) and chosen.strip().lower() == "json"
            )
            try:
                with (
                    document_only() if as_json else nullcontext(),
                    answering(full_name or name, as_json),
                    user_catalog(kwargs.get("catalog")),
                ):
                    check_all()  # every environment variable, before any work
                    files.check(kwargs)  # -o: a file it can write, none it reads, before any work
                    return fn(*args, **kwargs)
            finally:
                progress_mode("auto")  # the next command of this process starts from auto
                store_location.reset()  # and from the environment's store

        text, epilog = split_doc(fn.__doc__)
        bare = _bare_values(fn)
        cls = (
            type(OneValueCommand.__name__, (OneValueCommand,), {"bare_values": bare})
            if bare
            else OneValueCommand
        )
        return app.command(name, help=text, epilog=epilog, cls=cls)(guarded)

    return register


@dataclass(frozen=True)
class FileOptions:
    """A command's options that name files: those it writes (marked `WRITES`) and those it
    reads (every other Path, and the part after `sep` of an option marked `ReadsAfter`), each
    as (parameter, flag, sep)."""

    writes: tuple[tuple[str, str], ...]
    reads: tuple[tuple[str, str, str | None], ...]

    def check(self, values: dict[str, object]) -> None:
        """`check_outputs` on this run's values: before the command's work."""
        read: list[tuple[str, Path]] = []
        for name, flag, sep in self.reads:
            given = values.get(name)
            for value in given if isinstance(given, list | tuple) else [given]:
                if value is None:
                    continue
                text = str(value)
                if sep is not None:
                    text = text.partition(sep)[2]
                if text:
                    read.append((flag, Path(text)))
        written = [(flag, _path(values.get(name))) for name, flag in self.writes]
        check_outputs(written, read)


def _path(value: object) -> Path | None:
    return value if isinstance(value, Path) else None


def _file_options(fn: Callable) -> FileOptions:
    """The file options of a command, from its parameters' annotations (what typer reads)."""
    writes: list[tuple[str, str]] = []
    reads: list[tuple[str, str, str | None]] = []
    for name, hint in typing.get_type_hints(fn, include_extras=True).items():
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        base, *marks = typing.get_args(hint)
        flag = _flag(name, marks)
        if any(isinstance(m, Writes) for m in marks):
            writes.append((name, flag))
            continue
        after = next((m for m in marks if isinstance(m, ReadsAfter)), None)
        if after is not None:
            reads.append((name, flag, after.sep))
        elif _names_a_path(base):
            reads.append((name, flag, None))
    return FileOptions(tuple(writes), tuple(reads))


@dataclass(frozen=True)
class BareValue:
    """Marks an option whose value may be left out (`--verify` alone, or `--verify auto`): given
    bare (last, or before another option) it takes `value`. typer's parser has no option with
    an optional value, so the command class supplies it before parsing."""

    value: str


def _bare_values(fn: Callable) -> dict[str, str]:
    """flag -> the value it takes given bare, for each option of `fn` marked `BareValue`."""
    out: dict[str, str] = {}
    for name, hint in typing.get_type_hints(fn, include_extras=True).items():
        if typing.get_origin(hint) is not typing.Annotated:
            continue
        _base, *marks = typing.get_args(hint)
        bare = next((m for m in marks if isinstance(m, BareValue)), None)
        if bare is not None:
            out[_flag(name, marks)] = bare.value
    return out


def _flag(name: str, marks: list[object]) -> str:
    """How the command line names a parameter: its long flag, or an argument's metavar."""
    for mark in marks:
        if isinstance(mark, typer.models.OptionInfo):
            first = [mark.default] if isinstance(mark.default, str) else []  # typer's first decl
            decls = [*first, *(mark.param_decls or ())]
            longs = [d for d in decls if d.startswith("--")]
            return longs[0] if longs else "--" + name.replace("_", "-")
        if isinstance(mark, typer.models.ArgumentInfo):
            return mark.metavar or name.upper()
    return "--" + name.replace("_", "-")


def _names_a_path(kind: object) -> bool:
    return kind is Path or any(_names_a_path(k) for k in typing.get_args(kind))


class OneValueCommand(HelpCommand):
    """A command whose single-valued option given twice (`-f json -f table`, `-o a -o b`) is a
    usage error: click keeps the last one silently, and which one a script's author meant is
    not for the tool to guess. A repeatable option (`--bundle`) may be repeated, and a flag
    (`--json --json`) means one thing however often it is given."""

    bare_values: dict[str, str] = {}  # flag -> its value when given bare (`BareValue`)

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        args = self._with_bare_values(args)
        given = list(args)  # click's parser consumes the list it is handed
        rest = super().parse_args(ctx, args)
        if ctx.resilient_parsing:  # shell completion of a line still being typed
            return rest
        _, _, order = self.make_parser(ctx).parse_args(args=given)
        seen: set[str | None] = set()
        for param in order:
            single = param.param_type_name == "option" and not (
                getattr(param, "multiple", False)
                or getattr(param, "count", False)
                or getattr(param, "is_flag", False)
            )
            if single and param.name in seen:
                raise typer.BadParameter(
                    "given twice: give it once (the last one would win silently)",
                    ctx=ctx,
                    param=param,
                )
            seen.add(param.name)
        return rest

    def _with_bare_values(self, args: list[str]) -> list[str]:
        """Each option marked `BareValue` given bare (the last word, or followed by another
        option) gets its value, as click's own option with an optional value reads it; what
        follows `--` is left as it is."""
        if not self.bare_values:
            return args
        out: list[str] = []
        for i, arg in enumerate(args):
            if arg == "--":
                return out + args[i:]
            out.append(arg)
            if arg in self.bare_values and (i + 1 == len(args) or args[i + 1].startswith("-")):
                out.append(self.bare_values[arg])
        return out


class OneLineErrorGroup(HelpGroup):
    """The root command group: every usage error of the command line (an unknown command or
    option, a missing argument or value, a bad choice or value, an extra argument) is one line
    on stderr, `error: ...` with click's own suggestion where it has one ("Did you mean
    'plan'?", "Possible options: --to"), and exit 2, instead of typer's usage box; a command
    run with `--json` (or `-f json`) also prints the one error envelope on stdout. A group
    called with nothing (`inventory envs`) still prints its help."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: ClickContext | None = None,
        **extra: Any,
    ) -> ClickContext:
        self._argv = list(args)
        try:
            return super().make_context(info_name, args, parent, **extra)
        except typer.TyperException as exc:
            self._one_line(exc)
            raise

    def invoke(self, ctx: ClickContext) -> object:
        try:
            return super().invoke(ctx)
        except typer.TyperException as exc:
            self._one_line(exc)
            raise

    def _one_line(self, exc: Exception) -> None:
        """A usage error as the project's one line (and the envelope under `--json`); help
        asked for by giving nothing is left to typer."""
        if getattr(exc, "exit_code", None) != ExitCode.USAGE or type(exc).__name__ in _HELP:
            return
        argv = getattr(self, "_argv", [])
        argv = argv[: argv.index("--")] if "--" in argv else argv
        name = next((a for a in argv if not a.startswith("-")), None)
        command = self.commands.get(name) if name else None
        takes_json = command is not None and any(
            "--json" in getattr(p, "opts", ()) for p in command.params
        )
        format_message = getattr(exc, "format_message", None)
        message = " ".join((format_message() if format_message else str(exc)).split())
        fail(message, as_json=takes_json and _asks_json(argv), command=str(name))


def _asks_json(argv: list[str]) -> bool:
    """Whether a command line asks for JSON: `--json`, or `--format json` in any spelling."""
    for i, arg in enumerate(argv):
        if arg == "--json" or arg in ("--format=json", "-fjson"):
            return True
        if arg in ("--format", "-f") and i + 1 < len(argv) and argv[i + 1].strip() == "json":
            return True
    return False


# click's error that prints a command's help when it is called with nothing: not a mistake
_HELP = ("NoArgsIsHelpError",)
