"""Reading a file the tool is given as input: a regular file, of bounded size, never blocking.

`plan --baseline /dev/zero` once grew to 21 GB before the OOM killer ended it, and a FIFO blocked
forever. Every data file and user file is read here: opened without blocking (a FIFO with no
writer then opens at once), refused unless it is a regular file, and refused past a size cap,
with one line naming the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

# The largest data file the project ships is recipes.toml (~250 kB); a plan JSON of every bundle
# is a few MB. 64 MiB is far above any real input and far below what hurts the machine.
MAX_INPUT_BYTES = 64 * 1024 * 1024


def regular_file(path: Path, error: type[Exception]) -> os.stat_result:
    """The stat of `path` if it is a regular file (after symlinks), else `error`, one line."""
    try:
        info = path.stat()
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{path}: not a regular file ({file_kind(info.st_mode)})")
    return info


def read_bytes(path: Path, error: type[Exception], limit: int = MAX_INPUT_BYTES) -> bytes:
    """The file's bytes: a regular file of at most `limit` bytes, else `error`, one line."""
    try:
        # O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise error(f"{path}: not a regular file ({file_kind(info.st_mode)})")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > limit:
            raise error(
                f"{path}: {info.st_size} bytes, more than the {_mib(limit)} an input file may have"
            )
        try:
            data = handle.read(limit + 1)  # a file that grows while read is still capped
        except OSError as exc:
            raise error(f"{path}: cannot read: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise error(f"{path}: more than the {_mib(limit)} an input file may have")
    return data


def read_text(path: Path, error: type[Exception], limit: int = MAX_INPUT_BYTES) -> str:
    data = read_bytes(path, error, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None


def _mib(limit: int) -> str:
    return f"{limit / (1024 * 1024):g} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"


def file_kind(mode: int) -> str:
    """What a file that is not a regular file is, in words (`a FIFO`)."""
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a file"
