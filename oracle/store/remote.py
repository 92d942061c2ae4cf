"""The result store's remote tier: results kept in object storage (`s3://BUCKET/PREFIX`) or a
folder named by URL (`file:///PATH`), through fsspec, behind the local store.

Object storage has no rename, so a result is never published by moving a finished folder into
place. A writer puts every file of a result under a prefix of its own,
`results/<name>/<token>/...`, then, last, the manifest `results/<name>/manifest.json`: each
file's size and sha256, the token, and the manifest's own digest. A result without a complete,
matching manifest does not exist: a writer killed before its manifest left objects no reader
follows, and a truncated or edited manifest, a missing or changed file, is a miss (the result is
computed again and published over it). The manifest is created only if absent (S3's
`If-None-Match: *`; a hard link for `file://`), so of two writers of one key the first complete
manifest wins and the other removes its own prefix. A reader verifies every byte it fetches
before the local store takes it in (`store.stored`), and reads within bounds
(`remote_reads.py`: a manifest of at most MAX_MANIFEST_FILES files, sizes known before any byte
is read, ranged reads streamed to disk); a publish streams each file from disk too. Credentials
come from where the cloud's SDK looks (environment, config files, instance metadata); nothing
here reads or prints them.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from oracle.errors import OracleUserError
from oracle.store.remote_reads import (
    CHUNK_BYTES,
    MAX_MANIFEST_BYTES,
    MAX_MANIFEST_FILES,
    MAX_RESULT_BYTES,
    RemoteLimitError,
    fetch_files,
    mib,
    read_small,
)

SCHEMES = ("s3", "file")
MANIFEST = "manifest.json"
FORMAT = 1
SELF_DIGEST = "manifest_sha256"
_TOKEN = re.compile(r"^[0-9a-f]{16}$")


class RemoteStoreError(OracleUserError):
    """The remote tier cannot be used as given (a scheme not served, the extra not installed, a
    bucket that does not exist or cannot be reached): one line for the user, exit 2."""


def one_line(exc: BaseException) -> str:
    """An error of the backend as one line for the user (its type and its words)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:300]


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1024 * 1024), b""):
            h.update(block)
    return h.hexdigest()


def _manifest_digest(body: dict[str, Any]) -> str:
    rest = {k: v for k, v in body.items() if k != SELF_DIGEST}
    return _digest(json.dumps(rest, sort_keys=True, separators=(",", ":")).encode())


def _safe_relative(rel: str) -> bool:
    """A manifest's file name is a relative path that stays in the result's folder (a hostile
    or damaged manifest cannot make a reader write elsewhere)."""
    path = PurePosixPath(rel)
    return (
        bool(rel)
        and not path.is_absolute()
        and ".." not in path.parts
        and "\\" not in rel
        and str(path) == rel
    )


def check_manifest(data: bytes, name: str) -> dict[str, Any] | None:
    """The manifest's content if it is whole and for `name`, else None (a truncated, edited or
    misplaced manifest names no result); RemoteLimitError if it names more files or bytes than
    a result may have (the files counted before any entry is looked at: a huge one costs
    little)."""
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        return None
    if not isinstance(body, dict) or body.get(SELF_DIGEST) != _manifest_digest(body):
        return None
    files = body.get("files")
    if (
        body.get("format") != FORMAT
        or body.get("key") != name
        or not isinstance(files, dict)
        or not _TOKEN.match(str(body.get("token", "")))
    ):
        return None
    if len(files) > MAX_MANIFEST_FILES:
        raise RemoteLimitError(
            f"{name}: its manifest names {len(files)} files, more than the "
            f"{MAX_MANIFEST_FILES} a result may have"
        )
    total = 0
    for rel, entry in files.items():
        if (
            not _safe_relative(rel)
            or not isinstance(entry, dict)
            or not isinstance(entry.get("size"), int)
            or entry["size"] < 0
            or not isinstance(entry.get("sha256"), str)
        ):
            return None
        total += entry["size"]
    if total > MAX_RESULT_BYTES:
        raise RemoteLimitError(
            f"{name}: its manifest names {total} bytes, more than the "
            f"{mib(MAX_RESULT_BYTES)} a result may have"
        )
    return body


