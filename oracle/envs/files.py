"""What an environment holds, file by file: recorded when it is built, checked when it is reused.

Every installed distribution lists its files with their sha256 in its RECORD. A build reads each
RECORD, hashes every file it lists and compares: a file that differs was damaged before it got
here (in uv's cache, whose files an environment shares by hard link), and the builder installs
that distribution again. What it found is then recorded beside the manifest
(`inventory-env-files.json`: per file its size, modification time and sha256), and the manifest
itself keeps each distribution's version and the sha256 of its RECORD, and the sha256 of that
table, so the table cannot be edited unseen.

Checking a reused environment costs a stat per file: a file whose size and modification time
are as recorded is taken as intact (an edit changes them); any other is hashed again, and one
whose content differs, or that is gone, makes the environment damaged. Compiled bytecode
(`__pycache__`) is not recorded: the interpreter checks it against its source and rebuilds it.

A build's check can go by the files' stat too: uv installs by hard link from its cache, so an
install from a warm cache holds the very files (device and inode) an earlier build hashed. Their
sha256 is kept between processes in a table beside uv's cache (`known`: device, inode, size and
modification time to sha256); a file whose four are in it is not read again (the shared torch's
12,000 files were 2.5 s of every build of it). An edit changes the modification time, and a
file installed by copy has an inode of its own: either is hashed again.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path

from oracle.infra.atomic import write_text_atomic

FILES = "inventory-env-files.json"
_CHUNK = 1 << 20
# (device, inode, size, mtime) -> sha256: a file hard-linked into several environments built in
# one process is read once
_HASHED: dict[tuple[int, int, int, int], str] = {}
_HASHED_LOCK = threading.Lock()


# entries kept in a table of `known` sha256 at most: beyond, only a build's own are kept
_KNOWN_LIMIT = 200_000


def _stat_key(stat: os.stat_result) -> str:
    return f"{stat.st_dev}:{stat.st_ino}:{stat.st_size}:{stat.st_mtime_ns}"


def _read_known(table: Path) -> dict[str, str]:
    try:
        data = json.loads(table.read_text())
    except (OSError, ValueError):
        return {}  # none yet, or unreadable: every file is hashed
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, str)}


def _write_known(table: Path, entries: dict[str, str]) -> None:
    with contextlib.suppress(OSError):  # a speed-up, never needed
        write_text_atomic(table, json.dumps(entries, separators=(",", ":")))


def sha256_file(path: Path, stat: os.stat_result | None = None) -> str:
    stat = stat or path.stat()
    key = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
    with _HASHED_LOCK:
        known = _HASHED.get(key)
    if known is not None:
        return known
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(_CHUNK):
            h.update(chunk)
    digest = h.hexdigest()
    with _HASHED_LOCK:
        _HASHED[key] = digest
    return digest


def _record_hex(value: str) -> str | None:
    """RECORD's `sha256=<urlsafe base64>` as hex; None for another algorithm or none."""
    algorithm, _, encoded = value.partition("=")
    if algorithm != "sha256" or not encoded:
        return None
    try:
        return base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).hex()
    except ValueError:
        return None


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    record_sha256: str  # of its RECORD file
    files: int


@dataclass(frozen=True)
class Snapshot:
    """An environment's installed files as found at build time."""

    distributions: tuple[Distribution, ...]
    files: dict[str, tuple[int, int, str]]  # path under the environment -> size, mtime, sha256
    damaged: dict[str, tuple[str, ...]]  # distribution -> files whose sha256 is not RECORD's

    def manifest_part(self, files_sha256: str) -> dict:
        return {
            "distributions": {
                d.name: {"version": d.version, "record_sha256": d.record_sha256, "files": d.files}
                for d in self.distributions
            },
            "files_sha256": files_sha256,
        }


