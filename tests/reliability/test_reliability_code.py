"""Reliability IV, parts 1, 3 and 4: no code from a source tree or a repository runs without
consent, a source tree's digest is over exactly what is installed, and every read of a foreign
tree is bounded, with its scratch in the store.

Every hostile input is built here: trees whose `setup.py`, in-tree build backend, package
`__init__.py` and `__version__.py` each write a marker file when run; a repository whose
configuration sets a smudge filter, an fsmonitor and hooks that would write one; symlinks out
of a tree, loops, FIFOs, `/dev/zero`, files past the caps (sparse, so nothing large is written).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from cli import ROOT, invoke, one_line
from gitrepos import PYPROJECT, commit, git, init, sign_head

from inventory import bisect as bisect_module
from inventory import gitrepo
from inventory.errors import UsageError
from inventory.gitrepo import Repo
from oracle.envs.source import package_files, source_digest
from oracle.infra.paths import envs_dir


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    ).stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _marker_code(marker: Path, what: str) -> str:
    return f"open({str(marker)!r}, 'a').write({what!r} + '\\n')\n"


def hostile_tree(root: Path, marker: Path, version: str = "0.4.1") -> Path:
    """A coreai-torch tree every part of whose build or import would write `marker`: its
    `setup.py`, an in-tree PEP 517 backend, the package's `__init__.py` and `__version__.py`.
    It also holds a subpackage reached through a symlinked folder inside the tree."""
    pkg = root / "coreai_torch"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(_marker_code(marker, "__init__ imported"))
    (pkg / "__version__.py").write_text(
        _marker_code(marker, "__version__ imported") + f'__version__ = "{version}"\n'
    )
    (pkg / "py.typed").write_text("")
    (root / "setup.py").write_text(
        _marker_code(marker, "setup.py run") + f"import os\nos.system('echo shell >> {marker}')\n"
    )
    (root / "backend.py").write_text(_marker_code(marker, "backend imported"))
    (root / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "coreai-torch"\ndynamic = ["version"]\n'
    )
    elsewhere = root / "vendored" / "extra"
    elsewhere.mkdir(parents=True)
    (elsewhere / "__init__.py").write_text("VALUE = 1\n")
    (pkg / "extra").symlink_to(Path("..") / "vendored" / "extra")
    return root


# ---- consent ------------------------------------------------------------------------------


def test_bisect_without_allow_code_is_refused_before_anything_runs(tmp_path):
    marker = tmp_path / "ran"
    repo = hostile_tree(tmp_path / "repo", marker)
    _git(repo, "init", "-q", "-b", "main")
    _commit(repo, "release")
    _git(repo, "tag", "v0.4.1")
    ran = invoke(
        "bisect",
        "--from",
        "0.4.1",
        "--to",
        "0.4.2",
        "--repo",
        str(repo),
        "-q",
        INVENTORY_CACHE=str(tmp_path / "store"),
    )
    assert ran.returncode == 2
    assert "refused without --allow-code" in one_line(ran)
    assert not marker.exists() and not (tmp_path / "store").exists()


def test_a_tree_that_is_not_pure_python_is_refused_without_allow_code(tmp_path):
    marker = tmp_path / "ran"
    tree = hostile_tree(tmp_path / "tree", marker)
    (tree / "coreai_torch" / "_fast.pyx").write_text("def f(): pass\n")
    ran = invoke("envs", "build", "--from-source", str(tree))
    assert ran.returncode == 2
    line = one_line(ran)
    assert "not pure Python (coreai_torch/_fast.pyx)" in line and "--allow-code" in line
    assert not marker.exists()


def test_a_source_tree_is_installed_without_running_any_of_its_code(env, tmp_path):
    """`envs build --from-source` of the hostile tree: built by copying the package's files
    (the symlinked subpackage included) and writing its metadata; no marker is written. The
    same tree with the file behind the symlink changed gets another environment."""
    env("0.4.1")
    marker = tmp_path / "ran"
    tree = hostile_tree(tmp_path / "tree", marker)
    ran = invoke("envs", "build", "--from-source", str(tree))
    assert ran.returncode == 0, ran.stderr
    assert not marker.exists(), marker.read_text()
    name = ran.stdout.split(":")[0]
    path = envs_dir() / name
    site = next(path.glob("lib/python*/site-packages"))
    assert (site / "coreai_torch" / "extra" / "__init__.py").read_text() == "VALUE = 1\n"
    assert not (site / "coreai_torch" / "extra").is_symlink()
    meta = (site / "coreai_torch-0.4.1.dist-info" / "METADATA").read_text()
    assert "Name: coreai-torch" in meta and "Version: 0.4.1" in meta
    manifest = json.loads((path / "inventory-env.json").read_text())
    assert manifest["source"]["installed"] == "files copied, no build code run"
    # the subpackage behind the symlink changes: the digest, and so the environment, too
    (tree / "vendored" / "extra" / "__init__.py").write_text("VALUE = 2\n")
    again = invoke("envs", "build", "--from-source", str(tree))
    assert again.returncode == 0, again.stderr
    other = envs_dir() / again.stdout.split(":")[0]
    assert other != path
    assert (
        next(other.glob("lib/python*/site-packages")) / "coreai_torch" / "extra" / "__init__.py"
    ).read_text() == "VALUE = 2\n"
    assert not marker.exists()


# ---- what a tree's digest covers ------------------------------------------------------------


def test_the_digest_covers_a_subpackage_behind_a_symlinked_folder(tmp_path):
    tree = hostile_tree(tmp_path / "tree", tmp_path / "ran")
    listed = [rel for rel, _ in package_files(tree)]
    assert "coreai_torch/extra/__init__.py" in listed
    before = source_digest(tree)
    (tree / "vendored" / "extra" / "__init__.py").write_text("VALUE = 2\n")
    assert source_digest(tree) != before
    (tree / "setup.py").write_text("# not installed: not in the digest\n")
    after = source_digest(tree)
    (tree / "setup.py").write_text("# changed again\n")
    assert source_digest(tree) == after


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as handle:
        handle.truncate(size)


@pytest.mark.parametrize(
    "case",
    [
        "link-to-etc",
        "link-to-dev-zero",
        "link-loop",
        "fifo-version",
        "fifo-pyproject",
        "fifo-in-package",
        "huge-file",
        "version-not-text",
    ],
)
def test_a_hostile_source_tree_is_one_line_and_exit_2(tmp_path, case):
    marker = tmp_path / "ran"
    tree = hostile_tree(tmp_path / "tree", marker)
    pkg = tree / "coreai_torch"
    if case == "link-to-etc":
        (pkg / "etc").symlink_to("/etc")
    elif case == "link-to-dev-zero":
        (pkg / "__version__.py").unlink()
        (pkg / "__version__.py").symlink_to("/dev/zero")
    elif case == "link-loop":
        (pkg / "a").symlink_to("b")
        (pkg / "b").symlink_to("a")
    elif case == "fifo-version":
        (pkg / "__version__.py").unlink()
        os.mkfifo(pkg / "__version__.py")
    elif case == "fifo-pyproject":
        (tree / "pyproject.toml").unlink()
        os.mkfifo(tree / "pyproject.toml")
    elif case == "fifo-in-package":
        os.mkfifo(pkg / "pipe.py")
    elif case == "huge-file":
        _sparse(pkg / "weights.bin", 65 * 1024 * 1024)
    elif case == "version-not-text":
        (pkg / "__version__.py").write_bytes(b"\xff\xfe__version__ = '0.4.1'\n")
    started = time.monotonic()
    ran = invoke("envs", "build", "--from-source", str(tree))
    assert ran.returncode == 2, (ran.stdout, ran.stderr)
    line = one_line(ran)
    expected = {
        "link-to-etc": "coreai_torch/etc is a symlink out of the tree",
        "link-to-dev-zero": "coreai_torch/__version__.py is a symlink out of the tree",
        "link-loop": "is a symlink loop",
        "fifo-version": "not a regular file (a FIFO)",
        "fifo-pyproject": "not a regular file (a FIFO)",
        "fifo-in-package": "coreai_torch/pipe.py is not a regular file (a FIFO)",
        "huge-file": "more than the 64 MiB a tree's file may have",
        "version-not-text": "not UTF-8 text",
    }[case]
    assert expected in line, line
    assert time.monotonic() - started < 60  # a FIFO is never waited on (no timing claim: a hang
    # would never get here)
    assert not marker.exists()


# ---- git: the repository is data ---------------------------------------------------------


def _evil_repo(tmp_path: Path, marker: Path) -> tuple[Path, str]:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    pkg = repo / "coreai_torch"
    pkg.mkdir()
    (pkg / "__version__.py").write_text('__version__ = "0.4.1"\n')
    (pkg / "ops.py").write_text("X = 1\n")
    (repo / ".gitattributes").write_text("* filter=evil\n")
    sha = _commit(repo, "release (#1)")
    script = tmp_path / "evil.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat\n')
    script.chmod(0o755)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("post-checkout", "pre-commit", "reference-transaction", "post-index-change"):
        (hooks / hook).write_text(f"#!/bin/sh\necho hook >> {marker}\n")
        (hooks / hook).chmod(0o755)
    for key, value in (
        ("filter.evil.smudge", str(script)),
        ("filter.evil.clean", str(script)),
        ("filter.evil.process", str(script)),
        ("filter.evil.required", "true"),
        ("core.fsmonitor", str(script)),
        ("core.hooksPath", str(hooks)),
    ):
        _git(repo, "config", key, value)
    return repo, sha


def test_git_runs_no_filter_fsmonitor_or_hook_the_repository_configures(tmp_path):
    marker = tmp_path / "ran"
    repo, sha = _evil_repo(tmp_path, marker)
    r = Repo(repo)
    assert r.release_commit("0.4.1")[0].sha == sha
    assert r.version_at(sha) == "0.4.1"
    tree = r.extract(sha, tmp_path / "out")
    assert (tree / "coreai_torch" / "ops.py").read_text() == "X = 1\n"  # the blob, unfiltered
    assert not (tree / ".gitattributes").exists()  # only what an environment installs
    assert not marker.exists(), marker.read_text()


def _signing_repo(tmp_path: Path, marker: Path) -> Path:
    """A coreai-torch repository whose HEAD is signed and whose configuration, and the user's,
    name a program at every place git would run one on a read: the signature's verifier (with
    `log.showSignature`), an fsmonitor, a pager, a filter driver whose name holds a `=`."""
    repo = tmp_path / "signed"
    init(repo)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "coreai_torch").mkdir()
    (repo / "coreai_torch" / "__version__.py").write_text('__version__ = "0.4.1"\n')
    (repo / ".gitattributes").write_text("* filter=a=b\n")
    commit(repo, "sync: v0.4.1 (#28)")
    git(repo, "tag", "v0.4.1")
    (repo / "coreai_torch" / "__version__.py").write_text('__version__ = "0.4.2"\n')
    commit(repo, "update coreai torch version (#64)")
    sign_head(repo)
    git(repo, "remote", "add", "origin", "https://github.com/apple/coreai-torch.git")
    script = tmp_path / "program.sh"
    script.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\nexit 1\n')
    script.chmod(0o755)
    (repo / "coreai_torch" / "__version__.py").touch()  # a stat change: status reads the file
    for key, value in (
        ("log.showSignature", "true"),
        ("gpg.program", str(script)),
        ("core.fsmonitor", str(script)),
        ("core.pager", str(script)),
        ("filter.a=b.clean", str(script)),
        ("filter.a=b.process", str(script)),
    ):
        git(repo, "config", key, value)
    return repo


def test_no_git_read_runs_a_program_a_repository_or_the_user_configures(tmp_path, monkeypatch):
    """Every read the tool makes of a user's repository: bisect's (the releases' commits, the
    history between them, a commit's tree, the repository's name), draft's (the core pin of a
    commit, the forge address) and the recipe checkout's commit that trace and verify read.
    The user's own configuration names the same programs (HOME's `.gitconfig`)."""
    from inventory.draft.history import pin_at
    from inventory.draft.service import _forge_url
    from inventory.trace.recipes import checkout

    marker = tmp_path / "ran"
    repo = _signing_repo(tmp_path, marker)
    home = tmp_path / "home"
    home.mkdir()
    script = tmp_path / "program.sh"
    (home / ".gitconfig").write_text(
        f"[log]\n\tshowSignature = true\n[gpg]\n\tprogram = {script}\n"
        f"[core]\n\tfsmonitor = {script}\n"
    )
    monkeypatch.setenv("HOME", str(home))
    # the configuration is live: plain git runs the verifier and the fsmonitor
    for read in (["log", "-1", "--format=%B"], ["status", "--porcelain"]):
        subprocess.run(
            ["git", "-C", str(repo), *read],
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=60,
        )
    assert marker.exists()
    marker.unlink()

    r = Repo(repo)
    old, new = r.release_commit("0.4.1")[0], r.release_commit("0.4.2")[0]
    assert [c.pr for c in r.first_parent(old, new)] == ["64"]
    assert r.name == "apple/coreai-torch"
    assert (r.extract(new.sha, tmp_path / "tree") / "coreai_torch" / "__version__.py").is_file()
    assert pin_at(r, new.sha) == "1.0.0b2"
    assert _forge_url(repo) == "https://github.com/apple/coreai-torch"
    assert checkout(repo).commit == new.sha
    assert not marker.exists(), marker.read_text()


def test_no_module_runs_git_but_the_one_helper():
    """`inventory/gitrepo.py` is where git runs: a `"git"` argv anywhere else would run with
    whatever configuration the repository and the user have."""
    spawns = [
        str(path.relative_to(ROOT))
        for package in ("inventory", "oracle")
        for path in sorted((ROOT / package).rglob("*.py"))
        if path.name != "gitrepo.py" and '["git"' in path.read_text()
    ]
    assert spawns == []


def test_a_commit_with_a_symlink_out_of_the_tree_is_refused(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    pkg = repo / "coreai_torch"
    pkg.mkdir()
    (pkg / "__version__.py").write_text('__version__ = "0.4.1"\n')
    (pkg / "etc").symlink_to("/etc")
    absolute = _commit(repo, "absolute")
    (pkg / "etc").unlink()
    (pkg / "up").symlink_to("../../../outside")
    relative = _commit(repo, "relative")
    for sha, link in ((absolute, "/etc"), (relative, "../../../outside")):
        with pytest.raises(UsageError, match=f"is a symlink out of the tree \\({link}\\)"):
            Repo(repo).extract(sha, tmp_path / f"out-{sha[:6]}")


def test_a_tree_past_the_caps_is_refused_before_anything_is_read(tmp_path, monkeypatch):
    """The caps are 64 MiB a file and 256 MiB a tree; here lowered to 1 MiB so the test makes
    no large object. A blob larger than the read chunk is streamed, never read whole."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    pkg = repo / "coreai_torch"
    pkg.mkdir()
    (pkg / "__version__.py").write_text('__version__ = "0.4.1"\n')
    data = os.urandom(3 * 1024 * 1024 + 17)
    (pkg / "blob.bin").write_bytes(data)
    sha = _commit(repo, "big")
    monkeypatch.setattr(gitrepo, "_CHUNK", 64 * 1024)
    out = Repo(repo).extract(sha, tmp_path / "ok")
    assert (out / "coreai_torch" / "blob.bin").read_bytes() == data
    monkeypatch.setattr(gitrepo, "MAX_FILE_BYTES", 1024 * 1024)
    with pytest.raises(UsageError, match="more than the 1 MiB a tree's file may have"):
        Repo(repo).extract(sha, tmp_path / "refused")
    assert not (tmp_path / "refused" / "coreai_torch").exists()
    monkeypatch.setattr(gitrepo, "MAX_FILE_BYTES", 64 * 1024 * 1024)
    monkeypatch.setattr(gitrepo, "MAX_TREE_BYTES", 2 * 1024 * 1024)
    with pytest.raises(UsageError, match="more than the 2 MiB a tree may have"):
        Repo(repo).extract(sha, tmp_path / "refused2")


