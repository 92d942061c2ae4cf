"""The one type of a progress callback: one line for the user while work runs (the command line
shows it as a status on stderr; a quiet run drops it). Every service and the oracle take one."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str], None]


class Notice(str):
    """A progress line that must still be read after the run (an environment rebuilt because
    its files changed): the terminal prints it as a line of its own, not only as the status."""


class Tally(str):
    """Not a line to show: one probe comparison answered, `stored` (read from the result store)
    or `converted` (made now). A piped progress counts them per phase; a status ignores them."""

    STORED = "stored"
    CONVERTED = "converted"


class Routine(str):
    """A routine step of a phase (a record answered for a bundle, a probe of a sweep, a change
    being located): a terminal shows it as the status; piped, the phase it belongs to (what it
    names before its first `: `) is one line with its counts, never a line per step."""