@dataclass
class RemoteStore:
    """One remote tier: an fsspec file system and the root every result lies under."""

    url: str
    fs: Any  # an fsspec AbstractFileSystem (fsspec is imported only when a URL is given)
    root: str  # the file system's own path of the URL (`bucket/prefix`, `/path`)
    # set when the run is being stopped: a fetch in progress (in a job's thread) ends at its
    # next read instead of keeping the run from exiting (`stop`)
    stopped: threading.Event = field(default_factory=threading.Event)

    def stop(self) -> None:
        """The run is stopping (SIGTERM, Ctrl-C): every fetch in progress ends at its next read
        (RemoteStopped), and none starts."""
        self.stopped.set()

    def _folder(self, name: str) -> str:
        return f"{self.root}/results/{name}"

    def manifest(self, name: str) -> dict[str, Any] | None:
        """The complete, well-formed manifest of result `name`, or None (absent or damaged);
        RemoteLimitError for one past the limits (its size checked before it is read)."""
        try:
            data = read_small(
                self.fs, f"{self._folder(name)}/{MANIFEST}", MAX_MANIFEST_BYTES, self.stopped
            )
        except FileNotFoundError:
            return None
        return check_manifest(data, name)

    def _standing(self, name: str) -> dict[str, Any] | None:
        """The manifest in place as a publisher sees it: one past the limits is damage, to be
        replaced like any other."""
        try:
            return self.manifest(name)
        except RemoteLimitError:
            return None

    def _whole(self, name: str, body: dict[str, Any], into: Path | None = None) -> bool:
        """Whether every file a manifest names is there, of its size and sha256 (a writer
        killed half-way, an object edited or damaged: not), read into `into` if given."""
        base = f"{self._folder(name)}/{body['token']}"
        try:
            return fetch_files(self.fs, base, body["files"], into, self.stopped)
        except FileNotFoundError:
            return False

    def fetch(self, name: str, into: Path) -> bool:
        """Result `name`'s files into the empty folder `into` (a temp folder the caller removes
        on a miss), each checked against its manifest (size and sha256); False for a miss: no
        complete, matching manifest. RemoteLimitError for a manifest past the limits."""
        body = self.manifest(name)
        return body is not None and self._whole(name, body, into)

    def publish(self, name: str, files: dict[str, Path], replace: bool = False) -> bool:
        """`files` (a relative name -> a local file) as result `name`: every file under a prefix
        of its own, then the manifest. False when a complete manifest was there first (kept:
        the first wins; this writer's prefix is removed), unless `replace` (--no-cache: ours
        replaces it, and the prefix it named is removed). A damaged manifest is replaced. Each
        file is hashed and sent from disk, never held whole in memory."""
        token = secrets.token_hex(8)
        base = f"{self._folder(name)}/{token}"
        ordered = sorted(files.items())
        body: dict[str, Any] = {
            "format": FORMAT,
            "key": name,
            "token": token,
            "files": {
                rel: {"size": path.stat().st_size, "sha256": _file_digest(path)}
                for rel, path in ordered
            },
        }
        body[SELF_DIGEST] = _manifest_digest(body)
        self._send(base, ordered)
        manifest = json.dumps(body, indent=1).encode()
        old = None
        if not replace:
            try:
                self._create(f"{self._folder(name)}/{MANIFEST}", manifest)
                return True
            except FileExistsError:
                old = self._standing(name)
                if old is not None and self._whole(name, old):
                    self._remove(base)
                    return False
        else:
            old = self._standing(name)
        # ours replaces a damaged manifest, or any (--no-cache); the prefix it named goes
        self.fs.pipe_file(f"{self._folder(name)}/{MANIFEST}", manifest)
        if old is not None and old["token"] != token:
            self._remove(f"{self._folder(name)}/{old['token']}")
        return True

    def _send(self, base: str, ordered: list[tuple[str, Path]]) -> None:
        """Each file under `base`: the small ones together, one batched call per CHUNK_BYTES
        (as fast as one call for all, and as bounded in memory as a chunk), a large one streamed
        from disk by the backend."""
        batch: dict[str, bytes] = {}
        held = 0
        for rel, path in ordered:
            size = path.stat().st_size
            if size > CHUNK_BYTES:
                self.fs.put_file(str(path), f"{base}/{rel}")
                continue
            if batch and held + size > CHUNK_BYTES:
                self.fs.pipe(batch)
                batch, held = {}, 0
            batch[f"{base}/{rel}"] = path.read_bytes()
            held += size
        if batch:
            self.fs.pipe(batch)

    def _create(self, path: str, data: bytes) -> None:
        """Write `path` only if it does not exist (FileExistsError if it does), atomically."""
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        if "file" in protocols:
            # a hard link to a finished temp file: both whole and exclusive
            target = Path(path)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}")
            tmp.write_bytes(data)
            try:
                os.link(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
            return
        self.fs.pipe_file(path, data, mode="create")

    def _remove(self, prefix: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.fs.rm(prefix, recursive=True)


def _s3(url: str, rest: str) -> RemoteStore:
    try:
        import s3fs
    except ImportError:
        from oracle.envs.installer import extra_command

        raise RemoteStoreError(
            f"--store {url}: needs the s3 extra (in the checkout: {extra_command('s3')})"
        ) from None
    bucket = rest.split("/", 1)[0]
    if not bucket:
        raise RemoteStoreError(f"--store {url}: name a bucket (s3://BUCKET/PREFIX)")
    # No listing cache: a manifest another writer just created must be seen; no instance
    # cache: each command reads the endpoint and credentials afresh.
    fs = s3fs.S3FileSystem(use_listings_cache=False, skip_instance_cache=True)
    try:
        fs.call_s3("head_bucket", Bucket=bucket)
    except FileNotFoundError:
        raise RemoteStoreError(f"--store {url}: no bucket {bucket}") from None
    except PermissionError:
        raise RemoteStoreError(
            f"--store {url}: access to bucket {bucket} denied (credentials "
            "come from the environment or the AWS config files)"
        ) from None
    except Exception as exc:  # noqa: BLE001 - botocore's errors (no credentials, no endpoint)
        raise RemoteStoreError(
            f"--store {url}: cannot reach bucket {bucket}: {one_line(exc)}"
        ) from None
    return RemoteStore(url, fs, rest.rstrip("/"))


def _file(url: str, rest: str) -> RemoteStore:
    from fsspec.implementations.local import LocalFileSystem

    root = Path(rest)
    if not root.is_absolute():
        raise RemoteStoreError(
            f"--store {url}: a file:// URL names an absolute path (file:///PATH)"
        )
    try:
        root.mkdir(parents=True, exist_ok=True)
        if not os.access(root, os.W_OK):
            raise PermissionError("not writable")
    except OSError as exc:
        raise RemoteStoreError(f"--store {url}: cannot be a store ({one_line(exc)})") from None
    return RemoteStore(url, LocalFileSystem(auto_mkdir=True), str(root).rstrip("/") or "/")


def connect(url: str) -> RemoteStore:
    """The remote tier `url` names, checked reachable; RemoteStoreError (one line) if not."""
    scheme, _, rest = url.partition("://")
    if scheme.lower() not in SCHEMES:
        raise RemoteStoreError(
            f"--store {url}: a store is a local path, file:///PATH or "
            f"s3://BUCKET/PREFIX, not {scheme}://"
        )
    try:
        import fsspec  # noqa: F401 - only to say which extra is missing
    except ImportError:
        from oracle.envs.installer import extra_command

        raise RemoteStoreError(
            f"--store {url}: needs the s3 extra (in the checkout: {extra_command('s3')})"
        ) from None
    return _s3(url, rest) if scheme.lower() == "s3" else _file(url, rest)
