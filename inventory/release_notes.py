"""`release-notes` and `sweep`: what changes between two converter releases, probe by probe.

release-notes walks the fix records between two releases and runs each fix's regimes; sweep
ignores the records, runs every regime in the library, and then says which changes no record
explains. Both return plain data; renderers live in `inventory/report/`.

The registry sweep of each release step (`sweep_steps`: every traced instance of the bundles
that cross the step) is also what `plan`, `affected` and the release notes' unexplained section
read, so the four agree on what no record explains for the same step and fix database.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from inventory.attribution import (
    Step,
    explained_by,
    failing_both,
    locate,
    own_step,
    program_changed,
    release_steps,
    step_between,
)
from inventory.bisected import Attributed, load_bisected
from inventory.errors import UsageError
from inventory.instances import instance_spec, probed_keys
from inventory.policy import Policy
from inventory.registry import UNKNOWN, Bundle
from inventory.verdict import AloneCheck, ProbeVerdict, judge
from oracle import asset_probe
from oracle.constructs import has_probe
from oracle.fixes import Fix, between
from oracle.load_check import LoadCheck, load_check
from oracle.progress import Progress, Routine
from oracle.regimes import Regime, for_constructs
from oracle.releases import Catalog, EnvError, version_key
from oracle.results import Identity, ProbeResult
from oracle.runtimes import cores
from oracle.session import Session, opened
from oracle.spec import Pipeline, ProbeSpec

# What asset and pipeline records are probed with: the asset probe, in both float dtypes the
# registry's bundles ship.
ASSET_DTYPES = ("float32", "float16")


def asset_regimes() -> list[Regime]:
    return [Regime(asset_probe.CONSTRUCT, f"asset-probe-{dtype}",
                   ProbeSpec(asset_probe.CONSTRUCT, dict(asset_probe.DEFAULT_PARAMS), dtype,
                             Pipeline()), False, None)
            for dtype in ASSET_DTYPES]


@dataclass(frozen=True)
class RegimeOutcome:
    regime: Regime
    result: ProbeResult
    verdict: ProbeVerdict


@dataclass(frozen=True)
class FixNotes:
    fix: Fix
    outcomes: tuple[RegimeOutcome, ...]
    bundles: tuple[str, ...]  # registry bundles whose traced graph holds a touched construct
    # asset records: (old release's check, new release's check) of the asset probe per dtype
    loads: tuple[tuple[LoadCheck, LoadCheck], ...] = ()
    # (bundle, instance label, count) of every traced instance of a touched construct
    held_by: tuple[tuple[str, str, int], ...] = ()
    # per regime id, each release step's comparison when the range spans several steps
    steps: dict[str, tuple[Step, ...]] = field(default_factory=dict)
    # per regime id: bisection of the fix's own step names only other pull requests' commits
    # (`inventory bisect`, evidence/bisect/): the change is theirs, not this record's
    elsewhere: dict[str, Attributed] = field(default_factory=dict)

    def changes(self) -> tuple[RegimeOutcome, ...]:
        """The regimes whose shipped program this fix changes: in its own step, when located,
        and not by another pull request's commit, when bisected."""
        out = []
        for o in self.outcomes:
            if o.regime.id in self.elsewhere:
                continue
            located = self.steps.get(o.regime.id)
            if located:
                if any(s.changed and s.new == self.fix.ships_in for s in located):
                    out.append(o)
            elif program_changed(o.result):
                out.append(o)
        return tuple(out)

    def summary(self) -> FixSummary:
        """The release manager's four questions, answered from the regimes' results."""
        changed = self.changes()
        moved = [o for o in changed if o.verdict.verdict in ("values-move", "shape-change")]
        stats = [o.result.measurement.stats for o in moved
                 if o.result.measurement and o.result.measurement.ok
                 and o.result.measurement.stats is not None]
        biggest = max((s.maxabs_old_new for s in stats if s.maxabs_old_new is not None),
                      default=None)
        return FixSummary(
            reaches_graph=bool(changed),
            changed=tuple(o.regime.id for o in changed),
            values_move=tuple(o.regime.id for o in moved),
            max_abs_move=biggest,
            old_cannot_convert=tuple(o.regime.id for o in self.outcomes
                                     if o.result.shipped == Identity.OLD_CANNOT_CONVERT
                                     and o.regime.id not in self.elsewhere),
            new_cannot_convert=tuple(o.regime.id for o in self.outcomes
                                     if o.result.shipped == Identity.NEW_CANNOT_CONVERT
                                     and o.regime.id not in self.elsewhere),
            alone_wrong=tuple(o.regime.id for o in self.outcomes
                              if o.verdict.alone == AloneCheck.WRONG
                              and o.regime.id not in self.elsewhere),
            attributed_elsewhere={r: ", ".join(a.commits) for r, a in self.elsewhere.items()},
        )


