"""`release-notes`: what the fix records between two converter releases change, probe by probe.

The notes walk the records between two releases and probe each as its kind says (its
constructs' regimes, the asset probe, or load checks); their unexplained section is the registry
sweep of every step between (`inventory/sweep.py`, what `plan` and `affected` read too). They
return plain data; renderers live in `inventory/report/`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from inventory.answer_types import BundleAnswer
from inventory.attribution import Step, own_step, program_changed, release_steps
from inventory.bisect_evidence import Attributed, load_bisected
from inventory.instances import instance_spec
from inventory.policy import Policy
from inventory.registry import UNKNOWN, Bundle
from inventory.sweep import (
    RegimeOutcome,
    Unrecorded,
    check_pair,
    located_steps,
    run_regimes,
    sweep_steps,
)
from inventory.verdict import AloneCheck
from oracle.catalog import (
    Catalog,
    EnvError,
    Fix,
    Regime,
    between,
    cores,
    for_constructs,
    version_key,
)
from oracle.compare import Identity, Pipeline, ProbeSpec
from oracle.constructs import has_probe
from oracle.infra import Progress, Routine
from oracle.load_check import LoadCheck, load_check
from oracle.session import Session, opened
from oracle.workers import asset_probe

# What asset and pipeline records are probed with: the asset probe, in both float dtypes the
# registry's bundles ship.
ASSET_DTYPES = ("float32", "float16")


def asset_regimes() -> list[Regime]:
    return [
        Regime(
            asset_probe.CONSTRUCT,
            f"asset-probe-{dtype}",
            ProbeSpec(asset_probe.CONSTRUCT, dict(asset_probe.DEFAULT_PARAMS), dtype, Pipeline()),
            False,
            None,
        )
        for dtype in ASSET_DTYPES
    ]


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
    # each concerned bundle's own answer, as `inventory affected --fix` gives it: the outcomes
    # above are the library's probe cases, which a bundle's own instances may not share
    answers: tuple[BundleAnswer, ...] = ()

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
        stats = [
            o.result.measurement.stats
            for o in moved
            if o.result.measurement
            and o.result.measurement.ok
            and o.result.measurement.stats is not None
        ]
        biggest = max(
            (s.maxabs_old_new for s in stats if s.maxabs_old_new is not None), default=None
        )
        return FixSummary(
            reaches_graph=bool(changed),
            changed=tuple(o.regime.id for o in changed),
            values_move=tuple(o.regime.id for o in moved),
            max_abs_move=biggest,
            old_cannot_convert=tuple(
                o.regime.id
                for o in self.outcomes
                if o.result.shipped == Identity.OLD_CANNOT_CONVERT
                and o.regime.id not in self.elsewhere
            ),
            new_cannot_convert=tuple(
                o.regime.id
                for o in self.outcomes
                if o.result.shipped == Identity.NEW_CANNOT_CONVERT
                and o.regime.id not in self.elsewhere
            ),
            alone_wrong=tuple(
                o.regime.id
                for o in self.outcomes
                if o.verdict.alone == AloneCheck.WRONG and o.regime.id not in self.elsewhere
            ),
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
        return tuple(
            sorted(
                {
                    o.result.measurement.runtime
                    for f in self.fixes
                    for o in f.outcomes
                    if o.result.measurement and o.result.measurement.ok
                }
            )
        )


def _holders(bundles: list[Bundle], constructs: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(b.name for b in bundles if any(i.kind in constructs for i in b.instances))


def _held_by(
    bundles: list[Bundle], constructs: tuple[str, ...]
) -> tuple[tuple[str, str, int], ...]:
    return tuple(
        (b.name, instance_spec(b, i).label(), i.count)
        for b in bundles
        for i in b.instances
        if i.kind in constructs and has_probe(i.kind)
    )


def _exported_before(bundles: list[Bundle], release: str) -> tuple[str, ...]:
    """An asset or pipeline change concerns every bundle exported before it (or by an exporter
    the registry does not know)."""
    return tuple(
        b.name
        for b in bundles
        if b.exporter.converter == UNKNOWN
        or version_key(b.exporter.converter) < version_key(release)
    )


class _Regimes:
    """The regimes that probe a record, as its kind says (`oracle.catalog.record_kinds`): its
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

    def __init__(
        self,
        old: str,
        new: str,
        catalog: Catalog,
        use_cache: bool,
        progress: Progress,
        session: Session,
    ) -> None:
        self.old, self.new, self.catalog = old, new, catalog
        self.use_cache, self.progress, self.session = use_cache, progress, session
        self._made: Loads | None = None

    def construct_regimes(self, record: Fix) -> Loads:
        return ()

    def asset_probe(self, record: Fix) -> Loads:
        return ()

    def load_checks(self, record: Fix) -> Loads:
        if self._made is None:
            self._made = _load_checks(
                self.old, self.new, self.catalog, self.use_cache, self.progress, self.session
            )
        return self._made


