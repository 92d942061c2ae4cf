"""Converter environments: one isolated virtualenv per coreai-torch release of the catalog
(`oracle/catalog/releases.py`).

Every environment shares one torch: a `--target` install of the pinned torch wheel that each
environment sees through a `.pth` file, so the converter (and its pinned coreai-core) is the only
thing that differs between two sides of a comparison. An environment is usable only once its
manifest (`inventory-env.json`) exists; the manifest is written last, atomically, so a build that
was interrupted leaves a folder without one, which the next run deletes and rebuilds. A manifest
that cannot be read is treated the same way (the environment is half-built).

The store can move: on first use an environment whose shared-torch `.pth` does not point at the
shared torch of the store it is now in is re-pointed there (verified by importing torch), or
rebuilt. A build holds a lock per environment; a process that waits for one says who holds it and
gives up after INVENTORY_LOCK_TIMEOUT seconds.

An environment's folder is named by everything that determines it: `coreai-torch-<version>` for
the pins of the packaged catalog, `coreai-torch-<version>-pins-<digest>` for any other pins (a
user's catalog re-pinning the release's coreai-core, its extra requirements or the torch). So a
re-pinned release gets a folder of its own, and a folder another run is using is never
replaced under it. Every folder this module empties, replaces or locks is named by one path
component and must resolve inside the cache's `envs/` (`env_folder`): a catalog value never
reaches a path outside the store.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from oracle.catalog.releases import (
    Catalog,
    EnvError,
    Release,
    base_version,
    load_catalog,
    packaged_catalog,
)
from oracle.envs import bytecode, held_torch, installer
from oracle.envs import files as env_files
from oracle.envs.installer import Installer, cuda_torch, run_step
from oracle.infra.atomic import write_text_atomic
from oracle.infra.paths import StorePathError, envs_dir, inside
from oracle.infra.progress import Notice, Progress
from oracle.infra.settings import seconds

MANIFEST = "inventory-env.json"
SHARED_TORCH_PTH = "_inventory_shared_torch.pth"
# beside uv's cache: the sha256 of its files, by their stat (`files.snapshot`)
KNOWN_SHA256 = "inventory-file-sha256.json"
# Installed into every environment beside the converter: the worker stores tensors with it.
WORKER_REQUIREMENTS = ("safetensors",)


@dataclass(frozen=True)
class Env:
    """A ready converter environment and the exact versions installed in it."""

    converter: str
    core: str
    path: Path
    python: Path
    packages: dict[str, str]
    deviations: tuple[str, ...]
    # False: the environment a release will have, known from the catalog's pins alone and not
    # built yet (`planned_env`): what a stored result's key needs; it is built when a worker
    # first has to run in it (`Session.ready`)
    built: bool = True

    @property
    def name(self) -> str:
        return self.path.name  # coreai-torch-<version>, or a measurement's own environment

    @property
    def runtime(self) -> str:
        return f"linux-cpu, coreai-core {self.packages.get('coreai-core', self.core)}"


def env_folder(name: str) -> Path:
    """The folder `name` under envs/, once `name` is one path component (no separator, never
    `.` or `..`), else StorePathError: a catalog's `[torch] version = "../../../../victim"`
    once named, emptied and locked a folder outside the store. The folder itself may be a
    symlink (a test's cache borrowing the shared torch): what is removed or locked through it
    is checked where it resolves (`remove_env`, `locked`)."""
    if not name or name in (".", "..") or any(c in name for c in "/\\\0"):
        raise StorePathError(f"refusing to touch environment {name!r}: not one folder name")
    return envs_dir() / name


def remove_env(path: Path) -> None:
    """Remove an environment folder (a half-built or damaged one), once it is known to resolve
    inside envs/."""
    shutil.rmtree(inside(path, envs_dir()), ignore_errors=True)


def lock_timeout() -> float:
    """How long to wait for another process's build of an environment (builds take minutes)."""
    return seconds("INVENTORY_LOCK_TIMEOUT")


def _holder(fd: int) -> str:
    """Who holds a lock: the pid and command its holder wrote into the lock file."""
    try:
        text = os.pread(fd, 1000, 0).decode(errors="replace").strip()
    except OSError:
        text = ""
    pid, _, cmd = text.partition(" ")
    if not pid.isdigit():
        return "another process"
    return f"pid {pid} ({cmd})" if cmd else f"pid {pid}"


# One lock per environment name within this process: environments are built in parallel threads
# (`prefetch`), and a file lock does not keep two threads of one process apart reliably.
_THREAD_LOCKS: dict[str, threading.Lock] = {}
_THREAD_LOCKS_GUARD = threading.Lock()
# A wait for another process's lock that timed out, per environment name, kept while the thread
# lock passes on: a thread that waited for that thread answers with the same error at once,
# instead of waiting (and saying so) a second time.
_TIMED_OUT: dict[str, EnvError] = {}


class LockTimeout(EnvError):
    """Another process held an environment's lock longer than INVENTORY_LOCK_TIMEOUT."""


@contextmanager
def locked(name: str, progress: Progress = lambda _: None) -> Iterator[None]:
    """Serialise builds of one environment across threads and processes. A waiter says once
    who holds the lock, and gives up after `lock_timeout()` seconds with one line naming the
    holder. A thread waiting for another thread of this run waits for its outcome (that thread's
    own wait is bounded): two clocks racing would give the run two different answers."""
    with _THREAD_LOCKS_GUARD:
        mine = _THREAD_LOCKS.setdefault(name, threading.Lock())
    waited = not mine.acquire(blocking=False)
    if waited:
        progress(f"waiting for environment {name}: another thread of this run builds it")
        mine.acquire()
    try:
        earlier = _TIMED_OUT.get(name)
        if waited and earlier is not None:
            raise LockTimeout(str(earlier))
        try:
            with _file_locked(name, progress):
                yield
        except LockTimeout as exc:
            _TIMED_OUT[name] = exc
            raise
        except BaseException:
            _TIMED_OUT.pop(name, None)
            raise
        _TIMED_OUT.pop(name, None)
    finally:
        mine.release()


@contextmanager
def _file_locked(name: str, progress: Progress) -> Iterator[None]:
    envs_dir().mkdir(parents=True, exist_ok=True)
    lock = inside(env_folder(f".{name}.lock"), envs_dir())
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            limit = lock_timeout()
            progress(f"waiting for environment {name}: locked by {holder}")
            deadline = time.monotonic() + limit
            while True:
                time.sleep(0.2)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LockTimeout(
                            f"environment {name} is still locked by {_holder(fd)} after "
                            f"{limit:g} s (INVENTORY_LOCK_TIMEOUT); wait for it to finish, or "
                            f"stop it"
                        ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {' '.join(sys.argv)[:300]}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def site_packages(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    return Path(out.stdout.strip())


def shared_torch(catalog: Catalog, progress: Progress = lambda _: None) -> Path:
    """The one torch every environment imports: a `--target` install of the pinned wheel."""
    return torch_install(catalog.torch, f"torch-{catalog.torch}", ["--no-deps"], progress)


def torch_install(
    version: str, name: str, options: list[str], progress: Progress = lambda _: None
) -> Path:
    """A `--target` install of torch==version under envs/NAME (reused once complete). A CUDA
    build is refused: the pip configuration must lead to the CPU wheel."""
    target = env_folder(name)
    if (target / MANIFEST).exists():  # no lock needed to reuse a complete install
        return target / "site"
    with locked(name, progress):
        if (target / MANIFEST).exists():
            return target / "site"
        tool = _installer(progress)
        log = target.parent / f"{name}.build.log"
        log.unlink(missing_ok=True)
        progress(f"{name}: installing torch {version} into {target} ({tool.label()})")

        def build() -> list[Path]:
            bytecode.stop(target / "site")  # its warm-up would write into what is removed
            remove_env(target)
            target.mkdir(parents=True)
            _log(log, tool.describe())
            tool.install(
                sys.executable,
                [*options, f"torch=={version}"],
                log,
                f"torch=={version}",
                target=target / "site",
            )
            cuda = cuda_torch(target / "site")
            if cuda is not None:
                remove_env(target)
                raise EnvError(
                    f"torch=={version} resolved to a CUDA build ({cuda}); the shared "
                    f"torch must be the CPU wheel: point pip's configuration "
                    f"(find-links or index-url) at it (log: {log})"
                )
            return [target / "site"]

        files = _checked_build(target, build, tool, log, progress)
        write_text_atomic(
            target / MANIFEST,
            json.dumps(
                {"torch": version, "options": options, "installer": tool.label(), **files},
                indent=2,
                sort_keys=True,
            ),
        )
        progress(f"{name}: ready")
        # its bytecode written once, while the environments that hold it are being built
        bytecode.start_held(target / "site", log)
    return target / "site"


def _log(log: Path, line: str) -> None:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as handle:
        handle.write(f"# {line}\n")


def _installer(progress: Progress) -> Installer:
    """The installer of this process; that it is pip when uv was asked for is said once."""
    tool = installer.chosen()
    if tool.note and not _SAID:
        _SAID.append(tool.note)
        progress(f"building environments with pip: {tool.note}")
    return tool


_SAID: list[str] = []


def _checked_build(
    root: Path, build: Callable[[], list[Path]], tool: Installer, log: Path, progress: Progress
) -> dict:
    """`build()` (which makes the environment at `root` from nothing and returns its package
    folders), then every installed file checked against its RECORD and recorded. A distribution
    installed damaged came so from uv's cache (its files are hard links into it): it is dropped
    from the cache and the environment built once more; damaged twice is an error."""
    for attempt in (1, 2):
        sites = build()
        # a file hard-linked from uv's cache that an earlier build hashed is not read again
        snap = env_files.snapshot(root, sites, known=installer.uv_cache() / KNOWN_SHA256)
        if not snap.damaged:
            return env_files.record(root, snap)
        names = sorted(snap.damaged)
        where = "; ".join(f"{n}: {', '.join(snap.damaged[n][:3])}" for n in names)
        _log(log, f"installed files differ from their RECORD: {where}")
        if attempt == 2:
            raise EnvError(
                f"{root.name}: {', '.join(names)} installed with files that differ "
                f"from their RECORD twice ({where}; log: {log})"
            )
        progress(
            f"{root.name}: {', '.join(names)} installed damaged (uv's cache): dropping it "
            f"from the cache and building again"
        )
        tool.forget(names, log)
    raise AssertionError("unreachable")


# Run inside a fresh environment: the requirements a distribution declares, with environment
# markers evaluated there, minus the ones the oracle provides itself.
_REQUIRES_SCRIPT = """
import importlib.metadata as md, json, sys
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
out = {}
for dist in sys.argv[1:]:
    reqs = []
    for raw in md.requires(dist) or []:
        req = Requirement(raw)
        if req.marker is None or req.marker.evaluate({"extra": ""}):
            reqs.append(str(req))
    out[dist] = reqs
print(json.dumps(out))
"""


# Run inside the environment: the torch version it sees, and which of the converter's declared
# torch requirements that version does not meet.
_TORCH_CHECK_SCRIPT = """
import importlib.metadata as md, json, sys
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
v = md.version("torch")
bad = [r for r in sys.argv[1:] if not Requirement(r).specifier.contains(v, prereleases=True)]
print(json.dumps({"torch": v, "unsatisfied": bad}))
"""


# Run inside the environment: every distribution it sees (its own and the shared torch), by
# lower-case name, as `pip list` lists them.
_LIST_SCRIPT = """
import importlib.metadata as md, json
out = {}
for dist in md.distributions():
    name = dist.metadata["Name"]
    if name:
        out.setdefault(name.lower(), dist.version)
print(json.dumps(out))
"""


# environments this process built, not warmed up yet: their python -> build log, held torch
_UNWARMED: dict[str, tuple[Path, Path]] = {}
_UNWARMED_GUARD = threading.Lock()


def warmed_up(env: Env) -> Env:
    """`env` with the bytecode of what a worker imports written, for a command that builds
    environments ahead of time: one this process built is warmed up now (after the held
    torch's warm-up), and the warm-up waited for (it would be stopped at the command's exit)."""
    with _UNWARMED_GUARD:
        pending = _UNWARMED.pop(str(env.python), None)
    if pending is not None:
        log, held = pending
        bytecode.start(env.python, log, held=held)
    bytecode.wait(env.python, held=held_site(env))
    return env


def held_site(env: Env) -> Path | None:
    """The folder of the torch `env` holds, as its `.pth` names it (None: it names none)."""
    pth = _shared_pth(env.path)
    if pth is None:
        return None
    try:
        return Path(pth.read_text().strip())
    except OSError:
        return None


def installed_packages(python: Path, log: Path) -> dict[str, str]:
    return json.loads(run_step([str(python), "-I", "-c", _LIST_SCRIPT], log, "the package list"))


def _requirement_name(req: str) -> str:
    for i, ch in enumerate(req):
        if not (ch.isalnum() or ch in "-_."):
            return req[:i].lower().replace("_", "-")
    return req.lower().replace("_", "-")


def manifest_problem(path: Path) -> str | None:
    """Why an environment's manifest cannot be used (None: absent or good)."""
    manifest = path / MANIFEST
    if not manifest.exists():
        return None
    try:
        _env_of(path, json.loads(manifest.read_text()))
    except (
        OSError,
        UnicodeDecodeError,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        RecursionError,
    ) as exc:
        return f"damaged manifest {manifest} ({type(exc).__name__})"
    return None


def _env_of(path: Path, data: dict) -> Env:
    packages = data["packages"]
    if not isinstance(packages, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in packages.items()
    ):
        raise TypeError("packages")
    deviations = data["deviations"]
    if not isinstance(deviations, list) or not all(isinstance(d, str) for d in deviations):
        raise TypeError("deviations")
    if not isinstance(data["converter"], str) or not isinstance(data["core"], str):
        raise TypeError("converter")
    return Env(
        converter=data["converter"],
        core=data["core"],
        path=path,
        python=path / "bin" / "python",
        packages=packages,
        deviations=tuple(deviations),
    )


def read_manifest(path: Path) -> Env | None:
    """The environment if its manifest is there and readable; None if it is absent or damaged
    (then the environment counts as half-built: never used, and rebuilt)."""
    if manifest_problem(path) is not None or not (path / MANIFEST).exists():
        return None
    return _env_of(path, json.loads((path / MANIFEST).read_text()))


def torch_line(torch_site: Path) -> str:
    """The shared-torch `.pth` line: where the torch is, not the path it was reached by. A cache
    whose `envs` is a symbolic link to another store's (a test's, a second checkout's) builds
    its environments there; a line naming the link would leave them pointing into a cache
    that goes away with its run."""
    return f"{torch_site.resolve()}\n"


def _shared_pth(path: Path) -> Path | None:
    found = sorted(path.glob(f"lib/python*/site-packages/{SHARED_TORCH_PTH}"))
    return found[0] if found else None


def _imports_torch(python: Path) -> bool:
    try:
        return (
            subprocess.run(
                [str(python), "-c", "import torch"], capture_output=True, timeout=600
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def _repointed(env: Env, catalog: Catalog, progress: Progress) -> Env | None:
    """The environment, its shared-torch `.pth` pointing at the shared torch of the store it is
    in now (after the store moved); None if it cannot be re-pointed (then it is rebuilt)."""
    return env if repointed(env.path, env.python, catalog, progress) else None


def repointed(path: Path, python: Path, catalog: Catalog, progress: Progress) -> bool:
    """The environment at `path` (a converter's or a requirements one, `ensure_venv`) imports
    the shared torch of the store it is in now, its `.pth` re-pointed there if it named another
    (the store moved, or it was built through a cache that linked to it and is gone); False if
    it cannot be (then it is rebuilt)."""
    pth = _shared_pth(path)
    root = envs_dir()
    if pth is None or not path.resolve().is_relative_to(root.resolve()):
        return True  # not ours to change (another store's environment, reached by a symlink)
    try:
        recorded = json.loads((path / MANIFEST).read_text()).get("shared_torch", "")
        current = pth.read_text().strip()
    except (OSError, ValueError, AttributeError):
        return False
    name = Path(recorded).parent.name if recorded else f"torch-{catalog.torch}"
    wanted = root / name / "site"
    if current and Path(current).resolve() == wanted.resolve() and wanted.is_dir():
        return True
    if name == f"torch-{catalog.torch}":
        wanted = shared_torch(catalog, progress)
    if not wanted.is_dir():
        return False
    progress(f"re-pointing {path.name} at the shared torch {wanted}")
    write_text_atomic(pth, torch_line(wanted))  # a new file: a hard-linked copy's stays as it was
    if not _imports_torch(python):
        return False
    data = json.loads((path / MANIFEST).read_text())
    data["shared_torch"] = str(wanted)
    write_text_atomic(path / MANIFEST, json.dumps(data, indent=2, sort_keys=True))
    return True


def env_name(release: Release, torch: str) -> str:
    """The folder of a release's environment, named by everything that determines it: the
    release, and for pins other than the packaged catalog's (a user's catalog re-pinning the
    core, the extra requirements or the torch) a digest of them."""
    packaged = packaged_catalog()
    pins = (torch, release.core, tuple(release.extra))
    same = packaged.releases.get(release.converter)
    if same is not None and pins == (packaged.torch, same.core, tuple(same.extra)):
        return f"coreai-torch-{release.converter}"
    digest = hashlib.sha256(json.dumps(pins).encode()).hexdigest()[:12]
    return f"coreai-torch-{release.converter}-pins-{digest}"


def env_path(version: str, catalog: Catalog | None = None) -> Path:
    """The folder of a release's environment with the pins `catalog` gives it."""
    catalog = catalog or load_catalog()
    return env_folder(env_name(catalog.release(version), catalog.torch))


def planned_env(version: str, catalog: Catalog | None = None) -> Env:
    """A release's environment as far as the store's keys need it, building nothing: the built
    one if it is there (and pins the catalog's core), else what the catalog's pins say it will be
    (`built` False: its packages are the pins, its deviations those the pins make,
    `planned_deviations`)."""
    catalog = catalog or load_catalog()
    release = catalog.release(version)
    path = env_path(version, catalog)
    ready = read_manifest(path)
    if ready is not None and ready.core == release.core:
        return ready
    pins = {
        "coreai-torch": release.converter,
        "coreai-core": release.core,
        "torch": catalog.torch,
    }
    deviations = planned_deviations(release, catalog)
    python = path / "bin" / "python"
    return Env(release.converter, release.core, path, python, pins, deviations, False)


def planned_deviations(release: Release, catalog: Catalog) -> tuple[str, ...]:
    """The deviations a release's environment is built with, known from the catalog alone, in
    the words the build records (`_build`): the torch the release declares
    (`declares_torch`) when the shared torch lies outside it, and the measurements of the shared
    torch that justify it. So an answer read from the store states them without the build."""
    from packaging.requirements import Requirement

    if not release.declares_torch:
        return ()
    torch = _shared_torch_version(catalog)
    if Requirement(release.declares_torch).specifier.contains(base_version(torch), True):
        return ()
    return (
        f"coreai-torch {release.converter} declares {release.declares_torch}; installed beside "
        f"torch {torch} without dependency resolution",
        *(
            c.cited()
            for c in catalog.torch_checks(release.converter)
            if base_version(c.against) == base_version(torch)
        ),
    )


def _shared_torch_version(catalog: Catalog) -> str:
    """The shared torch as installed (with its local label, 2.13.0+cpu) when it is, else the
    catalog's pin."""
    try:
        data = json.loads((env_folder(f"torch-{catalog.torch}") / MANIFEST).read_text())
        version = data["distributions"]["torch"]["version"]
    except (OSError, ValueError, KeyError, TypeError):
        return catalog.torch
    return version if isinstance(version, str) else catalog.torch


def ready_env(version: str, catalog: Catalog | None = None) -> Env | None:
    """The environment if it is fully built, else None (never a half-built one)."""
    return read_manifest(env_path(version, catalog))


def ensure_env(
    version: str,
    catalog: Catalog | None = None,
    progress: Progress = lambda _: None,
    allow_code: bool = False,
) -> Env:
    """Create or reuse the environment for one coreai-torch release. An `extra` requirement
    that installs code from anywhere (a path, a URL, a VCS reference, an option) is installed
    only with `allow_code` (`envs build --allow-code`), and then said; an environment already
    built with it is reused without (nothing of it runs again)."""
    catalog = catalog or load_catalog()
    release = catalog.release(version)
    path = env_path(version, catalog)
    env = _fitting(read_manifest(path), release, progress)
    if env is not None:
        env = _repointed(env, catalog, progress)
        if env is not None:
            return env
    _consented(release, path.name, allow_code, progress)  # before anything is installed
    torch_site = shared_torch(catalog, progress)
    with locked(path.name, progress):
        # another process may have built it while we waited
        env = _fitting(read_manifest(path), release, lambda _: None)
        if env is not None:
            env = _repointed(env, catalog, progress)
            if env is not None:
                return env
            progress(f"{path.name} cannot import the shared torch: rebuilding it")
        bytecode.stop(path / "bin" / "python")  # its warm-up would write into what is removed
        remove_env(path)  # a half-built leftover is never used
        return _build(release, catalog, path, torch_site, progress)


def _consented(release: Release, name: str, allow_code: bool, progress: Progress) -> None:
    """Refuse to install a catalog's `extra` that installs code from anywhere, unless the user
    consented; with consent, say what will run."""
    if not release.code:
        return
    said = ", ".join(release.code)
    if not allow_code:
        raise EnvError(
            f'{release.origin}: [converters."{release.converter}"] extra {said}: installing '
            "it runs code from outside the package registry, refused without --allow-code "
            f"(with this catalog: inventory envs build {release.converter} --allow-code)"
        )
    progress(Notice(f"{name}: installing {said}: its build code runs (--allow-code)"))


def _fitting(env: Env | None, release: Release, progress: Progress) -> Env | None:
    """The environment if it was built with the coreai-core the catalog's entry pins now (a
    user's catalog can pin another for the same release); else None, said once (it is rebuilt:
    the environment is named by the release alone)."""
    if env is None or env.core == release.core:
        return env
    progress(
        Notice(
            f"{env.name} was built with coreai-core {env.core}; the catalog's entry "
            f"({release.source}: {release.origin}) pins {release.core}: rebuilding it"
        )
    )
    return None


def _build(
    release: Release, catalog: Catalog, path: Path, torch_site: Path, progress: Progress
) -> Env:
    log = path.parent / f"{path.name}.build.log"
    log.unlink(missing_ok=True)
    tool = _installer(progress)
    progress(f"{path.name}: creating ({tool.label()})")
    converter_req = f"coreai-torch=={release.converter}"
    core_req = f"coreai-core=={release.core}"
    found: dict[str, list[str]] = {}

    def build() -> list[Path]:
        bytecode.stop(path / "bin" / "python")
        remove_env(path)
        _log(log, tool.describe())
        python = tool.venv(path, log)
        site = site_packages(python)
        (site / SHARED_TORCH_PTH).write_text(torch_line(torch_site))
        progress(f"{path.name}: installing coreai-torch {release.converter}")
        # Without dependency resolution: the converter's own torch bound is not honoured (it is
        # recorded as a deviation below); torch comes from the shared install.
        tool.install(python, ["--no-deps", converter_req], log, converter_req)
        found.update(
            json.loads(
                run_step(
                    [str(python), "-I", "-c", _REQUIRES_SCRIPT, "coreai-torch", "torch"],
                    log,
                    "the converter's requirement list",
                )
            )
        )
        provided = {"torch", "coreai-core"}
        wanted = [
            req
            for dist in ("coreai-torch", "torch")
            for req in found[dist]
            if _requirement_name(req) not in provided
        ]
        progress(f"{path.name}: installing {core_req} and dependencies")
        what = f"{core_req} for coreai-torch {release.converter}"
        pins = held_torch.resolved_beside(
            tool,
            python,
            [core_req, *wanted, *release.extra, *WORKER_REQUIREMENTS],
            torch_site,
            log,
            what,
        )
        tool.install(python, ["--no-deps", *pins], log, what)
        return [site]

    files = _checked_build(path, build, tool, log, progress)
    python = path / "bin" / "python"
    held_torch.check_held(python, torch_site, log, path.name)
    # warmed up only if built ahead of time (`warmed_up`); in a run, its first worker writes
    # the bytecode of what is its own (oracle/envs/bytecode.py)
    with _UNWARMED_GUARD:
        _UNWARMED[str(python)] = (log, torch_site)
    packages = installed_packages(python, log)
    declared_torch = [r for r in found["coreai-torch"] if _requirement_name(r) == "torch"]
    check = json.loads(
        run_step(
            [str(python), "-I", "-c", _TORCH_CHECK_SCRIPT, *declared_torch],
            log,
            "torch (the shared install is not visible)",
        )
    )
    packages["torch"] = check["torch"]
    deviations = [
        f"coreai-torch {release.converter} declares {req}; installed beside torch "
        f"{check['torch']} without dependency resolution"
        for req in check["unsatisfied"]
    ]
    deviations += [
        c.cited()
        for c in catalog.torch_checks(release.converter)
        if deviations and base_version(c.against) == base_version(check["torch"])
    ]
    if packages.get("coreai-core") != release.core:
        raise EnvError(
            f"coreai-torch {release.converter}: expected coreai-core {release.core}, "
            f"got {packages.get('coreai-core')}"
        )
    manifest = {
        "converter": release.converter,
        "core": release.core,
        "extra": list(release.extra),
        "torch_pin": catalog.torch,
        "packages": packages,
        "deviations": deviations,
        "shared_torch": str(torch_site),
        "installer": tool.label(),
        **files,
    }
    write_text_atomic(path / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
    progress(f"{path.name}: ready")
    env = read_manifest(path)
    assert env is not None
    return env


def ensure_venv(
    name: str, requirements: tuple[str, ...], catalog: Catalog, progress: Progress = lambda _: None
) -> Path:
    """A virtualenv under envs/ that sees the shared torch, with torch's own requirements and
    `requirements` installed; its python. For code that must run against other package versions
    than the project's own (a recipe's pinned transformers), never for a converter. A reused one
    whose files changed since it was built, or that was not built on the shared torch, is built
    again. Requirements that would pull another torch or a CUDA package are refused
    (`held_torch`)."""
    path = env_folder(name)
    python = path / "bin" / "python"
    torch_site = shared_torch(catalog, progress)
    version = held_torch.shared_version(torch_site)
    with locked(name, progress):
        if (path / MANIFEST).exists():
            problems = files_changed(path)
            if not problems and _manifest_torch(path) != version:
                problems = [f"not built on the shared torch {version}"]
            if not problems and not repointed(path, python, catalog, progress):
                problems = [f"cannot import the shared torch {version}"]
            if not problems:
                return python
            progress(changed_line(name, problems))
        remove_env(path)  # a half-built leftover is never used
        log = path.parent / f"{name}.build.log"
        log.unlink(missing_ok=True)
        tool = _installer(progress)
        progress(f"{name}: creating ({', '.join(requirements)}; {tool.label()})")
        what = f"{name} ({', '.join(requirements)})"

        def build() -> list[Path]:
            remove_env(path)
            _log(log, tool.describe())
            tool.venv(path, log)
            site = site_packages(python)
            (site / SHARED_TORCH_PTH).write_text(torch_line(torch_site))
            pins = held_torch.resolved_beside(
                tool, python, list(requirements), torch_site, log, what
            )
            tool.install(python, ["--no-deps", *pins], log, " ".join(requirements))
            return [site]

        try:
            files = _checked_build(path, build, tool, log, progress)
            held = held_torch.check_held(python, torch_site, log, name)
        except EnvError:
            remove_env(path)  # nothing of a refused build is kept
            raise
        packages = installed_packages(python, log)
        write_text_atomic(
            path / MANIFEST,
            json.dumps(
                {
                    "requirements": list(requirements),
                    "packages": packages,
                    "torch": held,
                    "shared_torch": str(torch_site),
                    "installer": tool.label(),
                    **files,
                },
                indent=2,
                sort_keys=True,
            ),
        )
        progress(f"{name}: ready (torch {held}, the shared install)")
    return python


def _manifest_torch(path: Path) -> str | None:
    """The shared torch an environment's build checked it holds (None: not recorded)."""
    try:
        data = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    torch = data.get("torch") if isinstance(data, dict) else None
    return torch if isinstance(torch, str) else None


def files_changed(path: Path) -> list[str]:
    """What differs in the environment at `path` from what its build recorded (empty: intact,
    or nothing recorded to check against)."""
    try:
        manifest = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return [f"{MANIFEST} cannot be read"]
    return env_files.changed(path, manifest) if isinstance(manifest, dict) else []


def record_line(path: Path) -> str:
    """What an environment's build recorded and whether its files are still as recorded: the
    installer, the distributions (each with its RECORD's sha256 in the manifest) and the state
    of its files (`envs list`)."""
    try:
        data = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return "manifest unreadable: rebuilt on next use"
    dists = data.get("distributions") if isinstance(data, dict) else None
    if not isinstance(dists, dict):
        return "built before files were recorded: not checked (rebuild to record them)"
    problems = files_changed(path)
    state = (
        "files as built"
        if not problems
        else f"{len(problems)} file(s) changed ({problems[0]}): rebuilt on next use"
    )
    files = sum(d.get("files", 0) for d in dists.values() if isinstance(d, dict))
    return (
        f"{data.get('installer', '?')}; {len(dists)} distributions, {files} files, "
        f"recorded sha256 {str(data.get('files_sha256', ''))[:12]}; {state}"
    )


def torch_installs() -> list[Path]:
    """The torch installs under envs/ (the shared one, and any a measurement made)."""
    root = envs_dir()
    return (
        sorted(p for p in root.glob("torch-*") if (p / MANIFEST).exists()) if root.exists() else []
    )


def changed_line(name: str, problems: list[str]) -> str:
    more = f" and {len(problems) - 1} more" if len(problems) > 1 else ""
    return f"{name}: {problems[0]}{more} since it was built; rebuilding it (never used damaged)"


def ensure_env_on_torch(
    version: str, name: str, torch_site: Path, catalog: Catalog, progress: Progress = lambda _: None
) -> Env:
    """A converter environment like `ensure_env`'s, but seeing the torch at `torch_site` (a
    measurement of torch-version sensitivity; never used to answer a question)."""
    release = catalog.release(version)
    path = env_folder(name)
    with locked(name, progress):
        env = read_manifest(path)
        if env is not None:
            return env
        _consented(release, name, False, progress)
        bytecode.stop(path / "bin" / "python")
        remove_env(path)
        return _build(release, catalog, path, torch_site, progress)


def deviations_with_evidence(env: Env, catalog: Catalog) -> list[str]:
    """An environment's recorded deviations, plus the torch measurement that justifies a torch
    deviation (for manifests written before the measurement was recorded)."""
    out = list(env.deviations)
    torch_deviation = any("without dependency resolution" in d for d in out)
    for c in catalog.torch_checks(env.converter):
        torch = base_version(env.packages.get("torch", ""))
        if torch_deviation and base_version(c.against) == torch and c.cited() not in out:
            out.append(c.cited())
    return out


def installed_envs() -> list[Env]:
    root = envs_dir()
    if not root.exists():
        return []
    found = (read_manifest(p) for p in sorted(root.glob("coreai-torch-*")) if p.is_dir())
    return [env for env in found if env is not None]


def damaged_envs() -> list[str]:
    """One line per environment whose manifest cannot be read (rebuilt on next use)."""
    root = envs_dir()
    if not root.exists():
        return []
    problems = (
        (p.name, manifest_problem(p)) for p in sorted(root.glob("coreai-torch-*")) if p.is_dir()
    )
    return [f"{name}: {why}; rebuilt on next use" for name, why in problems if why]


def python_ok() -> None:
    if sys.version_info[:2] != (3, 11):
        raise EnvError(
            f"converter environments need CPython 3.11 (coreai-core ships cp311 wheels only); "
            f"this is {sys.version.split()[0]}"
        )


__all__ = [
    "Env",
    "ensure_env",
    "ensure_venv",
    "installed_envs",
    "ready_env",
]
