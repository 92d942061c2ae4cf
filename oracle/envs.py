"""Converter environments: one isolated virtualenv per coreai-torch release of the catalog
(`oracle/releases.py`).

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
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from oracle.atomic import write_text_atomic
from oracle.paths import envs_dir
from oracle.progress import Progress
from oracle.releases import Catalog, EnvError, Release, base_version, load_catalog
from oracle.settings import seconds

MANIFEST = "inventory-env.json"
SHARED_TORCH_PTH = "_inventory_shared_torch.pth"
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

    @property
    def name(self) -> str:
        return self.path.name  # coreai-torch-<version>, or a measurement's own environment

    @property
    def runtime(self) -> str:
        return f"linux-cpu, coreai-core {self.packages.get('coreai-core', self.core)}"


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


@contextmanager
def locked(name: str, progress: Progress = lambda _: None) -> Iterator[None]:
    """Serialise builds of one environment across processes. A waiter says once who holds the
    lock, and gives up after `lock_timeout()` seconds with one line naming the holder."""
    root = envs_dir()
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / f".{name}.lock", os.O_RDWR | os.O_CREAT, 0o644)
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
                        raise EnvError(
                            f"environment {name} is still locked by {_holder(fd)} after "
                            f"{limit:g} s (INVENTORY_LOCK_TIMEOUT); wait for it to finish, or "
                            f"stop it") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {' '.join(sys.argv)[:300]}\n".encode(), 0)
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def run_step(cmd: list[str], log: Path, what: str) -> str:
    """Run one install step, appending its output to the build log; fail with one line."""
    proc = subprocess.run(cmd, capture_output=True, text=True)
    with open(log, "a") as handle:
        handle.write(f"$ {' '.join(cmd)}\n{proc.stdout}{proc.stderr}\n")
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
        detail = lines[-1].strip() if lines else f"exit code {proc.returncode}"
        raise EnvError(f"could not install {what}: {detail} (log: {log}); where the package "
                       f"registry is reachable, `inventory envs build` builds environments "
                       f"ahead of time")
    return proc.stdout


def _pip(python: Path) -> list[str]:
    return [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input"]


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


def torch_install(version: str, name: str, options: list[str],
                  progress: Progress = lambda _: None) -> Path:
    """A `--target` install of torch==version under envs/NAME (reused once complete)."""
    target = envs_dir() / name
    if (target / MANIFEST).exists():  # no lock needed to reuse a complete install
        return target / "site"
    with locked(name, progress):
        if (target / MANIFEST).exists():
            return target / "site"
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        progress(f"installing torch {version} into {target}")
        run_step(
            _pip(Path(sys.executable))
            + ["install", "-q", *options, "--target", str(target / "site"), f"torch=={version}"],
            target / "build.log",
            f"torch=={version}",
        )
        write_text_atomic(target / MANIFEST, json.dumps({"torch": version}))
    return target / "site"


# Run inside a fresh environment: the requirements a distribution declares, with environment
# markers evaluated there, minus the ones the oracle provides itself.
_REQUIRES_SCRIPT = """
import importlib.metadata as md, json, sys
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
from pip._vendor.packaging.requirements import Requirement
v = md.version("torch")
bad = [r for r in sys.argv[1:] if not Requirement(r).specifier.contains(v, prereleases=True)]
print(json.dumps({"torch": v, "unsatisfied": bad}))
"""


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
    except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError, AttributeError,
            RecursionError) as exc:
        return f"damaged manifest {manifest} ({type(exc).__name__})"
    return None


def _env_of(path: Path, data: dict) -> Env:
    packages = data["packages"]
    if not isinstance(packages, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in packages.items()):
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


def _shared_pth(path: Path) -> Path | None:
    found = sorted(path.glob(f"lib/python*/site-packages/{SHARED_TORCH_PTH}"))
    return found[0] if found else None


def _imports_torch(python: Path) -> bool:
    try:
        return subprocess.run([str(python), "-c", "import torch"], capture_output=True,
                              timeout=600).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def _repointed(env: Env, catalog: Catalog, progress: Progress) -> Env | None:
    """The environment, its shared-torch `.pth` pointing at the shared torch of the store it is
    in now (after the store moved); None if it cannot be re-pointed (then it is rebuilt)."""
    pth = _shared_pth(env.path)
    root = envs_dir()
    if pth is None or not env.path.resolve().is_relative_to(root.resolve()):
        return env  # not ours to change (another store's environment, reached by a symlink)
    try:
        recorded = json.loads((env.path / MANIFEST).read_text()).get("shared_torch", "")
        current = pth.read_text().strip()
    except (OSError, ValueError, AttributeError):
        return None
    name = Path(recorded).parent.name if recorded else f"torch-{catalog.torch}"
    wanted = root / name / "site"
    if current and Path(current).resolve() == wanted.resolve() and wanted.is_dir():
        return env
    if name == f"torch-{catalog.torch}":
        wanted = shared_torch(catalog, progress)
    if not wanted.is_dir():
        return None
    progress(f"re-pointing {env.name} at the shared torch {wanted}")
    write_text_atomic(pth, f"{wanted}\n")  # a new file: a hard-linked copy's stays as it was
    if not _imports_torch(env.python):
        return None
    data = json.loads((env.path / MANIFEST).read_text())
    data["shared_torch"] = str(wanted)
    write_text_atomic(env.path / MANIFEST, json.dumps(data, indent=2, sort_keys=True))
    return env


def env_path(version: str) -> Path:
    return envs_dir() / f"coreai-torch-{version}"


def ready_env(version: str) -> Env | None:
    """The environment if it is fully built, else None (never a half-built one)."""
    return read_manifest(env_path(version))


def ensure_env(
    version: str, catalog: Catalog | None = None, progress: Progress = lambda _: None
) -> Env:
    """Create or reuse the environment for one coreai-torch release."""
    catalog = catalog or load_catalog()
    release = catalog.release(version)
    path = env_path(version)
    env = read_manifest(path)
    if env is not None:
        env = _repointed(env, catalog, progress)
        if env is not None:
            return env
    torch_site = shared_torch(catalog, progress)
    with locked(path.name, progress):
        env = read_manifest(path)  # another process may have built it while we waited
        if env is not None:
            env = _repointed(env, catalog, progress)
            if env is not None:
                return env
            progress(f"{path.name} cannot import the shared torch: rebuilding it")
        shutil.rmtree(path, ignore_errors=True)  # a half-built leftover is never used
        return _build(release, catalog, path, torch_site, progress)


def _build(
    release: Release, catalog: Catalog, path: Path, torch_site: Path, progress: Progress
) -> Env:
    log = path.parent / f"{path.name}.build.log"
    log.unlink(missing_ok=True)
    progress(f"creating {path.name}")
    run_step([sys.executable, "-m", "venv", str(path)], log, f"a virtualenv at {path}")
    python = path / "bin" / "python"
    (site_packages(python) / SHARED_TORCH_PTH).write_text(f"{torch_site}\n")

    progress(f"installing coreai-torch {release.converter}")
    converter_req = f"coreai-torch=={release.converter}"
    # Without dependency resolution: the converter's own torch bound is not honoured (it is
    # recorded as a deviation below); torch comes from the shared install.
    run_step(_pip(python) + ["install", "-q", "--no-deps", converter_req], log, converter_req)
    requires = json.loads(
        run_step([str(python), "-c", _REQUIRES_SCRIPT, "coreai-torch", "torch"], log,
             "the converter's requirement list")
    )
    provided = {"torch", "coreai-core"}
    wanted = [
        req
        for dist in ("coreai-torch", "torch")
        for req in requires[dist]
        if _requirement_name(req) not in provided
    ]
    declared_torch = [r for r in requires["coreai-torch"] if _requirement_name(r) == "torch"]
    core_req = f"coreai-core=={release.core}"
    progress(f"installing {core_req} and dependencies")
    run_step(
        _pip(python)
        + ["install", "-q", core_req, *wanted, *release.extra, *WORKER_REQUIREMENTS],
        log,
        f"{core_req} for coreai-torch {release.converter}",
    )
    freeze = run_step(_pip(python) + ["list", "--format", "json"], log, "the package list")
    packages = {p["name"].lower(): p["version"] for p in json.loads(freeze)}
    check = json.loads(
        run_step([str(python), "-c", _TORCH_CHECK_SCRIPT, *declared_torch], log,
             "torch (the shared install is not visible)")
    )
    packages["torch"] = check["torch"]
    deviations = [
        f"coreai-torch {release.converter} declares {req}; installed beside torch "
        f"{check['torch']} without dependency resolution"
        for req in check["unsatisfied"]
    ]
    deviations += [c.cited() for c in catalog.torch_checks(release.converter)
                   if deviations and base_version(c.against) == base_version(check["torch"])]
    if packages.get("coreai-core") != release.core:
        raise EnvError(
            f"coreai-torch {release.converter}: expected coreai-core {release.core}, "
            f"got {packages.get('coreai-core')}"
        )
    manifest = {
        "converter": release.converter,
        "core": release.core,
        "packages": packages,
        "deviations": deviations,
        "shared_torch": str(torch_site),
    }
    write_text_atomic(path / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
    progress(f"{path.name} ready")
    env = read_manifest(path)
    assert env is not None
    return env


def ensure_venv(name: str, requirements: tuple[str, ...], catalog: Catalog,
                progress: Progress = lambda _: None) -> Path:
    """A virtualenv under envs/ that sees the shared torch, with torch's own requirements and
    `requirements` installed; its python. For code that must run against other package versions
    than the project's own (a recipe's pinned transformers), never for a converter."""
    path = envs_dir() / name
    python = path / "bin" / "python"
    torch_site = shared_torch(catalog, progress)
    with locked(name, progress):
        if (path / MANIFEST).exists():
            return python
        shutil.rmtree(path, ignore_errors=True)  # a half-built leftover is never used
        log = path.parent / f"{name}.build.log"
        log.unlink(missing_ok=True)
        progress(f"creating {name} ({', '.join(requirements)})")
        run_step([sys.executable, "-m", "venv", str(path)], log, f"a virtualenv at {path}")
        (site_packages(python) / SHARED_TORCH_PTH).write_text(f"{torch_site}\n")
        torch_requires = json.loads(run_step([str(python), "-c", _REQUIRES_SCRIPT, "torch"], log,
                                         "torch's requirement list"))["torch"]
        run_step(_pip(python) + ["install", "-q", *torch_requires, *requirements], log,
             " ".join(requirements))
        freeze = run_step(_pip(python) + ["list", "--format", "json"], log, "the package list")
        packages = {p["name"].lower(): p["version"] for p in json.loads(freeze)}
        write_text_atomic(path / MANIFEST, json.dumps(
            {"requirements": list(requirements), "packages": packages,
             "shared_torch": str(torch_site)}, indent=2, sort_keys=True))
        progress(f"{name} ready")
    return python


def ensure_env_on_torch(version: str, name: str, torch_site: Path, catalog: Catalog,
                        progress: Progress = lambda _: None) -> Env:
    """A converter environment like `ensure_env`'s, but seeing the torch at `torch_site` (a
    measurement of torch-version sensitivity; never used to answer a question)."""
    release = catalog.release(version)
    path = envs_dir() / name
    with locked(name, progress):
        env = read_manifest(path)
        if env is not None:
            return env
        shutil.rmtree(path, ignore_errors=True)
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
    problems = ((p.name, manifest_problem(p)) for p in sorted(root.glob("coreai-torch-*"))
                if p.is_dir())
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
