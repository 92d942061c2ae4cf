"""`inventory bisect --from A --to B --repo DIR`: which commit of the converter's history changes
each probe that changes between two releases.

Comparing published wheels says *that* a probe changes in a release step, and the fix records of
that step say which pull requests could have done it; when two records of one step name the same
construct (#13 and #25 both touch arange), the wheels cannot separate them. Here every commit on
the first-parent line from A's commit to B's is a converter of its own (`oracle/envs/source.py`:
the tree built with the pins of the release it descends from), and each changing probe is
converted at commits chosen by binary search until two neighbours differ: the later is the
commit that changes it, named with the pull request of its merge or squash message.

A step's change can be made by several commits. So once the first changing commit is found, its
program is compared with B's; if they still differ, the search goes on from that commit (its
program the new reference) to B, until a commit's program is B's. Each transition found is
exact (its parent's program is the reference's, its own is not); a history that changes a probe
and changes it back between two tested commits is not seen (binary search assumes one change per
segment). `every_commit` checks that: each commit against its parent, every change point named.

The probes are those `sweep` compares (every regime of the library, the asset probe in both
dtypes, and with `registry` every distinct shipped instance), under A's and B's released
environments; those whose shipped program changes (or only one side converts, or both fail
differently) are bisected. Every comparison is a stored result with its files, cited by path.
The search runs in rounds: the probes that want the same commit are converted there together,
and its worker is closed before the next commit, so the workers alive are few whatever the
history's length.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from inventory.attribution import program_changed
from inventory.errors import UsageError
from inventory.gitrepo import Commit, Repo
from inventory.policy import Policy
from inventory.registry import Bundle
from inventory.release_notes import asset_regimes
from inventory.sweep import registry_regimes, sweep
from oracle.catalog import Catalog, Fix, Regime
from oracle.compare import ProbeResult
from oracle.envs import PACKAGE, Env, ensure_source_env, package_digest
from oracle.infra import Progress, scratch
from oracle.session import Session

# What bisect runs, said when it is refused without consent.
CONSENT = (
    "bisect converts probes with the code of each commit of --repo (its coreai_torch "
    "package, run in an environment of its own): refused without --allow-code"
)

# How a release's published wheel compares with its commit's tree.
WHEEL_SAME = "same files"


def changed(result: ProbeResult) -> bool:
    """The program differs, only one side converts, or both fail but not alike (what a
    release comparison calls a change: `attribution.program_changed`)."""
    return program_changed(result)


@dataclass(frozen=True)
class Tested:
    """One conversion of the search: a commit's program against the reference's."""

    commit: str  # sha
    reference: str  # sha of the reference (A's commit, or an earlier transition)
    changed: bool
    shipped: str  # the comparison's shipped identity
    result: str  # the stored result's folder
    old_error: str = ""  # the reference's error, where it cannot convert
    new_error: str = ""  # this commit's error, where it cannot convert


@dataclass(frozen=True)
class Transition:
    commit: Commit
    parent: str  # sha of the commit before it on the first-parent line (its program: the ref's)
    reference: str  # sha whose program the change is measured against
    shipped: str  # identity of its program against the reference's
    old_error: str  # the reference side's error, if it cannot convert
    new_error: str  # this commit's error, if it cannot convert
    result: str  # the stored comparison (reference vs this commit)
    # its program is B's (no later commit of the step changes the probe again)
    final: bool


@dataclass(frozen=True)
class ProbeBisection:
    regime: Regime
    release: ProbeResult  # A's wheel against B's: the change being attributed
    transitions: tuple[Transition, ...] = ()
    tested: tuple[Tested, ...] = ()
    problem: str = ""  # why no commit could be named (an environment could not be built ...)

    @property
    def prs(self) -> tuple[str, ...]:
        return tuple(t.commit.pr for t in self.transitions if t.commit.pr)


@dataclass(frozen=True)
class Bisection:
    old: str
    new: str
    repo: str  # by name (Repo.name), never a path of this machine
    old_commit: Commit
    new_commit: Commit
    found_by: dict[str, str]  # release -> how its commit was found (tag, version bump)
    wheel_check: dict[str, str]  # release -> WHEEL_SAME, or what differs
    commits: tuple[Commit, ...]  # first-parent line after A's commit, up to B's
    probed: int
    probes: tuple[ProbeBisection, ...]
    builds: dict[str, str] = field(default_factory=dict)  # sha -> environment name
    # "binary" (binary search: one change per tested segment assumed) or "every-commit" (each
    # commit against its parent: every change point, the assumption checked)
    search: str = "binary"

    @property
    def unattributed(self) -> tuple[ProbeBisection, ...]:
        return tuple(p for p in self.probes if not p.transitions)


def _wheel_check(repo: Repo, commit: Commit, env: Env, folder: Path) -> str:
    """Whether the released wheel installs the very package of the commit's tree."""
    installed = [p for p in env.path.glob(f"lib/python*/site-packages/{PACKAGE}")]
    if not installed:
        return f"{env.name} has no {PACKAGE} folder"
    tree = repo.extract(commit.sha, folder / f"check-{commit.short}")
    try:
        same = package_digest(tree) == package_digest(installed[0].parent)
    finally:
        shutil.rmtree(tree, ignore_errors=True)
    if same:
        return WHEEL_SAME
    return f"{PACKAGE}/ of {commit.short} differs from the files {env.name} installs"


