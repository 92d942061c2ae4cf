"""Converter environments built from a source tree (a checkout of coreai-torch at one commit),
for attributing a change to the exact commit (`inventory bisect`).

A source tree is built with the pins of the release it descends from: the version its
`coreai_torch/__version__.py` names, read as text (a commit between two releases still says the
older one; the version-bump commit says the newer one, and gets that release's coreai-core). So
a source environment is that release's environment with the converter package swapped: a bare
virtualenv that sees, through `.pth` files, the shared torch and the release environment's
site-packages (coreai-core and every other pin, already installed), and holds only the tree's
own `coreai_torch`. An environment per commit is seconds and a few megabytes.

Building runs none of the tree's code: coreai-torch is pure Python, so its package folder is
copied file by file and the distribution's metadata written (`install_package`), as a wheel
would install it; `setup.py`, a PEP 517 backend and the package's own modules are never run or
imported. A tree holding native sources or binaries cannot be installed that way: it is built
with pip (running its build code) only with `--allow-code`. Every file read from the tree is
a regular file under a size cap, a symlink is followed only inside the tree, and the tree's
digest is over exactly the files installed (so a file reached through a symlinked folder
counts, and a changed tree never reuses an environment).

The environment is named `coreai-torch-src-<NAME>` (default: the tree's digest) and its converter
label is `<version>+src.<digest>`, so stored comparisons of two trees at one version never share a
key. A tree whose own pyproject pins another coreai-core than the release does is built anyway,
and that is recorded as a deviation.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import stat
import subprocess
from pathlib import Path

from oracle.catalog.releases import Catalog, EnvError, load_catalog
from oracle.envs import files as env_files
from oracle.envs import held_torch, installer
from oracle.envs.environment import (
    MANIFEST,
    SHARED_TORCH_PTH,
    Env,
    ensure_env,
    env_folder,
    locked,
    read_manifest,
    remove_env,
    site_packages,
)
from oracle.infra.atomic import write_text_atomic
from oracle.infra.inputfile import MAX_INPUT_BYTES, read_bytes, read_text
from oracle.infra.progress import Progress
from oracle.infra.scratch_dirs import scratch

PREFIX = "coreai-torch-src-"
RELEASE_SITE_PTH = "_inventory_release_site.pth"
PACKAGE = "coreai_torch"
_VERSION = re.compile(r"""__version__\s*=\s*["']([^"']+)["']""")
# The package is ~2 MB of Python: far above any real tree, far below harm to the machine.
MAX_FILE_BYTES = MAX_INPUT_BYTES  # 64 MiB
MAX_TREE_BYTES = 256 * 1024 * 1024
MAX_TREE_FILES = 20_000
MAX_TEXT_BYTES = 1024 * 1024  # the version file and pyproject.toml, read as text
# A package holding these is not pure Python: installing it means running its build.
_NATIVE = (".c", ".cc", ".cpp", ".cxx", ".pyx", ".pxd", ".so", ".pyd", ".dylib", ".cu", ".m", ".mm")
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_CORE_PIN = re.compile(r"""["']coreai-core\s*==\s*([^"';\s]+)["']""")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _inside(tree: Path, path: Path, rel: str) -> Path:
    """`path` with its symlinks resolved, if that lies inside the tree; else EnvError, one line
    (the target is never read)."""
    try:
        real = path.resolve(strict=True)
    except RuntimeError:  # Python 3.11: a symlink loop
        raise EnvError(f"{tree}: {rel} is a symlink loop") from None
    except OSError as exc:
        raise EnvError(f"{tree}: {rel}: {exc.strerror or exc}") from None
    if not real.is_relative_to(tree.resolve()):
        raise EnvError(
            f"{tree}: {rel} is a symlink out of the tree ({real}): refused, never followed"
        )
    return real


def _text(tree: Path, rel: str) -> str | None:
    """A small text file of the tree (regular, inside it, at most 1 MiB); None if absent."""
    path = tree / rel
    if not os.path.lexists(path):
        return None
    return read_text(_inside(tree, path, rel), EnvError, MAX_TEXT_BYTES)


def source_version(tree: Path) -> str:
    """The release a source tree says it is (`coreai_torch/__version__.py`, read as text)."""
    text = _text(tree, f"{PACKAGE}/__version__.py")
    found = _VERSION.search(text) if text is not None else None
    if found is None:
        raise EnvError(
            f"{tree} is not a coreai-torch source tree: no __version__ in {PACKAGE}/__version__.py"
        )
    return found.group(1)


def declared_core(tree: Path) -> str | None:
    """The coreai-core pin the tree's own pyproject.toml declares, if any."""
    text = _text(tree, "pyproject.toml")
    found = _CORE_PIN.search(text) if text is not None else None
    return found.group(1) if found else None