def test_every_commit_keeps_at_most_the_tree_in_use(tmp_path, monkeypatch):
    """`_Envs` extracts a commit's tree, builds its environment and removes the tree: with a
    stand-in for the environment builder (a test double: it records how many trees lie in the
    scratch when called), never more than one tree at a time, whatever the history's length."""
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "coreai_torch").mkdir()
    shas = []
    for i in range(6):
        (repo / "coreai_torch" / "__version__.py").write_text(f'__version__ = "0.4.1"  # {i}\n')
        shas.append(_commit(repo, f"c{i}"))
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    seen: list[int] = []

    class FakeEnv:  # what the double builder returns: a name, as a real Env has
        def __init__(self, name: str) -> None:
            self.name = name

    def builder_double(tree: Path, *args: object, **kwargs: object) -> FakeEnv:
        seen.append(len(list(scratch.iterdir())))
        assert kwargs.get("allow_code") is True  # bisect has consent, or it never gets here
        return FakeEnv(tree.name)

    monkeypatch.setattr(bisect_module, "ensure_source_env", builder_double)

    class SessionDouble:
        catalog = None

    session: Any = SessionDouble()  # only its catalog is read
    envs = bisect_module._Envs(Repo(repo), session, scratch, {}, lambda _: None)
    for sha in shas:
        envs(sha)
    assert seen == [1] * len(shas)
    assert list(scratch.iterdir()) == []