class _Envs:
    """The converter at each commit: the released environment for A's and B's commits when the
    wheel holds the commit's very files, else the tree built from source (once per distinct
    tree)."""

    def __init__(
        self,
        repo: Repo,
        session: Session,
        folder: Path,
        releases: dict[str, Env],
        progress: Progress,
    ) -> None:
        self.repo, self.session, self.scratch = repo, session, folder
        self.known = dict(releases)  # sha -> env
        self.released = set(releases)
        self.progress = progress
        self.builds: dict[str, str] = {}

    def __call__(self, sha: str) -> Env:
        if sha not in self.known:
            tree = self.repo.extract(sha, self.scratch / sha[:12])
            try:
                # named by the tree's digest: commits that leave the package alone share one;
                # the tree is installed by copying its files (no build code runs), so it is
                # not needed once built: one tree at a time lies in the scratch
                env = ensure_source_env(
                    tree, None, self.session.catalog, self.progress, commit=sha, allow_code=True
                )
            finally:
                shutil.rmtree(tree, ignore_errors=True)
            self.known[sha] = env
            self.builds[sha] = env.name
        return self.known[sha]

    def release_worker(self, sha: str) -> None:
        """Close a commit's worker (restarted if asked again): few stay alive."""
        if sha in self.known and sha not in self.released:
            self.session.worker(self.known[sha]).close()


@dataclass
class _Search:
    """One probe's search state: its reference and the bounds of the current segment."""

    regime: Regime
    release: ProbeResult
    ref: int  # index of the reference commit in the line (0: A's commit)
    lo: int  # last index known to give the reference's program
    hi: int  # first index known to give another program
    transitions: list[Transition] = field(default_factory=list)
    tested: list[Tested] = field(default_factory=list)
    done: bool = False
    checking_final: bool = False  # the next conversion compares `hi` with B
    problem: str = ""
    # B's commit is known to change the probe: by the release comparison when B's wheel holds
    # its commit's very files, else only once B's tree, built from source, is converted
    b_known: bool = True


def _probes(
    fixes: list[Fix],
    library: list[Regime],
    bundles: list[Bundle] | None,
    old: str,
    new: str,
    catalog: Catalog,
    policy: Policy,
    use_cache: bool,
    progress: Progress,
    session: Session,
    only: frozenset[str],
) -> tuple[int, list[tuple[Regime, ProbeResult]]]:
    """What `sweep` compares (those `only` names by id or construct, if any), under A's and
    B's releases: the changing ones."""
    regimes = list(library) + asset_regimes()
    if bundles:
        seen = {r.spec.key() for r in regimes}
        regimes += [r for r in registry_regimes(bundles) if r.spec.key() not in seen]
    if only:
        unknown = sorted(only - {n for r in regimes for n in (r.id, r.construct)})
        if unknown:
            raise UsageError(
                f"--probe {unknown[0]}: no probe regime or construct of that name "
                f"(`inventory sweep` lists the regimes)"
            )
        regimes = [r for r in regimes if {r.id, r.construct} & only]
    sw = sweep(old, new, fixes, regimes, catalog, policy, use_cache, progress, "bisect", session)
    return sw.probed, [
        (f.outcome.regime, f.outcome.result) for f in sw.changed if changed(f.outcome.result)
    ]


