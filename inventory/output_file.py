"""The file a command writes its answer to (`-o FILE`; repair's `--report FILE`; draft's `-o`).

Checked before the run (`check_outputs`, called by `inventory.terminal.command` for every option
marked `WRITES`), so a run is never spent on an answer that cannot be kept, and written at its end
(`write_file`). It is a regular file or a new name in an existing folder, and nothing else:

- never a file the command reads (`--ignore`, `--fixes`, `--registry`, `--baseline`, a
  `--weights` checkpoint, ...: the same file by device and inode, a hard link included), which
  the answer would overwrite;
- never a symbolic link (a dangling one would create the file where it points; `/dev/stdout` is
  one, to a descriptor that `--json` points at stderr while it runs);
- never a FIFO (opening it waits for a reader, forever), a device or a socket;
- never a folder, and never a name the file system refuses (longer than its 255 bytes).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from inventory.errors import UsageError
from oracle.infra import file_kind

_NEVER_BLOCK = os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True)
class Writes:
    """Marks a command's option (in its `Annotated[...]`) as a file the command writes."""


@dataclass(frozen=True)
class ReadsAfter:
    """Marks an option whose values name a file after `sep` (`--weights BUNDLE=FILE`): a file the
    command reads. An option of type Path needs no mark: every one is read."""

    sep: str


WRITES = Writes()
_ONLY = (
    "the answer is written to a regular file or a new name, never through a link or to a "
    "device or FIFO (without the option it is on standard output)"
)


def check_outputs(
    written: Iterable[tuple[str, Path | None]], read: Iterable[tuple[str, Path]]
) -> None:
    """Each written file (flag, path) can be written and is none of the files read (flag, path),
    nor another written one; else one line naming both."""
    read = list(read)
    taken: list[tuple[str, Path]] = []
    for flag, path in written:
        if path is None:
            continue
        check_output(path, flag)
        for other_flag, other in [*read, *taken]:
            if _same(path, other):
                raise UsageError(
                    f"{flag} {path}: the same file as {other_flag} {other}, which the command "
                    "reads: the answer would overwrite it; write it elsewhere"
                )
        taken.append((flag, path))


def check_output(path: Path, flag: str = "--output") -> None:
    """`path` is a regular file or a new name in a folder that exists, else one line."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        _check_folder(path, flag)
        return
    except OSError as exc:  # a name too long, a loop among its folders, a file as a folder
        raise UsageError(f"{flag} {path}: cannot be written ({exc.strerror or exc})") from None
    if stat.S_ISLNK(info.st_mode):
        raise UsageError(f"{flag} {path}: a symbolic link (to {os.readlink(path)}); {_ONLY}")
    if stat.S_ISDIR(info.st_mode):
        raise UsageError(f"{flag} {path}: a folder, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise UsageError(f"{flag} {path}: not a regular file ({file_kind(info.st_mode)}); {_ONLY}")
    if not os.access(path, os.W_OK):
        raise UsageError(f"{flag} {path}: cannot be written (permission denied)")


def _check_folder(path: Path, flag: str) -> None:
    folder = path.parent
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: no folder {folder}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {path}: cannot write in {folder} (permission denied)")


def _same(path: Path, other: Path) -> bool:
    """Whether two names are one file (a hard link, a symlink to it, another spelling)."""
    try:
        return os.path.samefile(path, other)
    except OSError:  # either is missing: a new name is no file read
        return False


def write_file(path: Path, text: str, flag: str = "--output") -> None:
    """The document written whole, or one line saying why it cannot be. Opened without
    following a link and without blocking, and written only if what was opened is a regular
    file (the path may have changed since `check_output`)."""
    data = (text if text.endswith("\n") else text + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | _NEVER_BLOCK, 0o666)
    except OSError as exc:
        check_output(path, flag)  # what it has become since, in its own words (a link, a FIFO)
        raise UsageError(f"{flag} {path}: cannot write it ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UsageError(f"{flag} {path}: not a regular file ({file_kind(info.st_mode)})")
        os.set_blocking(fd, True)
        os.ftruncate(fd, 0)
        with os.fdopen(fd, "wb", closefd=False) as handle:
            handle.write(data)
    except OSError as exc:
        raise UsageError(f"{flag} {path}: cannot write it ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
