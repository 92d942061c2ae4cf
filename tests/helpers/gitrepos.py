"""Small git repositories of coreai-torch's published sources, for `inventory bisect` and its
docs example (CI has no network, so not the upstream history)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61.0"]
build-backend = "setuptools.build_meta"

[project]
name = "coreai-torch"
dynamic = ["version"]
requires-python = ">=3.11"
dependencies = ["coreai-core==1.0.0b2"]

[tool.setuptools.dynamic]
version = {attr = "coreai_torch.__version__.__version__"}

[tool.setuptools.packages.find]
include = ["coreai_torch*"]

[tool.setuptools.package-data]
coreai_torch = ["py.typed"]
"""


# Fixed dates: a commit's hash is then the same in every run. With the clock's, one run in about
# 27 gave a short hash of digits only, which the docs examples' comparison reads as a number.
_DATES = {
    "GIT_AUTHOR_DATE": "2026-07-01T12:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-07-01T12:00:00+00:00",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, **_DATES},
    ).stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def set_version(repo: Path, version: str) -> None:
    """The version file says `version`, the rest of it (its header) as it was."""
    path = repo / "coreai_torch" / "__version__.py"
    text = path.read_text() if path.exists() else '__version__ = ""\n'
    path.write_text(re.sub(r'__version__ = "[^"]*"', f'__version__ = "{version}"', text))


def package_of(env_path: Path) -> Path:
    return next(env_path.glob("lib/python*/site-packages/coreai_torch"))


def put(repo: Path, package: Path) -> None:
    shutil.rmtree(repo / "coreai_torch", ignore_errors=True)
    shutil.copytree(
        package, repo / "coreai_torch", ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
    )


def init(repo: Path) -> None:
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")


def max_pool2d_history(repo: Path, old_env: Path, new_env: Path) -> tuple[str, str, str, str]:
    """0.4.1's published sources (tagged v0.4.1), a docs-only commit, 0.4.2's sources still
    saying 0.4.1 (the fix merged before the release), then the version bump (no tag: found by
    the bump). Returns the four commits."""
    init(repo)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    put(repo, package_of(old_env))
    base = commit(repo, "sync: v0.4.1 (#28)")
    git(repo, "tag", "v0.4.1")
    (repo / "README.md").write_text("how to install\n")
    docs = commit(repo, "Update documentation (#5)")
    put(repo, package_of(new_env))
    set_version(repo, "0.4.1")
    fix = commit(repo, "Bug fix: max_pool2d uses default stride value (#36)")
    set_version(repo, "0.4.2")
    bump = commit(repo, "update coreai torch version (#64)")
    return base, docs, fix, bump


def sign_head(repo: Path) -> str:
    """HEAD replaced by the same commit carrying a (never valid) PGP signature: what makes a
    `git log` that honours `log.showSignature` run the configured `gpg.program`."""
    head, _, message = git(repo, "cat-file", "commit", "HEAD").partition("\n\n")
    signature = (
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----"
    )
    signed = subprocess.run(
        ["git", "-C", str(repo), "hash-object", "-t", "commit", "-w", "--stdin"],
        input=f"{head}\n{signature}\n\n{message}\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    git(repo, "update-ref", "HEAD", signed)
    return signed
