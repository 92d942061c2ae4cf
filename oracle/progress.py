"""The one type of a progress callback: one line for the user while work runs (the command line
shows it as a status on stderr; a quiet run drops it). Every service and the oracle take one."""

from __future__ import annotations

from collections.abc import Callable

Progress = Callable[[str], None]
