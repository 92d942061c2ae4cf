"""The result store: where a probe comparison's result and evidence live, keyed by everything
that can change them.

A result is keyed by the probe spec, both sides' exact package versions and the oracle's own
code; it is built in a temp folder and renamed into place, so a reader never sees half of one and
two processes can share the store. Every evidence file's sha256 is recorded in `result.json`, and
`result.json`'s own content is digested too, so a damaged or edited entry is detected and
recomputed, never trusted. Paths inside `result.json` are relative to its folder, so the store
can move. A run holds a lock on each temp folder it builds in (`locks/`), and `cache prune`
removes only temp folders whose lock it can take.

When `--store` names a URL, a remote tier stands behind this store (`oracle/store/remote.py`):
a result missing here is fetched from it, verified, and taken in as if made here (`stored`); a
result made here is published to it once in place (`install`). What a command will read next
is asked for as a set (`stored_all`: a batch it dispatches, a sweep's stored results) and
fetched several at a time, each as `stored` fetches one. The local store's code is the same
either way.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import json
import os
import secrets
import shutil
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any, TypeVar

from oracle.catalog.releases import RunFault, base_version
from oracle.compare.results import ProbeResult, from_json, to_json
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.infra.paths import cache_root, in_store, safe_name, store_root
from oracle.store import location as store_location
from oracle.store.remote import one_line
from oracle.store.remote_reads import RemoteStopped

# The oracle's code a result depends on (relative to the oracle package), beside the construct
# modules (the probe builders).
_ORACLE = Path(__file__).resolve().parents[1]
_CODE_FILES = (
    "workers/probe_worker.py",
    "workers/worker_io.py",
    "workers/probes.py",
    "workers/asset_probe.py",
    "compare/normalisation.py",
    "compare/stats.py",
    "executors/comparison.py",
    "compare/results.py",
    "store/result_store.py",
    "infra/checkpoint.py",
)
RESULT_FILE = "result.json"
# Beside result.json: each evidence file's size and modification time when it was last hashed
# and found intact (`_verified`); never evidence itself.
VERIFIED = ".verified.json"
# Beside the results folder (not in it, which holds results and temp folders only): one lock
# file per temp folder a live run builds in.
LOCKS = "locks"
RECORD_DIGEST = "record_sha256"
# Results taken in from the remote tier at once (`stored_all`). A fetch waits on the network for
# most of its time (the manifest's metadata, the manifest, one listing, then its files), so a
# few in flight hide each other's round trips; each holds a temp folder, its lock and up to one
# batch of reads in memory (`remote_reads.CHUNK_BYTES`), which bounds them.
FETCHES_AT_ONCE = 8
T = TypeVar("T")


class StoreError(RunFault):
    """The result store cannot be written (read-only, not a folder): one line for the user."""


@functools.cache
def code_digest() -> str:
    """Results depend on the oracle's own code as much as on the converter: key on it too.
    Computed once per process (the files do not change under a running process)."""
    h = hashlib.sha256()
    for path in [_ORACLE / name for name in _CODE_FILES] + sorted(
        (_ORACLE / "constructs").glob("*.py")
    ):
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def results_root() -> Path:
    return store_root() / "results"


def results_folder() -> Path:
    """The store's results folder, checked to lie in the store once per store (resolving a path
    is a system call per component, and a warm plan names a result path about a thousand
    times). A name put under it is one component (`safe_name`, a digest), so it stays inside;
    `building` checks every folder a result is built in all the same before writing."""
    return _checked_results(cache_root(), store_root())


@functools.lru_cache(maxsize=16)
def _checked_results(cache: Path, store: Path) -> Path:
    # keyed by both resolved roots: a changed INVENTORY_CACHE or INVENTORY_STORE is checked
    # afresh; a refusal is not remembered (an exception is never cached)
    return in_store(store / "results")


def env_identity(env: Env) -> dict[str, str]:
    """The packages an environment holds, as a result records them (evidence, not a key)."""
    keep = ("coreai-torch", "coreai-core", "torch", "numpy")
    return {k: env.packages.get(k, "?") for k in keep}


def key_identity(env: Env) -> dict[str, str]:
    """What a stored result is keyed by of an environment: its catalog pins (the folder name
    digests a re-pinned core, extra or torch), the same built or not, so that a run finds what
    is stored (here or in the remote tier) without building the environment first. The
    packages a resolution picked (numpy) are recorded in the result, not keyed on."""
    return {
        "environment": env.name,
        "coreai-torch": env.converter,
        "coreai-core": env.core,
        "torch": base_version(env.packages.get("torch", "?")),
    }


def cache_key(spec: ProbeSpec, old_env: Env, new_env: Env) -> str:
    payload = {
        "spec": spec.key_json(),
        "old": key_identity(old_env),
        "new": key_identity(new_env),
        "code": code_digest(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def _legacy_key(spec: ProbeSpec, old_env: Env, new_env: Env) -> str:
    """The key results were stored under before keys were pins: the installed packages of both
    environments, so known only once both are built."""
    payload = {
        "spec": spec.key_json(),
        "old": env_identity(old_env),
        "new": env_identity(new_env),
        "code": code_digest(),
    }
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def result_dir(spec: ProbeSpec, old_env: Env, new_env: Env) -> Path:
    """Where the comparison of `spec` under `old_env` and `new_env` is stored: its folder named
    by its key, computed once per run for the same three objects (a session, its executor and
    its batch each ask for it, and the key is a digest of the spec's canonical JSON); a result
    stored under the earlier key (the installed packages') is read where it is while this store
    holds none under the new one. Once a record is seen under the key, the path is settled for
    the run: a warm plan asks about two thousand times, each a look for the earlier key's."""
    folder = results_folder()
    ident = (id(spec), id(old_env), id(new_env))
    known = _result_dirs.get(ident)
    # the objects are held by the entry, so their ids are not reused while it lives
    if known is not None and known[:3] == (spec, old_env, new_env) and known[3].parent == folder:
        final, settled = known[3], known[4]
        if settled:
            return final
    else:
        if len(_result_dirs) >= _MAX_REMEMBERED:
            _result_dirs.clear()
        # names from data reach the path only sanitised, and the key is a digest
        final = folder / f"{_stem(spec, old_env, new_env)}{cache_key(spec, old_env, new_env)}"
    # settled only on a record under the key itself: a record under the earlier one is looked
    # for again (were it dropped as damaged, the comparison made again goes under the key)
    settled = (final / RESULT_FILE).exists()
    _result_dirs[ident] = (spec, old_env, new_env, final, settled)
    if settled:
        return final
    return legacy_or(
        final,
        (old_env, new_env),
        lambda: _stem(spec, old_env, new_env) + _legacy_key(spec, old_env, new_env),
    )


def _stem(spec: ProbeSpec, old_env: Env, new_env: Env) -> str:
    return (
        f"{safe_name(spec.construct)}-{safe_name(old_env.converter)}-"
        f"{safe_name(new_env.converter)}-"
    )


# result_dir's folders by the identity of its arguments (held, so an id is never reused while
# remembered), and whether a record was seen there; a long-lived process (the test suite's
# in-process CLI) starts over past the cap.
_result_dirs: dict[tuple[int, int, int], tuple[ProbeSpec, Env, Env, Path, bool]] = {}
_MAX_REMEMBERED = 50_000


def legacy_or(final: Path, envs: Sequence[Env], legacy_name: Callable[[], str]) -> Path:
    """`final`, unless it holds nothing and the entry's earlier key (computable only once every
    one of `envs` is built) names a folder holding a record: then that one, read (and kept)
    where it is, never recomputed."""
    if not all(env.built for env in envs) or (final / RESULT_FILE).exists():
        return final
    # one component (sanitised names and a digest) beside `final`, in a folder already checked
    legacy = final.parent / legacy_name()
    return legacy if (legacy / RESULT_FILE).exists() else final


def _evidence(folder: Path) -> dict[str, os.stat_result]:
    """Each evidence file by its path in the folder, with its stat: walked as strings, not Path
    objects (every warm read does this, and Path objects were most of its time). The stamp, and a
    reader's half-written one, are not evidence; a link is followed, as `is_file()` does."""
    found: dict[str, os.stat_result] = {}
    base = str(folder)
    for root, _, names in os.walk(base):
        prefix = root[len(base) + 1 :]  # os.walk joins below `base`: "" at the top
        for name in names:
            if name == RESULT_FILE or name.startswith(VERIFIED):
                continue
            try:
                st = os.stat(os.path.join(root, name))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                found[os.path.join(prefix, name) if prefix else name] = st
    return dict(sorted(found.items()))


def manifest(folder: Path) -> dict[str, str]:
    """sha256 of every evidence file, so a damaged stored result is detected, not trusted."""
    return {
        name: hashlib.sha256((folder / name).read_bytes()).hexdigest() for name in _evidence(folder)
    }


def _stats(folder: Path) -> dict[str, list[int]]:
    return {name: [st.st_size, st.st_mtime_ns] for name, st in _evidence(folder).items()}


def _verified(path: Path, digest: str, files: dict[str, str]) -> bool:
    """Whether every evidence file is intact: hashed against the record's manifest, unless the
    files are exactly as they were (size and modification time) when they were last hashed and
    found intact (`VERIFIED`, written then). A warm answer reads dozens of results; hashing
    every file of each on every read was most of its time. Any write to a file, an edit
    included, changes its modification time, and it is hashed again."""
    stats = _stats(path)
    try:
        stamp = json.loads((path / VERIFIED).read_text())
    except (OSError, ValueError):
        stamp = None
    if stamp == {"record": digest, "files": stats}:
        return True
    if manifest(path) != files:
        return False
    try:  # a read-only store is read all the same, hashed every time
        tmp = path / f"{VERIFIED}.{os.getpid()}"
        tmp.write_text(json.dumps({"record": digest, "files": stats}))
        tmp.replace(path / VERIFIED)
    except OSError:
        pass
    return True


def record_digest(record: dict[str, Any]) -> str:
    """sha256 of a record's canonical JSON, without the digest itself: `result.json` is covered
    by the integrity check like every evidence file (an edited verdict is not trusted)."""
    body = {k: v for k, v in record.items() if k != RECORD_DIGEST}
    return hashlib.sha256(
        json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()


def read_record(path: Path) -> dict[str, Any] | None:
    """`result.json` of a stored entry if it and every evidence file are intact, else None."""
    try:
        data = json.loads((path / RESULT_FILE).read_text())
        if not isinstance(data, dict) or data.get(RECORD_DIGEST) != record_digest(data):
            return None
        if not _verified(path, data[RECORD_DIGEST], data["files_sha256"]):
            return None
    except (OSError, ValueError, KeyError, TypeError, RecursionError):
        return None
    return data


# What reading a record of the wrong shape raises (a `measurement` that is not an object...).
SHAPE_ERRORS = (KeyError, TypeError, ValueError, AttributeError)


def load_result(path: Path) -> ProbeResult | None:
    """A stored result, or None if absent, unreadable or damaged (then it is recomputed)."""
    data = read_record(path)
    if data is None:
        return None
    try:
        result = from_json(data)
    except SHAPE_ERRORS:
        return None
    return replace(
        _with_paths(result, lambda v: _absolute(v, path)), evidence=str(path), cached=True
    )


def stored(final: Path, read: Callable[[Path], T | None]) -> T | None:
    """The entry at `final` as `read` reads it (`load_result`, a load check's reader): from
    this store, else from the remote tier, every file verified against the remote manifest and
    the entry checked by `read` before it is renamed into this store; None: neither holds it
    whole (then it is made, and published)."""
    found = read(final)
    remote = store_location.remote()
    if found is not None or remote is None:
        return found
    with building(final) as work:
        try:
            fetched = remote.fetch(final.name, work) and read(work) is not None
        except RemoteStopped:
            raise  # the run is stopping: neither a miss nor a line for the user
        except Exception as exc:  # noqa: BLE001 - a failing backend costs a recomputation only
            store_location.notice(
                f"--store {remote.url}: {final.name} not fetched "
                f"({one_line(exc)}); computing it here"
            )
            fetched = False
        if not fetched:
            shutil.rmtree(work, ignore_errors=True)
            return None
        # stamped as this store's, never published back
        theirs = install(work, final, read, replace_stored=False, publish_remote=False)
    return theirs if theirs is not None else read(final)


def stored_all(asks: Iterable[tuple[Path, Callable[[Path], object | None]]]) -> None:
    """Each entry of `asks` (a folder and its reader, as `stored` takes them) that this store
    lacks, taken in from the remote tier before it is read: what a command will read next (a
    batch of comparisons and load checks, a sweep's stored results), fetched up to
    FETCHES_AT_ONCE at a time instead of one after the other as each is read. Each is fetched,
    verified and renamed in exactly as `stored` does it (a miss, a refusal or a failing backend
    leaves it to be made, and is said as there); nothing is fetched without a remote tier, for
    an entry held here, or twice. RemoteStopped if the run is being stopped."""
    remote = store_location.remote()
    if remote is None:
        return
    wanted: dict[Path, Callable[[Path], object | None]] = {}
    for final, read in asks:
        if not (final / RESULT_FILE).exists():
            wanted.setdefault(final, read)
    if not wanted:
        return
    fetchers = ThreadPoolExecutor(
        max_workers=min(FETCHES_AT_ONCE, len(wanted)), thread_name_prefix="remote-fetch"
    )
    try:
        for done in [fetchers.submit(stored, final, read) for final, read in wanted.items()]:
            done.result()
    except (KeyboardInterrupt, SystemExit):
        # the run is stopping (Ctrl-C, SIGTERM): the fetches under way end at their next read
        remote.stop()
        raise
    finally:
        # none more starts; those under way are waited for (their temp folders removed)
        fetchers.shutdown(wait=True, cancel_futures=True)


def _published(final: Path, replace_stored: bool) -> None:
    """A result just put in place, published to the remote tier (if any): every file but the
    local verification stamps, then the manifest. A backend that fails costs the remote copy
    only: the answer stands, from this store, and the user is told."""
    remote = store_location.remote()
    if remote is None:
        return
    files = {
        str(p.relative_to(final)): p
        for root, _, names in os.walk(final)
        for p in (Path(root, n) for n in names)
        if not p.name.startswith(VERIFIED)
    }
    try:
        remote.publish(final.name, files, replace=replace_stored)
    except Exception as exc:  # noqa: BLE001 - see above
        store_location.notice(f"--store {remote.url}: {final.name} not published ({one_line(exc)})")


def stored_code(path: Path) -> str | None:
    """The oracle code digest a stored result says it was made with (read without the integrity
    check, so that an entry of older code is told apart from a damaged one)."""
    try:
        data = json.loads((path / RESULT_FILE).read_text())
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    code = data.get("code")
    return code if isinstance(code, str) else ""


def stored_failure(path: Path) -> bool:
    """Whether a stored entry records a failure (a side could not convert, a measurement or a
    runtime could not run): `cache prune --failures` drops those."""
    data = read_record(path)
    return bool(data.get("failed")) if data is not None else False


def failed(result: ProbeResult) -> bool:
    m = result.measurement
    return not result.old.ok or not result.new.ok or (m is not None and not m.ok)


def _absolute(value: str, folder: Path) -> str:
    return str(folder / value) if value and not Path(value).is_absolute() else value


def _relative(value: str, folder: Path) -> str:
    path = Path(value) if value else None
    if path is not None and path.is_absolute() and path.is_relative_to(folder):
        return str(path.relative_to(folder))
    return value


def _with_paths(result: ProbeResult, fix: Callable[[str], str]) -> ProbeResult:
    def moved(files: dict[str, str]) -> dict[str, str]:
        return {key: fix(value) for key, value in files.items()}

    m = result.measurement
    return replace(
        result,
        old=replace(result.old, files=moved(result.old.files)),
        new=replace(result.new, files=moved(result.new.files)),
        measurement=replace(m, files=moved(m.files)) if m is not None else None,
        alone=replace(result.alone, files=moved(result.alone.files))
        if result.alone is not None
        else None,
    )


def lock_path(temp: Path) -> Path:
    """The lock a live run holds on the temp folder `temp` while it builds in it."""
    return temp.parent.parent / LOCKS / f"{temp.name}.lock"


def _held_lock(final: Path) -> tuple[int, Path]:
    """A new temp folder name beside `final`, with its lock taken (before the folder exists, so
    `cache prune` never sees the folder unlocked)."""
    final.parent.parent.joinpath(LOCKS).mkdir(parents=True, exist_ok=True)
    while True:
        work = final.with_name(f".{final.name}.{secrets.token_hex(4)}")
        try:
            fd = os.open(lock_path(work), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            continue
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:  # prune may have removed the file between its creation and our lock: try again
            same = os.stat(lock_path(work)).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            same = False
        if same:
            os.write(fd, f"{os.getpid()}\n".encode())
            return fd, work
        os.close(fd)


@contextmanager
def building(final: Path) -> Iterator[Path]:
    """A temp folder beside `final` to build a result in, locked while this run holds it;
    removed if the build fails. `final` must lie in the store (every result is built here)."""
    in_store(final)
    try:
        final.parent.mkdir(parents=True, exist_ok=True)
        fd, work = _held_lock(final)
    except OSError as exc:
        raise StoreError(
            f"cannot write the result store {final.parent}: {exc.strerror or exc}"
        ) from None
    try:
        work.mkdir()
        yield work
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    finally:
        lock_path(work).unlink(missing_ok=True)
        os.close(fd)


def install(
    work: Path,
    final: Path,
    read: Callable[[Path], T | None],
    replace_stored: bool,
    publish_remote: bool = True,
) -> T | None:
    """Rename the finished `work` into place. If a valid entry is already there, keep it and
    return it (another process got there first), unless `replace_stored` (--no-cache: the
    fresh result replaces it: the old one is renamed aside, the new one renamed in, the old one
    removed). A damaged entry in the way is always replaced. None: ours is in place, and
    published to the remote tier when there is one (`publish_remote`)."""
    placed = _placed(work, final, read, replace_stored)
    if placed is None and publish_remote:
        _published(final, replace_stored)
    return placed


def _placed(
    work: Path, final: Path, read: Callable[[Path], T | None], replace_stored: bool
) -> T | None:
    for _ in range(5):
        try:
            work.rename(final)
            return None
        except OSError:
            if not final.exists():
                raise
        if not replace_stored:
            theirs = read(final)
            if theirs is not None:
                shutil.rmtree(work, ignore_errors=True)
                return theirs
        aside = final.with_name(f".{final.name}.replaced.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            final.rename(aside)
        except FileNotFoundError:
            continue  # removed meanwhile: take its place
        try:
            work.rename(final)
            return None
        except OSError:
            continue  # another process put its entry there meanwhile
        finally:
            shutil.rmtree(aside, ignore_errors=True)
    raise StoreError(f"could not move a result into place at {final}")


def relocated(result: ProbeResult, work: Path, final: Path) -> ProbeResult:
    """The result with its evidence files where they will live once `work` is renamed."""

    def moved(value: str) -> str:
        path = Path(value) if value else None
        if path is not None and path.is_relative_to(work):
            return str(final / path.relative_to(work))
        return value

    return replace(_with_paths(result, moved), evidence=str(final))


def write_record(work: Path, record: dict[str, Any]) -> None:
    """`result.json`, with the manifest of every other file and the record's own digest."""
    record = {**record, "files_sha256": manifest(work)}
    record[RECORD_DIGEST] = record_digest(record)
    (work / RESULT_FILE).write_text(json.dumps(record, indent=2))


def publish(
    result: ProbeResult, work: Path, final: Path, replace_stored: bool = False
) -> ProbeResult:
    """Record the result with its manifest and move it into place; if another process got there
    first, keep theirs (unless `replace_stored`: then ours replaces it)."""
    stored = replace(_with_paths(result, lambda v: _relative(v, work)), evidence=".")
    write_record(
        work,
        {**to_json(stored), "key": final.name, "code": code_digest(), "failed": failed(result)},
    )
    theirs = install(work, final, load_result, replace_stored)
    if theirs is not None:
        return replace(theirs, cached=False)
    return relocated(result, work, final)
