"""Running the command line from a test: in-process by default, a real process where it matters.

`invoke` runs the typer app inside the test process with typer's `CliRunner`: the same code path
as `python -m inventory.cli` (argument parsing, `answering`, the renderers, the exit code), without
a new interpreter per call. It is what most tests use.

`spawn` starts `python -m inventory.cli` as a process, for what only a process shows: a signal
(SIGTERM, Ctrl-C), the exit status a shell sees, a worker outliving its parent, the bytes a
terminal gets. A test says which it needs by calling one or the other.

Both return a `Ran` (`returncode`, `stdout`, `stderr`), so a test reads the same either way.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Ran:
    args: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


def invoke(*args: str, **env: str | None) -> Ran:
    """The CLI in this process, with `env` set for the call only (None: unset for the call) and
    the working directory the repository root (as the subprocess runs had it)."""
    from typer.testing import CliRunner

    from inventory.cli import app

    handler = signal.getsignal(signal.SIGTERM)  # the app installs its own; give ours back
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        result = CliRunner().invoke(
            app, list(args), env=env, catch_exceptions=False, prog_name="inventory"
        )
    finally:
        os.chdir(cwd)
        signal.signal(signal.SIGTERM, handler)
    return Ran(tuple(args), int(result.exit_code), result.stdout, result.stderr)


def spawn(*args: str, **env: str) -> Ran:
    """`python -m inventory.cli ARGS` as its own process, in the repository root."""
    proc = subprocess.run(
        [sys.executable, "-m", "inventory.cli", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, **env},
    )
    return Ran(tuple(args), proc.returncode, proc.stdout, proc.stderr)


# A run a test signals is started as a terminal's foreground run is: a shell's background job
# (`cmd &`, nohup) ignores SIGINT, its children inherit that, and Python then installs no Ctrl-C
# handler (KeyboardInterrupt), so an interrupted run would go on to its answer.
_WITH_CTRL_C = (
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('inventory.cli', run_name='__main__', alter_sys=True)"
)


def start(*args: str, **env: str) -> subprocess.Popen[str]:
    """`python -m inventory.cli ARGS` started and left running (to be signalled), with Python's
    Ctrl-C handler however the suite itself was started."""
    return subprocess.Popen(
        [sys.executable, "-c", _WITH_CTRL_C, *args],
        cwd=ROOT,
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **env},
    )


def one_line(proc: Ran) -> str:
    """The one line a refused run prints on stderr (never a traceback)."""
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def one_clean_line(proc: Ran) -> str:
    """`one_line`, and no traceback on stdout either."""
    assert "Traceback" not in proc.stdout, proc.stdout
    return one_line(proc)


def refused(proc: Ran) -> str:
    """The one line of a run refused as the user's error (exit 2)."""
    from inventory.errors import ExitCode

    assert proc.returncode == ExitCode.USAGE, (proc.returncode, proc.stderr)
    return one_line(proc)