def bisect(
    old: str,
    new: str,
    repo_path: Path,
    fixes: list[Fix],
    library: list[Regime],
    catalog: Catalog,
    policy: Policy,
    bundles: list[Bundle] | None = None,
    use_cache: bool = True,
    progress: Progress = lambda _: None,
    only: frozenset[str] = frozenset(),
    every_commit: bool = False,
    allow_code: bool = False,
) -> Bisection:
    from inventory.sweep import check_pair

    if not allow_code:
        raise UsageError(CONSENT)
    check_pair(old, new, catalog)
    repo = Repo(repo_path)
    (a, how_a), (b, how_b) = repo.release_commit(old), repo.release_commit(new)
    line = [a, *repo.first_parent(a, b)]
    with Session(catalog, progress) as session, scratch("bisect") as folder:
        # built before their wheels are compared with the commits' trees: a planned, not yet
        # built environment has no package to compare, and A and B would be built from source
        env_a, env_b = session.ready(session.env(old)), session.ready(session.env(new))
        checks = {
            old: _wheel_check(repo, a, env_a, folder),
            new: _wheel_check(repo, b, env_b, folder),
        }
        releases = {
            c.sha: e for c, e, r in ((a, env_a, old), (b, env_b, new)) if checks[r] == WHEEL_SAME
        }
        envs = _Envs(repo, session, folder, releases, progress)
        probed, changing = _probes(
            fixes, library, bundles, old, new, catalog, policy, use_cache, progress, session, only
        )
        searches = [
            _Search(r, res, 0, 0, len(line) - 1, b_known=b.sha in releases) for r, res in changing
        ]
        if every_commit:
            _every_commit(searches, line, envs, session, use_cache, progress)
        else:
            _run_rounds(searches, line, envs, session, use_cache, progress)
    probes = tuple(
        ProbeBisection(s.regime, s.release, tuple(s.transitions), tuple(s.tested), s.problem)
        for s in searches
    )
    return Bisection(
        old,
        new,
        repo.name,
        a,
        b,
        {old: how_a, new: how_b},
        checks,
        tuple(line[1:]),
        probed,
        probes,
        dict(envs.builds),
        "every-commit" if every_commit else "binary",
    )


def _every_commit(
    searches: list[_Search],
    line: list[Commit],
    envs: _Envs,
    session: Session,
    use_cache: bool,
    progress: Progress,
) -> None:
    """Each changing probe converted at every commit of the line, each against its parent:
    every commit that changes it, including a change undone before the next commit a binary
    search would test (what the binary search assumes away). Commits whose package files are
    their parent's share its environment and cannot change a probe: not converted."""
    for i in range(1, len(line)):
        parent, commit = line[i - 1], line[i]
        wanted = [s for s in searches if not s.problem]
        if not wanted:
            break
        try:
            before, after = envs(parent.sha), envs(commit.sha)
        except Exception as exc:  # noqa: BLE001 - said per probe, never a verdict
            for s in wanted:
                s.problem = f"no environment for {commit.short} or its parent: {exc}"
            continue
        if before.name != after.name:
            progress(
                f"{len(wanted)} probe(s) at {commit.label()} against its parent "
                f"[{i}/{len(line) - 1}]"
            )
            for s in wanted:
                try:
                    result = session.compare(s.regime.spec, before, after, use_cache=use_cache)
                except Exception as exc:  # noqa: BLE001 - an environment fault: said, no verdict
                    s.problem = f"{commit.short}: {exc}"
                    continue
                s.tested.append(_tested(commit.sha, parent.sha, result))
                if changed(result):
                    s.transitions.append(
                        Transition(
                            commit,
                            parent.sha,
                            parent.sha,
                            str(result.shipped),
                            *_errors(result),
                            result.evidence,
                            False,
                        )
                    )
        envs.release_worker(parent.sha)
    for s in searches:
        if s.transitions and not s.problem:
            s.transitions[-1] = _final(s.transitions[-1])
        s.done = True


