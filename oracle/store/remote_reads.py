"""Reading the remote tier within bounds: what a result may hold there, and its files fetched in
ranged reads streamed to disk.

A manifest or an object in a bucket is data from elsewhere: a 3 GB object was once read whole
into memory before its size was compared with the manifest's. Here the size of everything is
known before a byte of it is read: the manifest's from its metadata (`info`), every file's from
one listing of the result's prefix (one paginated call on S3, not a request per file), each
compared with its limit and with the manifest. A file is then read in ranges of at most
`CHUNK_BYTES`, never past the size the manifest names (an object that grew since the listing
cannot make a reader take more), hashed as it is written; small files are read together, one
batched call per `CHUNK_BYTES`. A run being stopped (SIGTERM, Ctrl-C) ends a fetch at its next
range (`Stop`).
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oracle.errors import OracleUserError

MiB = 1024 * 1024
# A manifest names a result's files: the largest result stored today has 26 files and a
# manifest of 4 kB; a whole-program check's part holds a file or a few per region. Far above
# either, far below what stalls a run (a manifest of 20,000 files once kept one for over 600 s).
MAX_MANIFEST_FILES = 4096
MAX_MANIFEST_BYTES = 4 * MiB
# A result's files together: the largest stored today are tens of MB, a whole-program part a
# bundle's asset (hundreds of MB); what a manifest may make a reader write to disk.
MAX_RESULT_BYTES = 16 * 1024 * MiB
# One ranged read asks for at most this (and a batch of small files for this in all).
CHUNK_BYTES = 8 * MiB
_BATCH_FILES = 256  # small files per batched call


class RemoteLimitError(OracleUserError):
    """A manifest or object of the remote tier past its limit: its result is not fetched (one
    line, the result is computed here and published over it)."""


class RemoteStopped(Exception):
    """The run is being stopped (SIGTERM, Ctrl-C): a fetch in progress ends at its next read."""


def mib(size: int) -> str:
    return f"{size / MiB:g} MiB"


def check_size(what: str, size: Any, limit: int) -> int:
    """`size` (from a listing or the metadata) if it is a size within `limit`, else
    RemoteLimitError."""
    if not isinstance(size, int) or size < 0:
        raise RemoteLimitError(f"{what}: no size in its metadata")
    if size > limit:
        raise RemoteLimitError(f"{what}: {size} bytes, more than the {mib(limit)} allowed")
    return size


def read_small(fs: Any, path: str, limit: int, stop: threading.Event) -> bytes:
    """The object at `path`, checked within `limit` by its metadata before it is read, then read
    as one range that stops past the limit (it may have grown since). FileNotFoundError if
    absent."""
    info = fs.info(path)
    if info.get("type") != "file":
        raise FileNotFoundError(path)  # a folder or a special file is no manifest
    check_size(path, info.get("size"), limit)
    if stop.is_set():
        raise RemoteStopped(path)
    data = bytes(fs.cat_file(path, start=0, end=limit + 1))  # s3fs: not positional
    if len(data) > limit:
        raise RemoteLimitError(f"{path}: grew past the {mib(limit)} allowed while it was read")
    return data


def sizes_under(fs: Any, base: str) -> dict[str, int]:
    """Every regular object under `base` by its path relative to it, with its size: one listing
    (paginated by the backend), never a request per file."""
    found = fs.find(base, detail=True)
    out = {}
    for path, info in found.items():
        if info.get("type") == "file" and str(path).startswith(base + "/"):
            size = info.get("size")
            if isinstance(size, int):
                out[str(path)[len(base) + 1 :]] = size
    return out


def _ranges(files: dict[str, int]) -> Iterator[list[tuple[str, int, int]]]:
    """The reads that fetch `files` (relative name -> size): (name, start, end) ranges, grouped
    into batches of at most CHUNK_BYTES and _BATCH_FILES; a large file is a batch per range."""
    batch: list[tuple[str, int, int]] = []
    held = 0
    for rel, size in files.items():
        if size > CHUNK_BYTES:
            for start in range(0, size, CHUNK_BYTES):
                yield [(rel, start, min(size, start + CHUNK_BYTES))]
            continue
        if batch and (held + size > CHUNK_BYTES or len(batch) >= _BATCH_FILES):
            yield batch
            batch, held = [], 0
        batch.append((rel, 0, size))
        held += size
    if batch:
        yield batch


def fetch_files(
    fs: Any, base: str, files: dict[str, dict[str, Any]], into: Path | None, stop: threading.Event
) -> bool:
    """The files a manifest names (relative name -> its size and sha256), read from under
    `base` into the folder `into` (None: only checked), each checked against its size and
    sha256; False at the first one missing or different (what was written stays in `into`, the
    caller's temp folder)."""
    want = {rel: int(entry["size"]) for rel, entry in files.items()}
    listed = sizes_under(fs, base) if want else {}
    if any(listed.get(rel) != size for rel, size in want.items()):
        return False  # a file gone, or not the size the manifest names: nothing read
    hashes = {rel: hashlib.sha256() for rel in want}
    if into is not None:
        for rel in want:  # an empty file is made too
            (into / rel).parent.mkdir(parents=True, exist_ok=True)
            (into / rel).write_bytes(b"")
    for batch in _ranges({rel: size for rel, size in want.items() if size}):
        if stop.is_set():
            raise RemoteStopped(base)
        got = fs.cat_ranges(
            [f"{base}/{rel}" for rel, _, _ in batch],
            [start for _, start, _ in batch],
            [end for _, _, end in batch],
            on_error="return",
        )
        for (rel, start, end), data in zip(batch, got, strict=True):
            if isinstance(data, FileNotFoundError):
                return False
            if isinstance(data, BaseException):
                raise data  # a failing backend is not a miss
            if len(data) != end - start:  # shrunk since the listing, or a range not kept
                return False
            hashes[rel].update(data)
            if into is not None:  # ranges of one file come in order: appended
                with (into / rel).open("ab") as handle:
                    handle.write(data)
    return all(hashes[rel].hexdigest() == files[rel]["sha256"] for rel in want)
