"""Reading a coreai-torch git repository (bare or not) for `bisect`: the commit a release was
cut at, the first-parent history between two releases, a commit's tree, its pull request."""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

from inventory.errors import UsageError

VERSION_FILE = "coreai_torch/__version__.py"
_VERSION = re.compile(r"""__version__\s*=\s*["']([^"']+)["']""")
# a squash merge's subject ends "(#NN)"; a merge commit says "Merge pull request #NN"
_SQUASH = re.compile(r"\(#(\d+)\)\s*$")
_MERGE = re.compile(r"Merge pull request #(\d+)")


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    pr: str | None  # the pull request its message names, if any

    @property
    def short(self) -> str:
        return self.sha[:7]

    def label(self) -> str:
        return f"{self.short} (#{self.pr})" if self.pr else self.short


def pr_of(message: str) -> str | None:
    """The pull request a merge or squash message names."""
    lines = message.strip().splitlines()
    if lines and (m := _SQUASH.search(lines[0])):
        return m.group(1)
    m = _MERGE.search(message)
    return m.group(1) if m else None


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_dir():
            raise UsageError(f"--repo {path}: no such directory")
        probe = subprocess.run(["git", "-C", str(path), "rev-parse", "--git-dir"],
                               capture_output=True, text=True)
        if probe.returncode != 0:
            raise UsageError(f"--repo {path}: not a git repository")

    @property
    def name(self) -> str:
        """The repository by name, never by where it lies on this machine: its `origin` remote
        as owner/name (`https://github.com/apple/coreai-torch.git` -> `apple/coreai-torch`),
        else the folder's name."""
        proc = subprocess.run(["git", "-C", str(self.path), "remote", "get-url", "origin"],
                              capture_output=True, text=True)
        url = proc.stdout.strip().removesuffix("/").removesuffix(".git")
        parts = [p for p in re.split(r"[/:]", url) if p]
        if proc.returncode == 0 and len(parts) >= 2:
            return "/".join(parts[-2:])
        return self.path.resolve().name

    def git(self, *args: str) -> str:
        proc = subprocess.run(["git", "-C", str(self.path), *args], capture_output=True,
                              text=True)
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            raise UsageError(f"git {' '.join(args)} in {self.path}: "
                             f"{lines[-1] if lines else proc.returncode}")
        return proc.stdout

    def commit(self, rev: str) -> Commit:
        sha = self.git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
        message = self.git("log", "-1", "--format=%B", sha)
        return Commit(sha, message.strip().splitlines()[0] if message.strip() else "",
                      pr_of(message))

    def version_at(self, sha: str) -> str | None:
        proc = subprocess.run(["git", "-C", str(self.path), "show", f"{sha}:{VERSION_FILE}"],
                              capture_output=True, text=True)
        m = _VERSION.search(proc.stdout) if proc.returncode == 0 else None
        return m.group(1) if m else None

    def release_commit(self, version: str) -> tuple[Commit, str]:
        """The commit release `version` was cut at, and how it was found: its tag (`vX` or
        `X`), else the first commit of the first-parent history whose version file says it
        (the version bump; a release without a tag)."""
        for tag in (f"v{version}", version):
            ok = subprocess.run(["git", "-C", str(self.path), "rev-parse", "--verify", "--quiet",
                                 f"refs/tags/{tag}^{{commit}}"], capture_output=True, text=True)
            if ok.returncode == 0:
                return self.commit(ok.stdout.strip()), f"tag {tag}"
        heads = [h for h in self.git("for-each-ref", "--format=%(refname)", "refs/heads")
                 .split() if h]
        head = "HEAD" if subprocess.run(["git", "-C", str(self.path), "rev-parse", "--verify",
                                         "--quiet", "HEAD"], capture_output=True).returncode == 0 \
            else (heads[0] if heads else "")
        if not head:
            raise UsageError(f"--repo {self.path}: no commits")
        history = self.git("log", "--first-parent", "--reverse", "--format=%H", head,
                           "--", VERSION_FILE).split()
        for sha in history:
            if self.version_at(sha) == version:
                return self.commit(sha), f"version bump to {version} in {VERSION_FILE}"
        raise UsageError(f"--repo {self.path}: no tag v{version} and no commit of the "
                         f"first-parent history sets {VERSION_FILE} to {version}")

    def first_parent(self, old: Commit, new: Commit) -> list[Commit]:
        """The commits after `old` up to and including `new`, oldest first, on `new`'s
        first-parent line (each a merged change as the main branch saw it)."""
        if subprocess.run(["git", "-C", str(self.path), "merge-base", "--is-ancestor", old.sha,
                           new.sha], capture_output=True).returncode != 0:
            raise UsageError(f"{old.short} is not an ancestor of {new.short} in {self.path}")
        shas = self.git("rev-list", "--first-parent", "--reverse",
                        f"{old.sha}..{new.sha}").split()
        if old.sha not in self.git("rev-list", "--first-parent", new.sha).split():
            raise UsageError(f"{old.short} is not on the first-parent line of {new.short} in "
                             f"{self.path}")
        return [self.commit(s) for s in shas]

    def extract(self, sha: str, into: Path) -> Path:
        """The commit's tree, written under `into` (works for a bare repository)."""
        data = subprocess.run(["git", "-C", str(self.path), "archive", "--format=tar", sha],
                              capture_output=True, check=True).stdout
        into.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            tar.extractall(into, filter="data")
        return into