def _metadata(dist_info: Path) -> tuple[str, str]:
    name = version = ""
    try:
        for line in (dist_info / "METADATA").read_text(errors="replace").splitlines():
            if not line.strip():
                break
            key, _, value = line.partition(":")
            if key == "Name":
                name = value.strip()
            elif key == "Version":
                version = value.strip()
    except OSError:
        pass
    if not name:  # <name>-<version>.dist-info
        name, _, version = dist_info.name.removesuffix(".dist-info").partition("-")
    return name.lower().replace("_", "-"), version


def snapshot(root: Path, sites: list[Path], known: Path | None = None) -> Snapshot:
    """Every file the distributions in `sites` (folders under `root`) list in their RECORDs,
    hashed and compared with what the RECORD says; with `known`, a table of the sha256 of files
    by their stat, read first and written back with what was hashed."""
    root = root.resolve()
    table = _read_known(known) if known is not None else {}
    hashed: dict[str, str] = {}
    dists: list[Distribution] = []
    files: dict[str, tuple[int, int, str]] = {}
    damaged: dict[str, tuple[str, ...]] = {}
    # paths as strings, not Path objects: for the 12,000 files of torch, pathlib's parsing
    # was most of a check whose sha256 came from the table
    prefix = str(root) + os.sep
    for site in sites:
        site = site.resolve()
        for record in sorted(site.glob("*.dist-info/RECORD")):
            name, version = _metadata(record.parent)
            count = 0
            bad: list[str] = []
            for line in record.read_text(errors="replace").splitlines():
                path_text, _, rest = line.partition(",")
                if not path_text:
                    continue
                full = os.path.normpath(os.path.join(site, path_text))
                rel = full[len(prefix) :]
                if not full.startswith(prefix) or "__pycache__" in rel.split(os.sep):
                    continue  # bytecode is the interpreter's; never outside the environment
                try:
                    stat = os.stat(full)
                except OSError:
                    bad.append(rel)
                    continue
                key = _stat_key(stat)
                digest = table.get(key) or sha256_file(Path(full), stat)
                hashed[key] = digest
                expected = _record_hex(rest.partition(",")[0])
                if expected is not None and expected != digest:
                    bad.append(rel)
                files[rel] = (stat.st_size, stat.st_mtime_ns, digest)
                count += 1
            dists.append(Distribution(name, version, sha256_file(record), count))
            if bad:
                damaged[name] = tuple(bad)
    if known is not None and not damaged and not hashed.keys() <= table.keys():
        # a damaged file's sha256 is never kept: its distribution is installed again
        kept = {**table, **hashed} if len(table) + len(hashed) <= _KNOWN_LIMIT else hashed
        _write_known(known, kept)
    return Snapshot(tuple(sorted(dists, key=lambda d: d.name)), files, damaged)


def record(root: Path, snap: Snapshot) -> dict:
    """Write the file table beside the manifest; the manifest's part (distributions and the
    table's sha256)."""
    text = json.dumps({k: list(v) for k, v in sorted(snap.files.items())}, separators=(",", ":"))
    write_text_atomic(root / FILES, text)
    return snap.manifest_part(hashlib.sha256(text.encode()).hexdigest())


def changed(root: Path, manifest: dict) -> list[str]:
    """What differs from the recorded files of the environment at `root` (empty: intact). An
    environment built before files were recorded has nothing to check against: empty too."""
    expected = manifest.get("files_sha256")
    if not isinstance(expected, str):
        return []
    try:
        raw = (root / FILES).read_bytes()
    except OSError:
        return [f"{FILES} is missing"]
    if hashlib.sha256(raw).hexdigest() != expected:
        return [f"{FILES} does not match the manifest"]
    try:
        table = json.loads(raw)
    except ValueError:
        return [f"{FILES} cannot be read"]
    problems = []
    for rel, (size, mtime, digest) in table.items():
        path = root / rel
        try:
            stat = path.stat()
        except OSError:
            problems.append(f"{rel} is missing")
            continue
        if stat.st_size == size and stat.st_mtime_ns == mtime:
            continue
        if stat.st_size != size or sha256_file(path, stat) != digest:
            problems.append(f"{rel} changed")
    return problems
