"""What the driver says of an exception a Ray call raised, in one line a user can act on.

Ray raises a node's exception on the driver as a `RayTaskError` whose text is the whole remote
traceback, starting with a line that only names the actor's method and process
(`ray::NodeAgent.run() (pid=..., ip=...)`). The exception the node raised travels with it as
`cause`, and the traceback's last frame says where: the line is built from those (this module
never imports ray: it reads what Ray sets)."""

from __future__ import annotations

import re
from pathlib import Path

LIMIT = 400  # a line, not a traceback

# a traceback's frame line: `  File "/x/oracle/executors/ray_node.py", line 12, in run`
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)', re.M)
_OWN = Path(__file__).resolve().parents[2]  # the folder holding the oracle package


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or [""])[0]


def _raw_args(exc: BaseException) -> bool:
    """The exception's text starts with its bare arguments: Ray builds some of its own errors
    (`OutOfDiskError` of an object it could not store) from the object's id, owner and call
    site, and says what happened only after them."""
    return len(exc.args) > 1 and str(exc).startswith(BaseException.__str__(exc))


def _message(exc: BaseException) -> str:
    """The exception's meaningful line: its first, past its bare arguments where it opens with
    them."""
    text = str(exc)
    if _raw_args(exc):
        text = text[len(BaseException.__str__(exc)) :]
    return _first_line(text)


def _where(traceback: str) -> str:
    """The innermost frame of a remote traceback, its file relative to the tool's own folder
    when it is one of the tool's (a node's checkout may lie elsewhere: its package path is
    what locates it)."""
    frames = list(_FRAME.finditer(traceback))
    if not frames:
        return ""
    last = frames[-1]
    file = last["file"]
    parts = Path(file).parts
    for top in ("oracle", "inventory"):
        if top in parts:
            # the last occurrence: a checkout named `oracle` above the package stays out
            at = len(parts) - 1 - parts[::-1].index(top)
            file = str(Path(*parts[at:]))
            break
    return f"{file}:{last['line']} in {last['func']}"


def remote_error(exc: BaseException) -> str:
    """One line for an exception raised by a Ray call: for a node's own exception (a
    `RayTaskError`), its type, its message and where it was raised; for any other (an actor
    that died, a node lost), its first line, or, for one of Ray's errors whose text opens with
    its bare arguments (an object's id and owner), its type and the line that says what
    happened."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, BaseException) and cause is not exc:
        message = _message(cause)
        said = f"{type(cause).__name__}: {message}" if message else type(cause).__name__
        where = _where(str(exc))  # the remote traceback: Ray's text of the error
        line = f"{said} (at {where})" if where else said
    else:
        message = _message(exc)
        line = f"{type(exc).__name__}: {message}" if _raw_args(exc) and message else message
        line = line or type(exc).__name__
    return line if len(line) <= LIMIT else line[: LIMIT - 3] + "..."