@dataclass(frozen=True)
class FixSummary:
    reaches_graph: bool  # some regime's shipped program changes (in the fix's own step)
    changed: tuple[str, ...]
    values_move: tuple[str, ...]  # regimes whose outputs move (or whose shape changes)
    max_abs_move: float | None  # the largest max |old - new| among them
    old_cannot_convert: tuple[str, ...]
    new_cannot_convert: tuple[str, ...]
    # of those, the regimes whose one converting side is wrong against torch fp32 (a release
    # that converts a construct the other cannot, and computes it wrong)
    alone_wrong: tuple[str, ...] = ()
    # regime id -> the commits bisection names for its change (other pull requests than this)
    attributed_elsewhere: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Unrecorded:
    """A traced instance whose shipped program changes in one release step that no record of
    that step explains: what `sweep --registry` reports as unexplained."""

    outcome: RegimeOutcome  # the instance under the step's two releases
    step: Step

    @property
    def spec(self) -> ProbeSpec:
        return self.outcome.regime.spec


@dataclass(frozen=True)
class ReleaseNotes:
    old: str
    new: str
    fixes: tuple[FixNotes, ...]
    # the registry sweep of every step from `old` to `new`: shipped instances that change
    # where no record of the step explains it (found whatever the records name)
    unrecorded: tuple[Unrecorded, ...] = ()

    @property
    def unexplained(self) -> tuple[tuple[RegimeOutcome, Step], ...]:
        """Changes in a step where no record names the construct: the fixes' regimes (located
        over a range of several steps), then the shipped instances of the registry sweep."""
        seen: dict[tuple[str, str], tuple[RegimeOutcome, Step]] = {}
        for f in self.fixes:
            for o in f.outcomes:
                for s in f.steps.get(o.regime.id, ()):
                    if s.unexplained:
                        seen.setdefault((o.regime.id, s.label), (o, s))
        for u in self.unrecorded:
            seen.setdefault((u.outcome.regime.id, u.step.label), (u.outcome, u.step))
        return tuple(seen.values())

    @property
    def runtimes(self) -> tuple[str, ...]:
        return tuple(sorted({o.result.measurement.runtime for f in self.fixes
                             for o in f.outcomes
                             if o.result.measurement and o.result.measurement.ok}))


@dataclass(frozen=True)
class SweepFinding:
    outcome: RegimeOutcome
    # the lowering records naming the construct in the step(s) where the program changes
    explained_by: tuple[str, ...]
    # each release step's comparison, when the pair spans more than one step
    steps: tuple[Step, ...] = ()

    @property
    def unexplained(self) -> bool:
        if self.steps:
            return any(s.unexplained for s in self.steps)
        return not self.explained_by


@dataclass(frozen=True)
class Sweep:
    old: str
    new: str
    probed: int
    changed: tuple[SweepFinding, ...]  # shipped graph differs, or one side cannot convert
    unchanged: int
    # both releases fail the same way: a standing limitation, not a change
    failing_both: tuple[RegimeOutcome, ...] = ()

    # what was probed: "library" (every regime) or "registry" (every distinct shipped instance)
    source: str = "library"

    @property
    def unexplained(self) -> tuple[SweepFinding, ...]:
        return tuple(f for f in self.changed if f.unexplained)

    @property
    def not_run(self) -> tuple[RegimeOutcome, ...]:
        """Probes whose worker died, timed out or was never reached (a Ray cluster lost): both
        sides failed alike, but nothing was learnt of the converter; the sweep is inconclusive."""
        return tuple(o for o in self.failing_both
                     if "worker" in (o.result.old.stage, o.result.new.stage))


def _check_pair(old: str, new: str, catalog: Catalog) -> None:
    catalog.release(old)
    catalog.release(new)
    if version_key(new) <= version_key(old):
        raise UsageError(f"--to {new} must be a later release than --from {old}")


def _run(regimes: list[Regime], old: str, new: str, catalog: Catalog, policy: Policy,
         use_cache: bool, progress: Progress,
         session: Session | None = None) -> dict[str, RegimeOutcome]:
    out: dict[str, RegimeOutcome] = {}
    with opened(session, catalog, progress) as session:
        old_env, new_env = session.env(old), session.env(new)
        for i, regime in enumerate(regimes, start=1):
            progress(Routine(f"sweep {old}->{new} [{i}/{len(regimes)}]: {regime.id}"))
            result = session.compare(regime.spec, old_env, new_env, use_cache=use_cache)
            tuned = Policy(policy.tolerance, policy.override if policy.override is not None
                           else regime.tolerance)
            out[regime.id] = RegimeOutcome(regime, result, judge(result, tuned))
    return out


