"""What the instruments see of one release step, gathered for a draft of its records.

- the library sweep (every regime, the asset probe in both dtypes) and the registry sweep (every
  distinct shipped instance), under the step's two released environments: what changes, at
  which stage (`attribution.stage`), and what does not;
- with a repository, `inventory bisect` of the same probes: the commit (and pull request) of
  each change; and the commit that moves the coreai-core pin;
- the whole programs of the bundles whose check of the step is stored (or measured with
  `--verify`): every region that changes, its stage and constructs;
- the load checks of the asset probe: whether the asset the old release writes still loads on
  the runtime the new one pins (with a repository, from which commit on it does).

Every comparison is a stored result, so a second draft of the same step reads them back.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inventory.attribution import program_changed, stage
from inventory.bisect import Bisection, bisect
from inventory.draft.history import AssetSearch, asset_commit, pin_commit
from inventory.errors import UsageError
from inventory.gitrepo import Commit, Repo
from inventory.policy import Policy
from inventory.registry import Bundle
from inventory.release_notes import asset_regimes
from inventory.sweep import RegimeOutcome, registry_regimes, sweep
from oracle.catalog import Catalog, EnvError, Regime, cores
from oracle.infra import Progress
from oracle.load_check import LoadCheck, load_check
from oracle.session import Session
from oracle.workers import asset_probe

LIBRARY, REGISTRY, ASSET = "library", "registry", "asset probe"


@dataclass(frozen=True)
class Change:
    """One probe whose shipped program changes in the step (or that converts on one side only,
    or fails differently on the two)."""

    outcome: RegimeOutcome
    source: str  # LIBRARY, REGISTRY or ASSET: how it was probed
    stage: str  # attribution.stage: lowering, optimizer, or lowering or optimizer
    commits: tuple[Commit, ...] = ()  # bisection: the commits that change it, in order
    problem: str = ""  # bisection named no commit: why

    @property
    def regime(self) -> Regime:
        return self.outcome.regime

    @property
    def prs(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.pr for c in self.commits if c.pr))


@dataclass(frozen=True)
class Pin:
    """The coreai-core pin the step moves, and the commit that moves it (None without a
    repository, or when no commit of the line sets it)."""

    old: str
    new: str
    commit: Commit | None
    how: str


@dataclass(frozen=True)
class AssetChange:
    """The asset the old release writes does not load on the new release's runtime, and the one
    the new release writes does."""

    core: str
    checks: tuple[tuple[LoadCheck, LoadCheck], ...]  # (old's, new's) per asset-probe dtype
    search: AssetSearch | None = None  # with a repository: the commit it starts to load at


@dataclass(frozen=True)
class Observed:
    old: str
    new: str
    probed: int
    changes: tuple[Change, ...]
    unchanged: tuple[Regime, ...]  # probes whose program is the same (or fails alike)
    probed_as: tuple[tuple[Regime, str], ...]  # every probe compared, and how (LIBRARY, ...)
    pin: Pin | None
    asset: AssetChange | None
    loads: tuple[tuple[LoadCheck, LoadCheck], ...]
    regions: tuple[tuple[str, dict[str, Any]], ...]  # (bundle, region) of this step
    checked: tuple[str, ...]  # bundles whose whole-program check of the step was read
    repo: str = ""  # the repository bisected, by name ("" without one)
    bisection: Bisection | None = None

    @property
    def label(self) -> str:
        return f"{self.old}->{self.new}"

    @property
    def history(self) -> bool:
        return self.bisection is not None

    def of(self, construct: str, source: str) -> tuple[Regime, ...]:
        """The probes of one construct, probed as `source`."""
        return tuple(r for r, s in self.probed_as if r.construct == construct and s == source)


def probes(
    library: list[Regime], bundles: list[Bundle], only: frozenset[str]
) -> list[tuple[Regime, str]]:
    """What `sweep` and `bisect` compare (every library regime, the asset probe in both dtypes,
    every distinct shipped instance), each with how it was probed; `only` (regime ids or
    constructs), as bisect's `--probe` selects them."""
    out = [(r, LIBRARY) for r in library] + [(r, ASSET) for r in asset_regimes()]
    seen = {r.spec.key() for r, _ in out}
    out += [(r, REGISTRY) for r in registry_regimes(bundles) if r.spec.key() not in seen]
    if only:
        unknown = sorted(only - {n for r, _ in out for n in (r.id, r.construct)})
        if unknown:
            raise UsageError(
                f"--probe {unknown[0]}: no probe regime or construct of that name "
                "(`inventory sweep` lists the regimes)"
            )
        out = [(r, s) for r, s in out if {r.id, r.construct} & only]
    return out


