"""Reading a git repository: every git the tool runs on a user's repository (`run_git`: the
converter's history for `bisect` and `draft`, a recipe checkout's commit for `trace` and
`verify`), and for `bisect` a coreai-torch repository (bare or not): the commit a release was
cut at, the first-parent history between two releases, a commit's tree, its pull request.

The repository is data, never code: git runs with the machine's and the user's configuration
unread and every key of the repository's that would run a program outranked (hooks, fsmonitor,
pager, signature verifiers, filter drivers, ssh, credential helpers), and a commit's files are
read as the blobs they are (`git cat-file`, which applies no filter: a smudge or `process`
filter the repository configures is never run, and `export-subst` never rewrites a file). Only
what an environment installs is written (the package folder and `pyproject.toml`), streamed
blob by blob into the store's scratch, each file and the whole tree capped (`MAX_FILE_BYTES`,
`MAX_TREE_BYTES`, `MAX_TREE_FILES`); a path leaving the folder or a symlink pointing out of the
tree is refused in one line.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from inventory.errors import UsageError
from oracle.infra import MAX_INPUT_BYTES

VERSION_FILE = "coreai_torch/__version__.py"
# What an environment of a commit installs, and so all that is read of its tree.
TREE_PATHS = ("coreai_torch", "pyproject.toml")
# The package is ~2 MB of Python: these are far above any real tree, far below harm.
MAX_FILE_BYTES = MAX_INPUT_BYTES  # 64 MiB
MAX_TREE_BYTES = 256 * 1024 * 1024
MAX_TREE_FILES = 20_000
_CHUNK = 1024 * 1024
# Configuration that would run a program, outranked by the command line's (which git reads last:
# a repository's own file cannot be skipped, only each of its keys outranked). It is given as
# `GIT_CONFIG_KEY_n`/`GIT_CONFIG_VALUE_n` pairs, the command line's scope without `-c`'s parse of
# `key=value`, so a driver name holding a `=` is outranked too.
_SAFE = {
    "core.fsmonitor": "false",
    "core.hooksPath": os.devnull,
    "core.untrackedCache": "false",
    "core.pager": "cat",
    "core.sshCommand": "false",
    "core.askPass": "",
    "core.attributesFile": os.devnull,
    "credential.helper": "",  # an empty value empties the list of helpers
    "log.showSignature": "false",
    "gpg.program": "false",
    "gpg.openpgp.program": "false",
    "gpg.x509.program": "false",
    "gpg.ssh.program": "false",
    "protocol.allow": "never",
}
# Commands that can print a diff or a signature: told not to run an external diff, a textconv
# driver or the signature's verifier, whatever a configuration says.
_NO_PROGRAMS = {
    "log": ("--no-show-signature", "--no-ext-diff", "--no-textconv"),
    "show": ("--no-show-signature", "--no-ext-diff", "--no-textconv"),
    "diff": ("--no-ext-diff", "--no-textconv"),
}
# The user's and the machine's configuration are not read at all. `GIT_*` variables of the
# caller's environment are dropped first (a `GIT_DIR`, a `GIT_EXTERNAL_DIFF`, a
# `GIT_CONFIG_PARAMETERS` of whatever started the tool).
_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_PAGER": "cat",
    "PAGER": "cat",
}
# A filter driver a repository configures (`filter.<name>.clean`, `.smudge`, `.process`) runs
# on a read of the work tree (`git status`); its name is the repository's, so the keys to
# outrank are read first (reading a configuration runs nothing).
_DRIVERS = r"^filter\..+\.(clean|smudge|process|required)$"
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


def _env(settings: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_ENV)
    env["GIT_CONFIG_COUNT"] = str(len(settings))
    for n, (key, value) in enumerate(settings.items()):
        env[f"GIT_CONFIG_KEY_{n}"] = key
        env[f"GIT_CONFIG_VALUE_{n}"] = value
    return env


def _argv(path: Path, args: tuple[str, ...]) -> list[str]:
    command = [*args[:1], *_NO_PROGRAMS.get(args[0], ()), *args[1:]] if args else []
    return ["git", "--no-pager", "-C", str(path), *command]


def _settings(path: Path) -> dict[str, str]:
    """`_SAFE`, and every filter driver the repository's configuration names emptied."""
    proc = subprocess.run(
        _argv(path, ("config", "--null", "--get-regexp", _DRIVERS)),
        capture_output=True,
        text=True,
        env=_env(_SAFE),
        timeout=60,
    )
    drivers = {
        entry.split("\n", 1)[0].rsplit(".", 1)[0]
        for entry in proc.stdout.split("\0")
        if entry.strip()
    }
    settings = dict(_SAFE)
    for driver in sorted(drivers):
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            settings[f"{driver}.{key}"] = value
    return settings