def package_files(tree: Path) -> list[tuple[str, Path]]:
    """Every file the environment installs: (its path in site-packages, the regular file it is
    read from), sorted. Symlinks are followed inside the tree (a folder reached through one is
    installed like any other) and refused out of it or in a loop; anything but a regular file,
    a file past the cap or a tree past its caps is refused. `__pycache__` is left out."""
    root = _inside(tree, tree / PACKAGE, PACKAGE)
    out: list[tuple[str, Path]] = []
    total = 0

    def walk(folder: Path, rel: str, chain: frozenset[Path]) -> None:
        nonlocal total
        if folder in chain:
            raise EnvError(f"{tree}: {rel} is a symlink loop")
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            raise EnvError(f"{tree}: {rel}: {exc.strerror or exc}") from None
        for name in names:
            if name == "__pycache__" or name.endswith(".pyc"):
                continue
            path, here = folder / name, f"{rel}/{name}"
            real = _inside(tree, path, here) if path.is_symlink() else path
            info = real.stat()
            if stat.S_ISDIR(info.st_mode):
                walk(real, here, chain | {folder})
                continue
            if not stat.S_ISREG(info.st_mode):
                kind = next((k for test, k in _KINDS if test(info.st_mode)), "not a file")
                raise EnvError(f"{tree}: {here} is not a regular file ({kind})")
            if info.st_size > MAX_FILE_BYTES:
                raise EnvError(
                    f"{tree}: {here} is {info.st_size} bytes, more than the "
                    f"{MAX_FILE_BYTES // (1024 * 1024)} MiB a tree's file may have"
                )
            total += info.st_size
            out.append((here, real))
            if len(out) > MAX_TREE_FILES or total > MAX_TREE_BYTES:
                raise EnvError(
                    f"{tree}: {PACKAGE}/ holds more than {MAX_TREE_FILES} files or "
                    f"{MAX_TREE_BYTES // (1024 * 1024)} MiB"
                )

    walk(root, PACKAGE, frozenset())
    return out


def source_digest(tree: Path, files: list[tuple[str, Path]] | None = None) -> str:
    """Exactly what the environment installs: each file's path in site-packages and bytes, and
    the coreai-core pin the tree declares (recorded as a deviation)."""
    h = hashlib.sha256()
    for rel, real in files if files is not None else package_files(tree):
        h.update(rel.encode() + b"\0" + read_bytes(real, EnvError, MAX_FILE_BYTES) + b"\0")
    h.update(f"core-pin:{declared_core(tree)}".encode())
    return h.hexdigest()


def native_files(files: list[tuple[str, Path]]) -> list[str]:
    """The package's files that mean it is not pure Python (sources to compile, binaries)."""
    return [rel for rel, _ in files if rel.endswith(_NATIVE)]


def install_package(files: list[tuple[str, Path]], site: Path, version: str) -> None:
    """The tree's package installed as its wheel would be, running nothing: every file copied
    into site-packages, then the distribution's metadata (METADATA, INSTALLER, RECORD)."""
    record = []
    for rel, real in files:
        data = read_bytes(real, EnvError, MAX_FILE_BYTES)
        target = site / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{rel},sha256={digest},{len(data)}")
    info = site / f"{PACKAGE}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: coreai-torch\nVersion: {version}\n"
    )
    (info / "INSTALLER").write_text("inventory (files copied, no build run)\n")
    record += [f"{info.name}/{n}" + ",," for n in ("METADATA", "INSTALLER", "RECORD")]
    (info / "RECORD").write_text("\n".join(record) + "\n")


def package_digest(folder: Path) -> str:
    """The `coreai_torch` package under `folder` (a checked-out tree, or the site-packages a
    published wheel installed into), so a commit's tree can be checked against the wheel."""
    h = hashlib.sha256()
    for rel, real in package_files(folder):
        h.update(rel.encode() + b"\0" + read_bytes(real, EnvError, MAX_FILE_BYTES) + b"\0")
    return h.hexdigest()


def source_env_path(name: str) -> Path:
    return env_folder(f"{PREFIX}{name}")


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
    pths = [
        p
        for name in (SHARED_TORCH_PTH, RELEASE_SITE_PTH)
        for p in env.path.glob(f"lib/python*/site-packages/{name}")
    ]
    return len(pths) == 2 and all(Path(p.read_text().strip()).is_dir() for p in pths)