def observe(
    old: str,
    new: str,
    library: list[Regime],
    bundles: list[Bundle],
    catalog: Catalog,
    policy: Policy,
    repo_path: Path | None = None,
    allow_code: bool = False,
    verify: bool = False,
    use_cache: bool = True,
    only: frozenset[str] = frozenset(),
    progress: Progress = lambda _: None,
) -> Observed:
    chosen = probes(library, bundles, only)
    source = {r.spec.key(): s for r, s in chosen}
    with Session(catalog, progress) as session:
        sw = sweep(
            old,
            new,
            [],
            [r for r, _ in chosen],
            catalog,
            policy,
            use_cache,
            progress,
            "draft",
            session,
        )
    bisection = (
        bisect(
            old,
            new,
            repo_path,
            [],
            library,
            catalog,
            policy,
            bundles,
            use_cache,
            progress,
            only=only,
            allow_code=allow_code,
        )
        if repo_path is not None
        else None
    )
    found = {p.regime.spec.key(): p for p in (bisection.probes if bisection else ())}
    changes = []
    for f in sw.changed:
        o = f.outcome
        if not program_changed(o.result):
            continue
        b = found.get(o.regime.spec.key())
        changes.append(
            Change(
                o,
                source[o.regime.spec.key()],
                stage(o.result),
                tuple(t.commit for t in b.transitions) if b else (),
                (b.problem or ("no commit changes it" if not b.transitions else "")) if b else "",
            )
        )
    changed = {c.regime.spec.key() for c in changes}
    unchanged = tuple(r for r, _ in chosen if r.spec.key() not in changed)
    repo = Repo(repo_path) if repo_path is not None else None
    pin = _pin(old, new, catalog, repo, bisection)
    loads, asset = _loads(old, new, catalog, use_cache, progress, only, repo, bisection)
    regions, checked = _regions(
        old, new, bundles, catalog, policy, use_cache, verify, progress, only
    )
    return Observed(
        old,
        new,
        sw.probed,
        tuple(changes),
        unchanged,
        tuple(chosen),
        pin,
        asset,
        loads,
        regions,
        checked,
        bisection.repo if bisection else "",
        bisection,
    )


def _pin(
    old: str, new: str, catalog: Catalog, repo: Repo | None, bisection: Bisection | None
) -> Pin | None:
    a, b = catalog.release(old).core, catalog.release(new).core
    if a == b:
        return None
    if repo is None or bisection is None:
        return Pin(
            a,
            b,
            None,
            f"the catalog's entries (coreai-torch {old} pins coreai-core "
            f"{a}, {new} pins {b}); no history to find the commit in",
        )
    line = [bisection.old_commit, *bisection.commits]
    commit = pin_commit(repo, line, b)
    how = (
        f"{commit.short}'s pyproject.toml moves coreai-core=={a} to =={b}"
        if commit
        else f"no commit of {bisection.repo}'s first-parent line {line[0].short}.."
        f"{line[-1].short} sets coreai-core=={b} in pyproject.toml"
    )
    return Pin(a, b, commit, how)


def _loads(
    old: str,
    new: str,
    catalog: Catalog,
    use_cache: bool,
    progress: Progress,
    only: frozenset[str],
    repo: Repo | None,
    bisection: Bisection | None,
) -> tuple[tuple[tuple[LoadCheck, LoadCheck], ...], AssetChange | None]:
    """The asset probe in both dtypes, written by each release and loaded on every runtime of
    the catalog; an asset change where, on the new release's runtime, the old asset does not
    load and the new one does."""
    if only and asset_probe.CONSTRUCT not in only:
        return (), None
    core = catalog.release(new).core
    out = []
    with Session(catalog, progress) as session:
        envs = {old: session.env(old), new: session.env(new)}
        for regime in asset_regimes():
            progress(f"load checks of {regime.name} written by {old} and {new}")
            out.append(
                (
                    load_check(regime.spec, envs[old], cores(catalog), session, use_cache),
                    load_check(regime.spec, envs[new], cores(catalog), session, use_cache),
                )
            )
        broken = [(a, b) for a, b in out if not _loads_on(a, core) and _loads_on(b, core)]
        if not broken:
            return tuple(out), None
        search = None
        if repo is not None and bisection is not None:
            search = asset_commit(
                repo, bisection, session, broken[0][0].spec, core, envs, use_cache, progress
            )
    return tuple(out), AssetChange(core, tuple(broken), search)


def _loads_on(check: LoadCheck, core: str) -> bool:
    outcome = check.on(core)
    return outcome is not None and outcome.loads


def _regions(
    old: str,
    new: str,
    bundles: list[Bundle],
    catalog: Catalog,
    policy: Policy,
    use_cache: bool,
    verify: bool,
    progress: Progress,
    only: frozenset[str],
) -> tuple[tuple[tuple[str, dict[str, Any]], ...], tuple[str, ...]]:
    """Every region of the step in the bundles' whole programs: stored checks are read, or with
    `verify` measured (a bundle without a whole-bundle form has none)."""
    from inventory.verify.service import verified

    if only:
        return (), ()
    try:
        checks = verified(
            bundles,
            new,
            [],
            catalog,
            policy,
            use_cache=use_cache,
            compute=verify,
            progress=progress,
        )
    except EnvError:
        if verify:
            raise
        return (), ()
    label = f"{old}->{new}"
    out = []
    checked = []
    for name, check in sorted(checks.items()):
        if not any(s.step == label for s in check.steps):
            continue
        checked.append(name)
        # the draft reads a region in its JSON form, as the record prints it
        out += [(name, r.to_json()) for r in check.regions if r.step == label]
    return tuple(out), tuple(checked)