def test_a_killed_bisect_leaves_its_scratch_in_the_store_and_cache_prune_reclaims_it(env, tmp_path):
    """The scratch of a bisect lives under the store's `tmp/` named by its pid: SIGKILL the run
    once it is there, and `cache prune` removes it (so does the next run's session)."""
    env("0.4.1")
    env("0.4.2")
    store = tmp_path / "store"
    store.mkdir()
    (store / "envs").symlink_to(envs_dir())
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    for release in ("0.4.1", "0.4.2"):
        site = next(envs_dir().glob(f"coreai-torch-{release}/lib/python*/site-packages"))
        subprocess.run(["rm", "-rf", str(repo / "coreai_torch")], check=True)
        subprocess.run(["cp", "-r", str(site / "coreai_torch"), str(repo)], check=True)
        _commit(repo, f"release {release}")
        _git(repo, "tag", f"v{release}")
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "inventory.cli",
            "bisect",
            "--from",
            "0.4.1",
            "--to",
            "0.4.2",
            "--repo",
            str(repo),
            "--allow-code",
            "-q",
        ],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "INVENTORY_CACHE": str(store), "INVENTORY_STORE": str(store)},
    )
    deadline = time.monotonic() + 300
    while not list((store / "tmp").glob(f"{run.pid}-bisect-*")):
        assert run.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert list((store / "tmp").glob(f"{run.pid}-bisect-*"))  # what a killed run leaves
    pruned = invoke("cache", "prune", INVENTORY_CACHE=str(store), INVENTORY_STORE=str(store))
    assert pruned.returncode == 0, pruned.stderr
    assert not list((store / "tmp").glob(f"{run.pid}-*"))
    assert f"{run.pid}-bisect-" in pruned.stdout


def test_envs_build_from_source_needs_a_tree_not_a_loop(tmp_path):
    (tmp_path / "loop").symlink_to("loop")
    ran = invoke("envs", "build", "--from-source", str(tmp_path / "loop"))
    assert ran.returncode == 2 and "no such directory" in one_line(ran)
