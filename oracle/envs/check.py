"""Before anything runs in an environment, its files are checked against what its build recorded
(`oracle/envs/files.py`): a changed or damaged environment is rebuilt, said so, and never used as
it is. So are the environments it reads through its `.pth` files (the shared torch; a source
environment's release environment). Once per environment per process: a worker started again in
it is not checked again.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path

from oracle.catalog.releases import EnvError, load_catalog
from oracle.envs import environment as envs
from oracle.envs.environment import MANIFEST, Env, changed_line, files_changed, locked
from oracle.envs.source import PREFIX, ensure_source_env
from oracle.infra.paths import envs_dir
from oracle.infra.progress import Notice, Progress

_CHECKED: set[Path] = set()
_GUARD = threading.Lock()


def _manifest(path: Path) -> dict:
    try:
        data = json.loads((path / MANIFEST).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _unchecked(path: Path) -> bool:
    with _GUARD:
        return path.resolve() not in _CHECKED


def _mark(path: Path) -> None:
    with _GUARD:
        _CHECKED.add(path.resolve())


def _forget_manifest(path: Path) -> None:
    """Make the environment half-built (its manifest gone), so its builder builds it again."""
    with locked(path.name):
        (path / MANIFEST).unlink(missing_ok=True)


def _torch_checked(site: str, progress: Progress) -> None:
    """The shared torch an environment sees: rebuilt if its files changed."""
    if not site:
        return
    folder = Path(site).parent
    if not (folder / MANIFEST).exists() or not _unchecked(folder):
        return
    problems = files_changed(folder)
    if problems:
        progress(Notice(changed_line(folder.name, problems)))
        data = _manifest(folder)
        _forget_manifest(folder)
        envs.torch_install(
            str(data.get("torch", "")),
            folder.name,
            list(data.get("options", ["--no-deps"])),
            progress,
        )
    _mark(folder)


def verified(env: Env, progress: Progress = lambda _: None) -> Env:
    """`env` if it is as built, else the same environment rebuilt. Only environments under this
    store's envs/ are checked: another store's (reached by a symlink) is not this run's to
    rebuild."""
    if not _unchecked(env.path) or not env.path.resolve().is_relative_to(envs_dir().resolve()):
        return env
    data = _manifest(env.path)
    _torch_checked(str(data.get("shared_torch", "")), progress)
    source = data.get("source") if isinstance(data.get("source"), dict) else None
    if source and source.get("release_env"):
        base = envs.read_manifest(envs_dir() / str(source["release_env"]))
        if base is not None:
            verified(base, progress)
    problems = files_changed(env.path)
    if problems:
        progress(Notice(changed_line(env.name, problems)))
        env = _rebuilt(env, data, progress)
    _mark(env.path)
    return env


def _rebuilt(env: Env, data: dict, progress: Progress) -> Env:
    _forget_manifest(env.path)
    source = data.get("source") if isinstance(data.get("source"), dict) else None
    if source:
        tree = Path(str(source.get("tree", "")))
        if not tree.is_dir():
            raise EnvError(
                f"{env.name} changed since it was built and the tree it was built "
                f"from ({tree}) is gone: build it again with `inventory envs build "
                f"--from-source DIR`"
            )
        return ensure_source_env(
            tree,
            env.name.removeprefix(PREFIX),
            progress=progress,
            commit=str(source.get("commit", "")),
        )
    catalog = load_catalog()
    if env.converter in catalog.releases and env.path == envs.env_path(env.converter, catalog):
        return envs.ensure_env(env.converter, catalog, progress)
    return envs.ensure_env_on_torch(
        env.converter, env.path.name, Path(str(data.get("shared_torch", ""))), catalog, progress
    )