def _holders(bundles: list[Bundle], constructs: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(b.name for b in bundles if any(i.kind in constructs for i in b.instances))


def _held_by(bundles: list[Bundle], constructs: tuple[str, ...]) -> tuple[tuple[str, str, int],
                                                                             ...]:
    return tuple((b.name, instance_spec(b, i).label(), i.count) for b in bundles
                 for i in b.instances if i.kind in constructs and has_probe(i.kind))


def _exported_before(bundles: list[Bundle], release: str) -> tuple[str, ...]:
    """An asset or pipeline change concerns every bundle exported before it (or by an exporter
    the registry does not know)."""
    return tuple(b.name for b in bundles if b.exporter.converter == UNKNOWN
                 or version_key(b.exporter.converter) < version_key(release))


class _Regimes:
    """The regimes that probe a record, as its kind says (`oracle.record_kinds`): its
    constructs', the asset probe's, or none (load checks, no program comparison)."""

    def __init__(self, regimes: list[Regime]) -> None:
        self.regimes = regimes

    def construct_regimes(self, record: Fix) -> list[Regime]:
        return for_constructs(self.regimes, record.constructs)

    def asset_probe(self, record: Fix) -> list[Regime]:
        return asset_regimes()

    def load_checks(self, record: Fix) -> list[Regime]:
        return []


def _regimes_of(fix: Fix, regimes: list[Regime]) -> list[Regime]:
    return fix.record_kind.probed(_Regimes(regimes), fix)


class _Concerned:
    """The registry bundles a record concerns, by name."""

    def __init__(self, bundles: list[Bundle]) -> None:
        self.bundles = bundles

    def holders(self, record: Fix) -> tuple[str, ...]:
        return _holders(self.bundles, record.constructs)

    def exported_before(self, record: Fix) -> tuple[str, ...]:
        return _exported_before(self.bundles, record.ships_in)


class _HeldBy:
    """(bundle, instance label, count) of every traced instance a record concerns by its
    constructs; none for a record concerning bundles by their exporter."""

    def __init__(self, bundles: list[Bundle]) -> None:
        self.bundles = bundles

    def holders(self, record: Fix) -> tuple[tuple[str, str, int], ...]:
        return _held_by(self.bundles, record.constructs)

    def exported_before(self, record: Fix) -> tuple[tuple[str, str, int], ...]:
        return ()


Loads = tuple[tuple[LoadCheck, LoadCheck], ...]


class _Loads:
    """The asset probe's load checks a record's notes show: made once, for the first record
    probed by them; none for a record whose programs are compared."""

    def __init__(self, old: str, new: str, catalog: Catalog, use_cache: bool,
                 progress: Progress, session: Session) -> None:
        self.old, self.new, self.catalog = old, new, catalog
        self.use_cache, self.progress, self.session = use_cache, progress, session
        self._made: Loads | None = None

    def construct_regimes(self, record: Fix) -> Loads:
        return ()

    def asset_probe(self, record: Fix) -> Loads:
        return ()

    def load_checks(self, record: Fix) -> Loads:
        if self._made is None:
            self._made = _load_checks(self.old, self.new, self.catalog, self.use_cache,
                                      self.progress, self.session)
        return self._made


def _load_checks(old: str, new: str, catalog: Catalog, use_cache: bool,
                 progress: Progress, session: Session | None = None
                 ) -> tuple[tuple[LoadCheck, LoadCheck], ...]:
    out = []
    with opened(session, catalog, progress) as session:
        envs = (session.env(old), session.env(new))
        for regime in asset_regimes():
            progress(f"load checks of {regime.name} written by {old} and {new}")
            old_check, new_check = (load_check(regime.spec, env, cores(catalog), session,
                                               use_cache) for env in envs)
            out.append((old_check, new_check))
    return tuple(out)


def release_notes(old: str, new: str, fixes: list[Fix], regimes: list[Regime],
                  bundles: list[Bundle], catalog: Catalog, policy: Policy,
                  use_cache: bool = True,
                  progress: Progress = lambda _: None,
                  session: Session | None = None) -> ReleaseNotes:
    """`session`: the caller's, which may already hold the notes' comparisons (dispatched at
    once: `inventory.batch.release_notes`)."""
    _check_pair(old, new, catalog)
    pairs = release_steps(catalog, old, new)
    with opened(session, catalog, progress) as session:
        # what `plan` lists as unexplained for these steps: a step that cannot be swept fails
        # the notes (an environment error), never leaves the section silently empty
        swept = sweep_steps({s: bundles for s in pairs}, fixes, catalog, policy, use_cache,
                            progress, session, after_worker_failure=True)
        if swept.failed:
            raise EnvError(next(iter(swept.failed.values())))
        chosen = between(fixes, old, new)
        wanted = regimes_of_notes(chosen, regimes)
        outcomes = _run(wanted, old, new, catalog, policy, use_cache, progress, session)
        made = _Loads(old, new, catalog, use_cache, progress, session)
        loads = {fix.id: fix.record_kind.probed(made, fix) for fix in chosen}
        steps = _located(outcomes, old, new, fixes, catalog, use_cache, progress, session)
    bisected = load_bisected()
    concerned, held_by = _Concerned(bundles), _HeldBy(bundles)
    notes = tuple(
        FixNotes(fix, tuple(outcomes[r.id] for r in _regimes_of(fix, regimes)),
                 fix.record_kind.concerned(concerned, fix), loads[fix.id],
                 fix.record_kind.concerned(held_by, fix),
                 {r.id: steps[r.id] for r in _regimes_of(fix, regimes) if r.id in steps},
                 _elsewhere(fix, _regimes_of(fix, regimes), old, catalog, bisected))
        for fix in chosen
    )
    return ReleaseNotes(old, new, notes, tuple(u for s in pairs for u in swept.found[s]))


def regimes_of_notes(chosen: list[Fix], regimes: list[Regime]) -> list[Regime]:
    """The regimes the notes of these records probe, each once, in the records' order."""
    wanted: list[Regime] = []
    for fix in chosen:
        for regime in _regimes_of(fix, regimes):
            if regime not in wanted:
                wanted.append(regime)
    return wanted


class _Bisected:
    """The regimes of a record whose change in its own step bisection credits only to commits
    of other pull requests (its id and aliases are its pull requests). Only construct regimes
    are bisected: a record probed otherwise has none."""

    def __init__(self, regimes: list[Regime], old: str, catalog: Catalog,
                 bisected: dict[tuple[str, str, str], Attributed]) -> None:
        self.regimes, self.old, self.catalog, self.bisected = regimes, old, catalog, bisected

    def construct_regimes(self, record: Fix) -> dict[str, Attributed]:
        a, b = own_step(self.catalog, self.old, record)
        ids = (record.id, *record.aliases)
        found = {r.id: self.bisected.get((a, b, r.spec.key())) for r in self.regimes}
        return {r: at for r, at in found.items() if at is not None and not at.names(ids)}

    def asset_probe(self, record: Fix) -> dict[str, Attributed]:
        return {}

    def load_checks(self, record: Fix) -> dict[str, Attributed]:
        return {}


def _elsewhere(fix: Fix, regimes: list[Regime], old: str, catalog: Catalog,
               bisected: dict[tuple[str, str, str], Attributed]) -> dict[str, Attributed]:
    """The fix's regimes whose change in its own step bisection credits only to commits of
    other pull requests, as its kind reads bisection evidence."""
    return fix.record_kind.probed(_Bisected(regimes, old, catalog, bisected), fix)


def _located(outcomes: dict[str, RegimeOutcome], old: str, new: str, fixes: list[Fix],
             catalog: Catalog, use_cache: bool, progress: Progress,
             session: Session | None = None) -> dict[str, tuple[Step, ...]]:
    """Over a range of several release steps, each changed regime compared step by step, so a
    change is credited only to the records of the step it happens in."""
    changed = [o for o in outcomes.values() if program_changed(o.result)]
    if len(release_steps(catalog, old, new)) < 2 or not changed:
        return {}
    with opened(session, catalog, progress) as session:
        return {o.regime.id: locate(session, o.regime.spec, old, new, o.result, fixes,
                                    use_cache) for o in changed}


def registry_regimes(bundles: list[Bundle]) -> list[Regime]:
    """Every distinct traced instance of the shipped bundles as a probe regime (its own
    parameters, dtype and the bundle's pipeline, trained-looking values), named by the bundles
    that hold it: what `sweep --registry` probes instead of the library's regimes."""
    holders: dict[str, list[str]] = {}
    specs: dict[str, ProbeSpec] = {}
    for bundle in bundles:
        for instance in bundle.instances:
            if not has_probe(instance.kind):
                continue
            spec = instance_spec(bundle, instance)
            holders.setdefault(spec.key(), [])
            if bundle.name not in holders[spec.key()]:
                holders[spec.key()].append(bundle.name)
            specs[spec.key()] = spec
    return [Regime(spec.construct, f"{'+'.join(holders[key])}:{spec.label()}", spec, False, None)
            for key, spec in specs.items()]


def sweep(old: str, new: str, fixes: list[Fix], regimes: list[Regime], catalog: Catalog,
          policy: Policy, use_cache: bool = True,
          progress: Progress = lambda _: None, source: str = "library",
          session: Session | None = None) -> Sweep:
    _check_pair(old, new, catalog)
    outcomes = _run(regimes, old, new, catalog, policy, use_cache, progress, session)
    changed_outcomes = [o for o in outcomes.values() if program_changed(o.result)]
    steps = _located(outcomes, old, new, fixes, catalog, use_cache, progress, session)
    changed = []
    for o in changed_outcomes:
        located = steps.get(o.regime.id, ())
        ids = (sorted({i for s in located for i in s.explained_by}) if located
               else explained_by(fixes, o.regime.spec, old, new, o.result))
        changed.append(SweepFinding(o, tuple(ids), located))
    failing = tuple(o for o in outcomes.values() if failing_both(o.result))
    return Sweep(old, new, len(outcomes), tuple(changed),
                 len(outcomes) - len(changed) - len(failing), failing, source)


@dataclass(frozen=True)
class StepSweeps:
    """The registry sweep of release steps: per step, the changes no record of it explains; a
    step that could not be swept maps to why in `failed` (nothing is known of it)."""

    found: dict[tuple[str, str], tuple[Unrecorded, ...]]
    failed: dict[tuple[str, str], str]
    keys: dict[str, frozenset[str]]  # per bundle, the spec keys of its probed instances

    def of(self, bundle: str, steps: list[tuple[str, str]]) -> tuple[Unrecorded, ...]:
        """Those of one bundle's traced instances, in the given steps."""
        keys = self.keys.get(bundle, frozenset())
        return tuple(u for s in steps for u in self.found.get(s, ()) if u.spec.key() in keys)

    def unswept(self, steps: list[tuple[str, str]]) -> tuple[str, ...]:
        """`old->new could not run (why)` for each of these steps that could not be swept."""
        return tuple(f"{a}->{b} could not run ({self.failed[(a, b)]})" for a, b in steps
                     if (a, b) in self.failed)


def sweep_steps(wanted: dict[tuple[str, str], list[Bundle]], fixes: list[Fix],
                catalog: Catalog, policy: Policy, use_cache: bool = True,
                progress: Progress = lambda _: None,
                session: Session | None = None,
                after_worker_failure: bool = False) -> StepSweeps:
    """`sweep --registry` of each consecutive release step over the traced instances of the
    bundles that cross it: the same regimes, stored comparisons and records, so a change is
    unexplained here exactly when that sweep says so.

    A step whose environment cannot be had is not swept, and said so. So is, unless
    `after_worker_failure`, a step one of whose releases had a worker die or time out earlier in
    the session: every instance would be converted there, each by a worker started again."""
    bundles = list({b.name: b for crossing in wanted.values() for b in crossing}.values())
    regimes = registry_regimes(bundles)  # named by every holder, as `sweep --registry` names them
    keys = {b.name: probed_keys(b) for b in bundles}
    found: dict[tuple[str, str], tuple[Unrecorded, ...]] = {}
    failed: dict[tuple[str, str], str] = {}
    with opened(session, catalog, progress) as session:
        for (old, new), crossing in sorted(wanted.items(), key=lambda w: version_key(w[0][0])):
            mine = frozenset().union(*(keys[b.name] for b in crossing))
            if not mine:  # no traced instance crosses the step: nothing to convert, no env
                found[(old, new)] = ()
                continue
            died = [f"a coreai-torch {v} worker failed earlier in this run: {why}"
                    for v in (old, new) if (why := session.worker_failures.get(v))]
            if died and not after_worker_failure:
                failed[(old, new)] = "; ".join(died)
                continue
            try:
                sw = sweep(old, new, fixes, [r for r in regimes if r.spec.key() in mine],
                           catalog, policy, use_cache, progress, "registry", session)
            except EnvError as exc:
                failed[(old, new)] = str(exc)
                continue
            # one step: each unexplained finding is that step's comparison of the instance
            found[(old, new)] = tuple(
                Unrecorded(f.outcome, step_between(fixes, f.outcome.regime.spec, old, new,
                                                   f.outcome.result))
                for f in sw.unexplained)
    return StepSweeps(found, failed, keys)
