"""One error hierarchy, and the one place that maps errors and outcomes to exit codes.

Every error a user can cause (bad input, a malformed data file, an environment that cannot be
built) is one line on stderr and exit code 2, never a traceback. There are two roots, and the
mapping reads only them: `InventoryError` here, and the oracle's `OracleUserError`
(`oracle/errors.py`; `oracle/` never imports this package). A new user error derives from one of
them; `tests/project/test_error_roots.py` makes every exception class of both packages say which
it is.

Anything else that escapes a command is a defect in inventory, not an answer: one line on stderr,
`error: internal error (<ExceptionType>): <message>` (in `--json` mode also the envelope with
`error`), and exit code 4, so a CI job never reads a crash as a finding (1). Set
`INVENTORY_DEBUG=1` to print the traceback as well.
"""

from __future__ import annotations

from enum import IntEnum

from oracle.errors import OracleUserError


class ExitCode(IntEnum):
    OK = 0
    # a re-export required; `trace --check`: stale; `sweep`, `verify`: an unexplained
    # (unrecorded) change; `scan`: a disagreement with the registry
    FINDING = 1
    USAGE = 2  # usage or configuration error (one line on stderr)
    INCONCLUSIVE = 3  # a run failed or the registry cannot tell; never reported as a pass
    # an unexpected error inside inventory: one line on stderr, never reported as a finding
    INTERNAL = 4
    # unchecked: nothing found that moves, but part of what ships was not checked (a pipeline
    # change answered by the stand-in asset probe alone); never reported as a pass unless the
    # policy accepts it (`accept_unchecked` in inventory/policy.toml)
    UNCHECKED = 5
    # stopped by SIGTERM (128 + 15, the shell's convention): cleaned up like Ctrl-C, no answer
    TERMINATED = 143


class InventoryError(Exception):
    """The root of the inventory's user errors: the request cannot be answered as asked (bad
    input, something the user can fix); the message is one line for the user (exit code 2)."""


class UsageError(InventoryError):
    """An option or argument that cannot be used as given."""


class RegistryError(InventoryError):
    """The registry cannot be used; the message is one line naming the file and the problem."""


class InputFileError(InventoryError):
    """A file the user passes (an ignore file, a baseline) cannot be read or is malformed."""


# Everything a command turns into one line and exit code 2: the two roots, never a list of classes.
USER_ERRORS: tuple[type[Exception], ...] = (InventoryError, OracleUserError)


def exit_for_reexport(level: str, accept_unchecked: bool = False) -> ExitCode:
    """A run's worst re-export level as its exit code; `accept_unchecked`: the policy takes an
    unchecked answer as a pass (the answer says so)."""
    if level == "required":
        return ExitCode.FINDING
    if level == "inconclusive":
        return ExitCode.INCONCLUSIVE
    if level == "unchecked" and not accept_unchecked:
        return ExitCode.UNCHECKED
    return ExitCode.OK