def _load_checks(
    old: str,
    new: str,
    catalog: Catalog,
    use_cache: bool,
    progress: Progress,
    session: Session | None = None,
) -> tuple[tuple[LoadCheck, LoadCheck], ...]:
    out = []
    with opened(session, catalog, progress) as session:
        envs = (session.env(old), session.env(new))
        for regime in asset_regimes():
            progress(f"load checks of {regime.name} written by {old} and {new}")
            old_check, new_check = (
                load_check(regime.spec, env, cores(catalog), session, use_cache) for env in envs
            )
            out.append((old_check, new_check))
    return tuple(out)


Answer = Callable[[Bundle, Fix], BundleAnswer]


def concerned_bundles(fix: Fix, bundles: list[Bundle]) -> list[Bundle]:
    """The registry bundles a record's notes concern, as its kind says (in registry order)."""
    names = set(fix.record_kind.concerned(_Concerned(bundles), fix))
    return [b for b in bundles if b.name in names]


def release_notes(
    old: str,
    new: str,
    fixes: list[Fix],
    regimes: list[Regime],
    bundles: list[Bundle],
    catalog: Catalog,
    policy: Policy,
    use_cache: bool = True,
    progress: Progress = lambda _: None,
    session: Session | None = None,
    answer: Answer | None = None,
) -> ReleaseNotes:
    """`session`: the caller's, which may already hold the notes' comparisons (dispatched at
    once: `inventory.batch.release_notes`). `answer`: each concerned bundle's own answer for a
    record (`affected.Analyzer.answer` at the record's release), given beside the record's
    probes so the notes never leave a bundle's answer to be read off the library's cases."""
    check_pair(old, new, catalog)
    pairs = release_steps(catalog, old, new)
    with opened(session, catalog, progress) as session:
        # what `plan` lists as unexplained for these steps: a step that cannot be swept fails
        # the notes (an environment error), never leaves the section silently empty
        swept = sweep_steps(
            {s: bundles for s in pairs},
            fixes,
            catalog,
            policy,
            use_cache,
            progress,
            session,
            after_worker_failure=True,
        )
        if swept.failed:
            raise EnvError(next(iter(swept.failed.values())))
        chosen = between(fixes, old, new)
        wanted = regimes_of_notes(chosen, regimes)
        outcomes = run_regimes(
            wanted, old, new, catalog, policy, use_cache, progress, session, phase="records"
        )
        made = _Loads(old, new, catalog, use_cache, progress, session)
        loads = {fix.id: fix.record_kind.probed(made, fix) for fix in chosen}
        steps = located_steps(outcomes, old, new, fixes, catalog, use_cache, progress, session)
    bisected = load_bisected()
    concerned, held_by = _Concerned(bundles), _HeldBy(bundles)
    notes = tuple(
        FixNotes(
            fix,
            tuple(outcomes[r.id] for r in _regimes_of(fix, regimes)),
            fix.record_kind.concerned(concerned, fix),
            loads[fix.id],
            fix.record_kind.concerned(held_by, fix),
            {r.id: steps[r.id] for r in _regimes_of(fix, regimes) if r.id in steps},
            _elsewhere(fix, _regimes_of(fix, regimes), old, catalog, bisected),
        )
        for fix in chosen
    )
    if answer is not None:
        answered = _answered(chosen, bundles, answer, progress)
        notes = tuple(replace(f, answers=answered[f.fix.id]) for f in notes)
    return ReleaseNotes(old, new, notes, tuple(u for s in pairs for u in swept.found[s]))


def _answered(
    chosen: list[Fix], bundles: list[Bundle], answer: Answer, progress: Progress
) -> dict[str, tuple[BundleAnswer, ...]]:
    """Per record, each concerned bundle's answer in registry order; asked bundle by bundle,
    so a bundle's records are one phase of the progress, as in `plan`."""
    concerned = {fix.id: concerned_bundles(fix, bundles) for fix in chosen}
    out: dict[str, list[BundleAnswer]] = {fix.id: [] for fix in chosen}
    for bundle in bundles:
        for fix in chosen:
            if bundle in concerned[fix.id]:
                progress(Routine(f"{bundle.name}: fix {fix.label}"))
                out[fix.id].append(answer(bundle, fix))
    return {fix_id: tuple(answers) for fix_id, answers in out.items()}


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

    def __init__(
        self,
        regimes: list[Regime],
        old: str,
        catalog: Catalog,
        bisected: dict[tuple[str, str, str], Attributed],
    ) -> None:
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


def _elsewhere(
    fix: Fix,
    regimes: list[Regime],
    old: str,
    catalog: Catalog,
    bisected: dict[tuple[str, str, str], Attributed],
) -> dict[str, Attributed]:
    """The fix's regimes whose change in its own step bisection credits only to commits of
    other pull requests, as its kind reads bisection evidence."""
    return fix.record_kind.probed(_Bisected(regimes, old, catalog, bisected), fix)
