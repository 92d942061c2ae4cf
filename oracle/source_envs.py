"""Converter environments built from a source tree (a checkout of coreai-torch at one commit),
for attributing a change to the exact commit (`inventory bisect`).

A source tree is built with the pins of the release it descends from: the version its
`coreai_torch/__version__.py` names (a commit between two releases still says the older one; the
version-bump commit says the newer one, and gets that release's coreai-core). So a source
environment is that release's environment with the converter package swapped: a bare virtualenv
that sees, through `.pth` files, the shared torch and the release environment's site-packages
(coreai-core and every other pin, already installed), and holds only the tree's own `coreai_torch`,
installed with pip from a copy of the tree (the release environment's pip and setuptools, no
network, no dependency resolution). An environment per commit is seconds and a few megabytes.

The environment is named `coreai-torch-src-<NAME>` (default: the tree's digest) and its converter
label is `<version>+src.<digest>`, so stored comparisons of two trees at one version never share a
key. A tree whose own pyproject pins another coreai-core than the release does is built anyway,
and that is recorded as a deviation.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from oracle import env_files, installer
from oracle.atomic import write_text_atomic
from oracle.digests import files_digest
from oracle.envs import (
    MANIFEST,
    SHARED_TORCH_PTH,
    Env,
    ensure_env,
    locked,
    read_manifest,
    site_packages,
)
from oracle.paths import envs_dir
from oracle.progress import Progress
from oracle.releases import Catalog, EnvError, load_catalog

PREFIX = "coreai-torch-src-"
RELEASE_SITE_PTH = "_inventory_release_site.pth"
PACKAGE = "coreai_torch"
# What decides what the converter does: the package and how it is built.
_BUILD_FILES = ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in")
_VERSION = re.compile(r"""__version__\s*=\s*["']([^"']+)["']""")
_CORE_PIN = re.compile(r"""["']coreai-core\s*==\s*([^"';\s]+)["']""")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def source_version(tree: Path) -> str:
    """The release a source tree says it is (`coreai_torch/__version__.py`)."""
    path = tree / PACKAGE / "__version__.py"
    try:
        found = _VERSION.search(path.read_text())
    except (OSError, UnicodeDecodeError):
        found = None
    if found is None:
        raise EnvError(f"{tree} is not a coreai-torch source tree: no __version__ in "
                       f"{PACKAGE}/__version__.py")
    return found.group(1)


def declared_core(tree: Path) -> str | None:
    """The coreai-core pin the tree's own pyproject.toml declares, if any."""
    try:
        found = _CORE_PIN.search((tree / "pyproject.toml").read_text())
    except (OSError, UnicodeDecodeError):
        return None
    return found.group(1) if found else None


def _files(tree: Path) -> list[Path]:
    package = [p for p in sorted((tree / PACKAGE).rglob("*"))
               if p.is_file() and "__pycache__" not in p.parts]
    return package + [tree / n for n in _BUILD_FILES if (tree / n).is_file()]


def source_digest(tree: Path) -> str:
    """The package's files and the build files."""
    return files_digest(tree, _files(tree))


def package_digest(package: Path) -> str:
    """One installed or checked-out `coreai_torch` folder, so a commit's tree can be checked
    against a published wheel's installed files."""
    return files_digest(package, [p for p in sorted(package.rglob("*")) if p.is_file()
                             and "__pycache__" not in p.parts and p.suffix != ".pyc"])


def source_env_path(name: str) -> Path:
    return envs_dir() / f"{PREFIX}{name}"


def _usable(env: Env | None, digest: str) -> bool:
    """A built source environment of this very tree whose `.pth` targets still exist."""
    if env is None:
        return False
    try:
        data = json.loads((env.path / MANIFEST).read_text())
    except (OSError, ValueError):
        return False
    if data.get("source", {}).get("digest") != digest:
        return False
    pths = [p for name in (SHARED_TORCH_PTH, RELEASE_SITE_PTH)
            for p in env.path.glob(f"lib/python*/site-packages/{name}")]
    return len(pths) == 2 and all(Path(p.read_text().strip()).is_dir() for p in pths)


