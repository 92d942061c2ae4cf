"""The one type of a progress callback: one line for the user while work runs (the command line
shows it as a status on stderr; a quiet run drops it). Every service and the oracle take one."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str], None]


class Notice(str):
    """A progress line that must still be read after the run (an environment rebuilt because
    its files changed): the terminal prints it as a line of its own, not only as the status."""