def ensure_source_env(
    tree: Path,
    name: str | None = None,
    catalog: Catalog | None = None,
    progress: Progress = lambda _: None,
    commit: str = "",
    allow_code: bool = False,
) -> Env:
    """The environment of one source tree (built once; reused while the tree is the same).
    Nothing of the tree runs, unless it is not pure Python and `allow_code` lets its build
    run."""
    if not os.path.lexists(tree / PACKAGE) or not (tree / PACKAGE).is_dir():
        raise EnvError(f"{tree} is not a coreai-torch source tree (no {PACKAGE}/ folder)")
    if name is not None and not _NAME.fullmatch(name):
        raise EnvError(f"--name {name!r}: letters, digits, '.', '_' and '-' only (at most 64)")
    catalog = catalog or load_catalog()
    version = source_version(tree)
    release = catalog.release(version)  # a version the catalog has no pins for: one line
    files = package_files(tree)
    native = native_files(files)
    if native and not allow_code:
        raise EnvError(
            f"{tree}: {PACKAGE}/ is not pure Python ({native[0]}): installing it "
            "means running its build code, refused without --allow-code"
        )
    digest = source_digest(tree, files)
    path = source_env_path(name or digest[:12])
    env = read_manifest(path)
    if _usable(env, digest):
        assert env is not None
        return env
    base = ensure_env(version, catalog, progress, allow_code=allow_code)
    with locked(path.name, progress):
        env = read_manifest(path)
        if _usable(env, digest):
            assert env is not None
            return env
        remove_env(path)
        return _build(tree, files, path, base, release.core, version, digest, commit, progress)


def _build(
    tree: Path,
    files: list[tuple[str, Path]],
    path: Path,
    base: Env,
    core: str,
    version: str,
    digest: str,
    commit: str,
    progress: Progress,
) -> Env:
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
        raise EnvError(
            f"{base.name} has no shared torch to point at (rebuild it: "
            f"`inventory envs build {version}`)"
        )
    (site / SHARED_TORCH_PTH).write_text(f"{shared}\n")
    (site / RELEASE_SITE_PTH).write_text(f"{site_packages(base.python)}\n")
    if native_files(files):  # consented (`ensure_source_env`): its build must run
        _pip_install(files, site, base, log, tree, tool)
    else:
        install_package(files, site, version)
    # where the converter would be imported from, found without running it (find_spec does
    # not execute a top-level package); torch and coreai are the release's own
    where = subprocess.run(
        [
            str(python),
            "-c",
            "import importlib.util, json, torch, coreai; "
            "print(json.dumps([importlib.util.find_spec('coreai_torch').origin,"
            " coreai.__file__]))",
        ],
        capture_output=True,
        text=True,
    )
    if where.returncode != 0:
        lines = [ln for ln in where.stderr.splitlines() if ln.strip()]
        raise EnvError(
            f"{path.name} cannot find the converter it was built with: "
            f"{lines[-1] if lines else where.returncode} (log: {log})"
        )
    held_torch.check_held(python, Path(shared), log, path.name)
    converter_file = Path(json.loads(where.stdout)[0]).resolve()
    if not converter_file.is_relative_to(site.resolve()):
        raise EnvError(
            f"{path.name} imports coreai_torch from {converter_file}, not from the "
            f"tree it was built from (log: {log})"
        )
    packages = dict(base.packages)
    packages["coreai-torch"] = label
    deviations = list(base.deviations)
    pinned = declared_core(tree)
    how = (
        "built by its own build code (--allow-code)"
        if native_files(files)
        else "files copied, no build code run"
    )
    if pinned is not None and pinned != core:
        deviations.append(
            f"the tree's pyproject.toml pins coreai-core=={pinned}; built with "
            f"coreai-torch {version}'s pin {core}"
        )
    manifest = {
        "converter": label,
        "core": core,
        "packages": packages,
        "deviations": deviations,
        "shared_torch": shared,
        "installer": tool.label(),
        **env_files.record(path, env_files.snapshot(path, [site])),
        "source": {
            "tree": str(tree),
            "digest": digest,
            "version": version,
            "release_env": base.name,
            "commit": commit,
            "installed": how,
        },
    }
    write_text_atomic(path / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True))
    progress(f"{path.name} ready")
    env = read_manifest(path)
    assert env is not None
    return env


def _pip_install(
    files: list[tuple[str, Path]],
    site: Path,
    base: Env,
    log: Path,
    tree: Path,
    tool: installer.Installer,
) -> None:
    """A tree that is not pure Python, built by pip (its build code runs: only with consent)
    from a copy of what would be installed plus its build files, in the store's scratch."""
    with scratch("src") as tmp:
        copy = tmp / "src"
        for rel, real in files:
            (copy / rel).parent.mkdir(parents=True, exist_ok=True)
            (copy / rel).write_bytes(read_bytes(real, EnvError, MAX_FILE_BYTES))
        for name in ("pyproject.toml", "setup.py", "setup.cfg", "MANIFEST.in"):
            text = _text(tree, name)
            if text is not None:
                (copy / name).write_text(text)
        tool.install(
            base.python,
            ["--no-deps", "--no-build-isolation", "--no-index", str(copy)],
            log,
            f"coreai-torch from {tree}",
            target=site,
        )


def source_of(env: Env) -> dict[str, str]:
    """What a source environment was built from (empty for a release's environment)."""
    try:
        data = json.loads((env.path / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    source = data.get("source")
    return source if isinstance(source, dict) else {}
