"""A message as the user is shown it: bounded, whoever wrote it.

Every line the tool prints on stderr (`error:`, `warning:`, `note:`, `refused:`) and every
`error` and warning of a JSON envelope passes through `bounded`. Much of what those lines say is
relayed from elsewhere: a builder's exception (`trace` with a user's builder), a converter's or
an installer's error line, a worker's last log line. Their length is theirs, not the tool's (a
builder raising a 5 MB message printed 5 MB on one line), so a message longer than `LIMIT` keeps
its start and its end (where a line names its log), and says how much was cut; the whole
message is kept in a log of the store, which the line names.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

# A message this long already holds its reason; a longer one is text relayed from elsewhere.
LIMIT = 600
_TAIL = 160  # kept from the end: where a line names its log or its remedy


def bounded(message: str, limit: int = LIMIT) -> str:
    """`message`, or, past `limit` characters, its start and end with what was cut said (and
    where the whole of it is kept)."""
    if len(message) <= limit:
        return message
    head, tail = message[: limit - _TAIL], message[-_TAIL:]
    cut = len(message) - len(head) - len(tail)
    log = _keep(message)
    where = f"; full text in {log}" if log is not None else ""
    return f"{head} ... ({cut} characters cut{where}) ... {tail}"


def _keep(message: str) -> Path | None:
    """The whole message in the store's logs (by its digest: the same message, one file), or
    None where it cannot be written (a store that is itself the error)."""
    from oracle.errors import OracleUserError
    from oracle.infra import cache_root, in_store

    data = message.encode("utf-8", errors="replace")
    try:
        log = in_store(
            cache_root() / "logs" / "messages" / f"{hashlib.sha256(data).hexdigest()[:16]}.log"
        )
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_bytes(data + b"\n")
    except (OSError, OracleUserError):
        return None
    return log