def _run_rounds(
    searches: list[_Search],
    line: list[Commit],
    envs: _Envs,
    session: Session,
    use_cache: bool,
    progress: Progress,
) -> None:
    last = len(line) - 1
    rounds = 0
    while True:
        asks: dict[int, list[tuple[_Search, int]]] = {}
        for s in searches:
            if s.done:
                continue
            if not s.b_known:
                asks.setdefault(last, []).append((s, s.ref))
                continue
            if not s.checking_final and s.hi - s.lo <= 1:
                done = _found(s, line)
                if done:
                    continue
            want = (s.hi, last) if s.checking_final else (s.ref, (s.lo + s.hi) // 2)
            asks.setdefault(want[1], []).append((s, want[0]))
        if not asks:
            return
        rounds += 1
        for index in sorted(asks):
            commit = line[index]
            progress(
                f"round {rounds}: {len(asks[index])} probe(s) at {commit.label()} [{index}/{last}]"
            )
            try:
                env = envs(commit.sha)
            except Exception as exc:  # noqa: BLE001 - said per probe, never a verdict
                for s, _ in asks[index]:
                    s.problem = f"no environment for {commit.short}: {exc}"
                    s.done = True
                continue
            for s, ref in asks[index]:
                try:
                    result = session.compare(
                        s.regime.spec, envs(line[ref].sha), env, use_cache=use_cache
                    )
                except Exception as exc:  # noqa: BLE001 - an environment fault: said, no verdict
                    s.problem = f"{commit.short}: {exc}"
                    s.done = True
                    continue
                moved = changed(result)
                s.tested.append(_tested(commit.sha, line[ref].sha, result))
                if not s.b_known:
                    s.b_known = True
                    if not moved:
                        s.problem = (
                            f"{line[last].short}'s tree, built from source, gives "
                            f"{line[ref].short}'s program: the released wheel differs "
                            "from its commit, so no commit of this history changes it"
                        )
                        s.done = True
                elif s.checking_final:
                    s.checking_final = False
                    t = s.transitions[-1]
                    if not moved:
                        s.transitions[-1] = _final(t)
                        s.done = True
                    else:  # another commit changes it again: search on from this one
                        s.ref, s.lo, s.hi = s.hi, s.hi, last
                elif moved:
                    s.hi = index
                else:
                    s.lo = index
            for sha in {line[i].sha for i in [index, *(r for _, r in asks[index])]}:
                envs.release_worker(sha)


def _final(t: Transition) -> Transition:
    return Transition(
        t.commit, t.parent, t.reference, t.shipped, t.old_error, t.new_error, t.result, True
    )


def _errors(result: ProbeResult) -> tuple[str, str]:
    return ("" if result.old.ok else result.old.error, "" if result.new.ok else result.new.error)


def _tested(commit: str, reference: str, result: ProbeResult) -> Tested:
    return Tested(
        commit, reference, changed(result), str(result.shipped), result.evidence, *_errors(result)
    )


def _found(s: _Search, line: list[Commit]) -> bool:
    """`hi` is the commit that changes the probe (its neighbour `lo` does not): record it, then
    ask whether its program is B's. True when the search is done (`hi` is the last commit)."""
    last = len(line) - 1
    ref, at = line[s.ref].sha, line[s.hi].sha
    tested = next((t for t in reversed(s.tested) if t.commit == at and t.reference == ref), None)
    if tested is None:  # B against A: the release comparison itself
        tested = _tested(at, ref, s.release)
    s.transitions.append(
        Transition(
            line[s.hi],
            line[s.hi - 1].sha,
            ref,
            tested.shipped,
            tested.old_error,
            tested.new_error,
            tested.result,
            s.hi == last,
        )
    )
    if s.hi == last:
        s.done = True
    else:
        s.checking_final = True
    return s.done