def run_git(
    path: Path, *args: str, timeout: float | None = None
) -> subprocess.CompletedProcess[str]:
    """`git ARGS` in the repository at `path`, its output as text. Every git the tool runs on
    a user's repository runs here (or in `run_git_bytes`, `popen_git`): the repository is data,
    and no program its configuration, the user's or the machine's names can run."""
    return subprocess.run(
        _argv(path, args),
        capture_output=True,
        text=True,
        env=_env(_settings(path)),
        timeout=timeout,
    )


def run_git_bytes(path: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """`git ARGS` as `run_git` runs it, its output as bytes (a blob, a `-z` listing)."""
    return subprocess.run(_argv(path, args), capture_output=True, env=_env(_settings(path)))


def popen_git(path: Path, *args: str) -> subprocess.Popen[bytes]:
    """`git ARGS` as `run_git` runs it, stdin and stdout piped (`cat-file --batch`)."""
    return subprocess.Popen(
        _argv(path, args),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_env(_settings(path)),
    )


class Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        if not path.is_dir():
            raise UsageError(f"--repo {path}: no such directory")
        probe = run_git(path, "rev-parse", "--git-dir")
        if probe.returncode != 0:
            raise UsageError(f"--repo {path}: not a git repository")

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_git(self.path, *args)

    @property
    def name(self) -> str:
        """The repository by name, never by where it lies on this machine: its `origin` remote
        as owner/name (`https://github.com/apple/coreai-torch.git` -> `apple/coreai-torch`),
        else the folder's name."""
        proc = self.run("remote", "get-url", "origin")
        url = proc.stdout.strip().removesuffix("/").removesuffix(".git")
        parts = [p for p in re.split(r"[/:]", url) if p]
        if proc.returncode == 0 and len(parts) >= 2:
            return "/".join(parts[-2:])
        return self.path.resolve().name

    def git(self, *args: str) -> str:
        proc = self.run(*args)
        if proc.returncode != 0:
            lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
            raise UsageError(
                f"git {' '.join(args)} in {self.path}: {lines[-1] if lines else proc.returncode}"
            )
        return proc.stdout

    def commit(self, rev: str) -> Commit:
        sha = self.git("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}").strip()
        message = self.git("log", "-1", "--format=%B", sha)
        return Commit(
            sha, message.strip().splitlines()[0] if message.strip() else "", pr_of(message)
        )

    def version_at(self, sha: str) -> str | None:
        """The version a commit's version file names, read as text (never run): a blob of at
        most 1 MiB, else no version."""
        size = self.run("cat-file", "-s", f"{sha}:{VERSION_FILE}")
        if (
            size.returncode != 0
            or not size.stdout.strip().isdigit()
            or int(size.stdout) > 1024 * 1024
        ):
            return None
        proc = run_git_bytes(self.path, "cat-file", "blob", f"{sha}:{VERSION_FILE}")
        text = proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else ""
        m = _VERSION.search(text)
        return m.group(1) if m else None

    def release_commit(self, version: str) -> tuple[Commit, str]:
        """The commit release `version` was cut at, and how it was found: its tag (`vX` or
        `X`), else the first commit of the first-parent history whose version file says it
        (the version bump; a release without a tag)."""
        for tag in (f"v{version}", version):
            ok = self.run("rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}")
            if ok.returncode == 0:
                return self.commit(ok.stdout.strip()), f"tag {tag}"
        heads = [
            h for h in self.git("for-each-ref", "--format=%(refname)", "refs/heads").split() if h
        ]
        head = (
            "HEAD"
            if self.run("rev-parse", "--verify", "--quiet", "HEAD").returncode == 0
            else (heads[0] if heads else "")
        )
        if not head:
            raise UsageError(f"--repo {self.path}: no commits")
        history = self.git(
            "log", "--first-parent", "--reverse", "--format=%H", head, "--", VERSION_FILE
        ).split()
        for sha in history:
            if self.version_at(sha) == version:
                return self.commit(sha), f"version bump to {version} in {VERSION_FILE}"
        raise UsageError(
            f"--repo {self.path}: no tag v{version} and no commit of the "
            f"first-parent history sets {VERSION_FILE} to {version}"
        )

    def first_parent(self, old: Commit, new: Commit) -> list[Commit]:
        """The commits after `old` up to and including `new`, oldest first, on `new`'s
        first-parent line (each a merged change as the main branch saw it)."""
        if self.run("merge-base", "--is-ancestor", old.sha, new.sha).returncode != 0:
            raise UsageError(f"{old.short} is not an ancestor of {new.short} in {self.path}")
        shas = self.git("rev-list", "--first-parent", "--reverse", f"{old.sha}..{new.sha}").split()
        if old.sha not in self.git("rev-list", "--first-parent", new.sha).split():
            raise UsageError(
                f"{old.short} is not on the first-parent line of {new.short} in {self.path}"
            )
        return [self.commit(s) for s in shas]

    def extract(self, sha: str, into: Path) -> Path:
        """The files of the commit's tree an environment installs (`TREE_PATHS`), written under
        `into` blob by blob (works for a bare repository); UsageError, one line, for a tree
        past the caps, a path out of the folder or a symlink out of the tree."""
        listing = run_git_bytes(
            self.path, "ls-tree", "-r", "-l", "-z", "--full-tree", sha, "--", *TREE_PATHS
        )
        if listing.returncode != 0:
            lines = listing.stderr.decode("utf-8", "replace").strip().splitlines()
            raise UsageError(
                f"git ls-tree {sha[:12]} in {self.path}: "
                f"{lines[-1] if lines else listing.returncode}"
            )
        entries = _entries(listing.stdout, sha)
        into.mkdir(parents=True, exist_ok=True)
        root = into.resolve()
        with popen_git(self.path, "cat-file", "--batch") as cat:
            assert cat.stdin is not None and cat.stdout is not None
            try:
                for mode, oid, _size, path in entries:
                    target = root.joinpath(*PurePosixPath(path).parts)
                    target.parent.mkdir(parents=True, exist_ok=True)
                    cat.stdin.write(f"{oid}\n".encode())
                    cat.stdin.flush()
                    header = cat.stdout.readline().split()
                    if len(header) != 3 or header[1] != b"blob":
                        raise UsageError(f"{sha[:12]}:{path} in {self.path}: not a blob")
                    size = int(header[2])
                    if mode == "120000":
                        link = cat.stdout.read(size).decode("utf-8", "replace")
                        _link(root, target, link, f"{sha[:12]}:{path}")
                    else:
                        _stream(cat.stdout, target, size, mode)
                    cat.stdout.read(1)  # the newline after each object
            finally:
                cat.stdin.close()
                cat.kill()
        return into


def _entries(listing: bytes, sha: str) -> list[tuple[str, str, int, str]]:
    """`ls-tree -r -l -z` output as (mode, object, size, path), submodules left out; the
    caps and every path checked before anything is written."""
    out: list[tuple[str, str, int, str]] = []
    total = 0
    for record in listing.split(b"\0"):
        if not record:
            continue
        meta, _, raw = record.partition(b"\t")
        mode, kind, oid, size = meta.decode().split()
        path = raw.decode("utf-8", "replace")
        if kind != "blob":
            continue  # a submodule: no files of this repository
        parts = PurePosixPath(path).parts
        if not parts or any(p in ("", ".", "..", ".git") for p in parts) or path.startswith("/"):
            raise UsageError(f"{sha[:12]}: a path that would leave its folder: {path!r}")
        length = int(size) if size.isdigit() else 0
        if length > MAX_FILE_BYTES:
            raise UsageError(
                f"{sha[:12]}:{path} is {length} bytes, more than the "
                f"{MAX_FILE_BYTES // (1024 * 1024)} MiB a tree's file may have"
            )
        total += length
        out.append((mode, oid, length, path))
    if len(out) > MAX_TREE_FILES:
        raise UsageError(
            f"{sha[:12]}: {len(out)} files under {', '.join(TREE_PATHS)}, more "
            f"than the {MAX_TREE_FILES} a tree may have"
        )
    if total > MAX_TREE_BYTES:
        raise UsageError(
            f"{sha[:12]}: {total} bytes under {', '.join(TREE_PATHS)}, more than "
            f"the {MAX_TREE_BYTES // (1024 * 1024)} MiB a tree may have"
        )
    return out


def _stream(source: object, target: Path, size: int, mode: str) -> None:
    """`size` bytes of a blob into `target`, a chunk at a time (never the blob whole)."""
    left = size
    with open(target, "wb") as handle:
        while left:
            chunk = source.read(min(_CHUNK, left))  # type: ignore[attr-defined]
            if not chunk:
                raise UsageError(f"{target.name}: git stopped before the end of the file")
            handle.write(chunk)
            left -= len(chunk)
    if mode == "100755":
        target.chmod(0o755)


def _link(root: Path, target: Path, link: str, where: str) -> None:
    """A symlink of the tree, kept only if it points inside the tree."""
    pointed = PurePosixPath(link)
    resolved = (
        Path(os.path.normpath(target.parent / Path(*pointed.parts)))
        if not pointed.is_absolute()
        else Path(link)
    )
    if pointed.is_absolute() or not resolved.is_relative_to(root):
        raise UsageError(f"{where} is a symlink out of the tree ({link}): refused, never followed")
    target.symlink_to(link)
