"""What the converter's history says of a release step beyond the probes: the commit that moves
the coreai-core pin, and the commit from which the asset a converter writes loads on the new
release's runtime.

The pin is read as text from each commit's `pyproject.toml` (never built or run). The asset is
measured: the asset probe written by the converter at a commit (the environment `bisect` builds
for it), loaded on the runtime, binary search over the step's first-parent line between the old
release (whose asset the runtime refuses) and the new one (whose asset loads).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from inventory.bisect import WHEEL_SAME, Bisection, _Envs
from inventory.errors import UsageError
from inventory.gitrepo import Commit, Repo
from oracle.compare import ProbeSpec
from oracle.envs import Env
from oracle.infra import Progress, scratch
from oracle.load_check import load_check
from oracle.session import Session
from oracle.store import LoadCheck

PYPROJECT = "pyproject.toml"
_PIN = re.compile(r"""["']coreai-core\s*==\s*([^"';,\s]+)["']""")
_MAX_PYPROJECT = 1024 * 1024


def pin_at(repo: Repo, sha: str) -> str | None:
    """The coreai-core release a commit's pyproject.toml pins (`coreai-core==X`), read as text:
    a blob of at most 1 MiB, else none."""
    try:
        size = int(repo.git("cat-file", "-s", f"{sha}:{PYPROJECT}").strip())
    except (UsageError, ValueError):
        return None  # no pyproject.toml at that commit
    if size > _MAX_PYPROJECT:
        return None
    found = _PIN.search(repo.git("cat-file", "blob", f"{sha}:{PYPROJECT}"))
    return found.group(1) if found else None


def pin_commit(repo: Repo, line: list[Commit], core: str) -> Commit | None:
    """The first commit of the line (after its first, the old release's) whose pyproject pins
    `core` where its predecessor on the line did not: the pin commit of the step."""
    before = pin_at(repo, line[0].sha)
    for commit in line[1:]:
        now = pin_at(repo, commit.sha)
        if now == core and before != core:
            return commit
        before = now
    return None


@dataclass(frozen=True)
class AssetSearch:
    """Where, between two releases, the asset the converter writes starts to load on a
    runtime: the commit (None when no commit of the line could be named), and each check
    made (commit sha, loads or not, the stored check)."""

    commit: Commit | None
    tested: tuple[tuple[str, bool, str], ...]
    problem: str = ""


def asset_commit(
    repo: Repo,
    bisection: Bisection,
    session: Session,
    spec: ProbeSpec,
    core: str,
    envs: dict[str, Env],
    use_cache: bool,
    progress: Progress,
) -> AssetSearch:
    """Binary search over the step's first-parent line (bisection's) for the first commit whose
    asset probe, written by that commit's converter, loads on coreai-core `core`: the old
    release's does not, the new one's does (the caller knows both). `envs`: the released
    environments of the two releases, used for their commits where the wheel holds the
    commit's very files (bisection's check)."""
    line = [bisection.old_commit, *bisection.commits]
    releases = {
        c.sha: envs[r]
        for c, r in ((bisection.old_commit, bisection.old), (bisection.new_commit, bisection.new))
        if bisection.wheel_check.get(r) == WHEEL_SAME
    }
    tested: list[tuple[str, bool, str]] = []
    lo, hi = 0, len(line) - 1
    with scratch("draft-asset") as folder:  # each commit's tree lies there while it is built
        commit_env = _Envs(repo, session, folder, releases, progress)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            commit = line[mid]
            progress(f"asset probe written at {commit.label()}, loaded on coreai-core {core}")
            try:
                check: LoadCheck = load_check(
                    spec, commit_env(commit.sha), [core], session, use_cache
                )
            except Exception as exc:  # noqa: BLE001 - said, never a verdict
                return AssetSearch(None, tuple(tested), f"{commit.short}: {exc}")
            outcome = check.on(core)
            loads = outcome is not None and outcome.loads
            tested.append((commit.sha, loads, check.evidence))
            if loads:
                hi = mid
            else:
                lo = mid
    return AssetSearch(line[hi], tuple(tested))