def ensure_source_env(tree: Path, name: str | None = None, catalog: Catalog | None = None,
                      progress: Progress = lambda _: None, commit: str = "") -> Env:
    """The environment of one source tree (built once; reused while the tree is the same)."""
    if not (tree / PACKAGE).is_dir():
        raise EnvError(f"{tree} is not a coreai-torch source tree (no {PACKAGE}/ folder)")
    if name is not None and not _NAME.fullmatch(name):
        raise EnvError(f"--name {name!r}: letters, digits, '.', '_' and '-' only (at most 64)")
    catalog = catalog or load_catalog()
    version = source_version(tree)
    release = catalog.release(version)  # a version the catalog has no pins for: one line
    digest = source_digest(tree)
    path = source_env_path(name or digest[:12])
    env = read_manifest(path)
    if _usable(env, digest):
        assert env is not None
        return env
    base = ensure_env(version, catalog, progress)
    with locked(path.name, progress):
        env = read_manifest(path)
        if _usable(env, digest):
            assert env is not None
            return env
        shutil.rmtree(path, ignore_errors=True)
        return _build(tree, path, base, release.core, version, digest, commit, progress)


def _build(tree: Path, path: Path, base: Env, core: str, version: str, digest: str,
           commit: str, progress: Progress) -> Env:
    log = path.parent / f"{path.name}.build.log"
    log.unlink(missing_ok=True)
    label = f"{version}+src.{digest[:10]}"
    progress(f"creating {path.name} (coreai-torch {label} on {base.name}'s pins)")
    tool = installer.chosen()
    # no pip of its own: the release environment's installs into it (--target)
    python = tool.venv(path, log, seed=False)
    site = site_packages(python)
    shared = json.loads((base.path / MANIFEST).read_text()).get("shared_torch", "")
    if not shared or not Path(shared).is_dir():
        raise EnvError(f"{base.name} has no shared torch to point at (rebuild it: "
                       f"`inventory envs build {version}`)")
    (site / SHARED_TORCH_PTH).write_text(f"{shared}\n")
    (site / RELEASE_SITE_PTH).write_text(f"{site_packages(base.python)}\n")
    # setuptools writes its egg-info into the tree it builds: build a copy, never the caller's
    with tempfile.TemporaryDirectory(prefix="inventory-src-") as tmp:
        copy = Path(tmp) / "src"
        shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".git", "__pycache__",
                                                                  "build", "*.egg-info"))
        tool.install(base.python, ["--no-deps", "--no-build-isolation", "--no-index", str(copy)],
                     log, f"coreai-torch from {tree}", target=site)
    where = subprocess.run(
        [str(python), "-c", "import coreai_torch, torch, coreai, json; "
                            "print(json.dumps([coreai_torch.__file__, coreai.__file__]))"],
        capture_output=True, text=True)
    if where.returncode != 0:
        lines = [ln for ln in where.stderr.splitlines() if ln.strip()]
        raise EnvError(f"{path.name} cannot import the converter it was built with: "
                       f"{lines[-1] if lines else where.returncode} (log: {log})")
    converter_file = Path(json.loads(where.stdout)[0]).resolve()
    if not converter_file.is_relative_to(site.resolve()):
        raise EnvError(f"{path.name} imports coreai_torch from {converter_file}, not from the "
                       f"tree it was built from (log: {log})")
    packages = dict(base.packages)
    packages["coreai-torch"] = label
    deviations = list(base.deviations)
    pinned = declared_core(tree)
    if pinned is not None and pinned != core:
        deviations.append(f"the tree's pyproject.toml pins coreai-core=={pinned}; built with "
                          f"coreai-torch {version}'s pin {core}")
    manifest = {
        "converter": label,
        "core": core,
        "packages": packages,
        "deviations": deviations,
        "shared_torch": shared,
        "installer": tool.label(),
        **env_files.record(path, env_files.snapshot(path, [site])),
        "source": {"tree": str(tree), "digest": digest, "version": version,
                   "release_env": base.name, "commit": commit},
    }
    write_text_atomic(path / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
    progress(f"{path.name} ready")
    env = read_manifest(path)
    assert env is not None
    return env


def source_of(env: Env) -> dict[str, str]:
    """What a source environment was built from (empty for a release's environment)."""
    try:
        data = json.loads((env.path / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    source = data.get("source")
    return source if isinstance(source, dict) else {}
