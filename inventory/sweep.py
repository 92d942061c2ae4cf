"""`sweep`: what changes between two converter releases, probe by probe, whatever the records
name; and the registry sweep of release steps.

`sweep` runs every regime it is given (the library's, or with `--registry` every distinct traced
instance of the shipped bundles) and says which changes no record explains. The registry sweep
of each release step (`sweep_steps`: every traced instance of the bundles that cross the step)
is also what `plan`, `affected` and the release notes' unexplained section read, so the four
agree on what no record explains for the same step and fix database. Both return plain data;
renderers live in `inventory/report/`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from inventory.attribution import (
    Step,
    explained_by,
    failing_both,
    locate,
    program_changed,
    release_steps,
    step_between,
)
from inventory.errors import UsageError
from inventory.instances import instance_spec, probed_keys
from inventory.policy import Policy
from inventory.registry import Bundle
from inventory.verdict import ProbeVerdict, judge
from oracle.catalog import Catalog, EnvError, Fix, Regime, version_key
from oracle.compare import ProbeResult, ProbeSpec
from oracle.constructs import has_probe
from oracle.infra import Progress, Routine
from oracle.session import Session, opened


@dataclass(frozen=True)
class RegimeOutcome:
    regime: Regime
    result: ProbeResult
    verdict: ProbeVerdict


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
        return tuple(
            o for o in self.failing_both if "worker" in (o.result.old.stage, o.result.new.stage)
        )


class NotStored(Exception):
    """A step read from the store only (`stored_only`) whose comparisons the store does not all
    hold (the message says how many it does): nothing was converted, and nothing is concluded
    from the part that is there."""


def check_pair(old: str, new: str, catalog: Catalog) -> None:
    """Both releases known, `new` the later (a usage error otherwise)."""
    catalog.release(old)
    catalog.release(new)
    if version_key(new) <= version_key(old):
        raise UsageError(f"--to {new} must be a later release than --from {old}")


def run_regimes(
    regimes: list[Regime],
    old: str,
    new: str,
    catalog: Catalog,
    policy: Policy,
    use_cache: bool,
    progress: Progress,
    session: Session | None = None,
    phase: str = "sweep",
    stored_only: bool = False,
) -> dict[str, RegimeOutcome]:
    """Each regime compared under `old` and `new`, judged with its own tolerance; `phase` names
    the progress lines (the release notes' records are a phase apart from their sweep).
    `stored_only`: each comparison read from the run or the store, none made and no environment
    built; `NotStored` when one is missing (a part of a sweep is not that sweep)."""
    distinct(regimes)
    out: dict[str, RegimeOutcome] = {}
    with opened(session, catalog, progress) as session:
        if stored_only:
            return _stored_regimes(regimes, old, new, policy, session)
        old_env, new_env = session.env(old), session.env(new)
        for i, regime in enumerate(regimes, start=1):
            progress(Routine(f"{phase} {old}->{new} [{i}/{len(regimes)}]: {regime.id}"))
            result = session.compare(regime.spec, old_env, new_env, use_cache=use_cache)
            out[regime.id] = RegimeOutcome(regime, result, judge(result, _tuned(policy, regime)))
    return out


def distinct(regimes: list[Regime]) -> None:
    """ValueError (a defect, not the user's) when two different probes share an id: outcomes
    are keyed by it, so one of them would silently be dropped from the sweep."""
    seen: dict[str, str] = {}
    for regime in regimes:
        key = regime.spec.key()
        if seen.setdefault(regime.id, key) != key:
            raise ValueError(f"two different probes share the regime id {regime.id!r}")


def _tuned(policy: Policy, regime: Regime) -> Policy:
    """The policy a regime is judged by: the run's override, else the regime's own tolerance."""
    return Policy(
        policy.tolerance, policy.override if policy.override is not None else regime.tolerance
    )


def _stored_regimes(
    regimes: list[Regime], old: str, new: str, policy: Policy, session: Session
) -> dict[str, RegimeOutcome]:
    a, b = session.had(old), session.had(new)
    out: dict[str, RegimeOutcome] = {}
    missing = 0
    results = (
        session.stored_all([(regime.spec, a, b) for regime in regimes])
        if a is not None and b is not None
        else [None] * len(regimes)
    )
    for regime, result in zip(regimes, results, strict=True):
        if result is None:
            missing += 1
            continue
        out[regime.id] = RegimeOutcome(regime, result, judge(result, _tuned(policy, regime)))
    if missing:
        held = len(regimes) - missing
        raise NotStored(f"the store holds {held} of its {len(regimes)} comparison(s)")
    return out


def located_steps(
    outcomes: dict[str, RegimeOutcome],
    old: str,
    new: str,
    fixes: list[Fix],
    catalog: Catalog,
    use_cache: bool,
    progress: Progress,
    session: Session | None = None,
) -> dict[str, tuple[Step, ...]]:
    """Over a range of several release steps, each changed regime compared step by step, so a
    change is credited only to the records of the step it happens in."""
    changed = [o for o in outcomes.values() if program_changed(o.result)]
    if len(release_steps(catalog, old, new)) < 2 or not changed:
        return {}
    with opened(session, catalog, progress) as session:
        return {
            o.regime.id: locate(session, o.regime.spec, old, new, o.result, fixes, use_cache)
            for o in changed
        }


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
    names = {key: f"{'+'.join(holders[key])}:{spec.label()}" for key, spec in specs.items()}
    # An id names one probe (outcomes are keyed by it, `bisect --only` takes it): where a
    # construct's label does not tell two instances of the same holders apart, their spec keys do.
    taken = Counter(names.values())
    return [
        Regime(
            spec.construct,
            names[key] if taken[names[key]] == 1 else f"{names[key]} #{key[:8]}",
            spec,
            False,
            None,
        )
        for key, spec in specs.items()
    ]


def sweep(
    old: str,
    new: str,
    fixes: list[Fix],
    regimes: list[Regime],
    catalog: Catalog,
    policy: Policy,
    use_cache: bool = True,
    progress: Progress = lambda _: None,
    source: str = "library",
    session: Session | None = None,
    stored_only: bool = False,
) -> Sweep:
    """`stored_only`: read from the store, nothing converted (`NotStored` when it lacks one); a
    range of several steps is then not located step by step (that converts)."""
    check_pair(old, new, catalog)
    outcomes = run_regimes(
        regimes, old, new, catalog, policy, use_cache, progress, session, stored_only=stored_only
    )
    changed_outcomes = [o for o in outcomes.values() if program_changed(o.result)]
    steps = (
        {}
        if stored_only
        else located_steps(outcomes, old, new, fixes, catalog, use_cache, progress, session)
    )
    changed = []
    for o in changed_outcomes:
        located = steps.get(o.regime.id, ())
        ids = (
            sorted({i for s in located for i in s.explained_by})
            if located
            else explained_by(fixes, o.regime.spec, old, new, o.result)
        )
        changed.append(SweepFinding(o, tuple(ids), located))
    failing = tuple(o for o in outcomes.values() if failing_both(o.result))
    return Sweep(
        old,
        new,
        len(outcomes),
        tuple(changed),
        len(outcomes) - len(changed) - len(failing),
        failing,
        source,
    )


@dataclass(frozen=True)
class StepSweeps:
    """The registry sweep of release steps: per step, the changes no record of it explains; a
    step that could not be swept maps to why in `failed` (nothing is known of it), one a read
    of the store alone could not find whole maps to why in `not_stored` (not looked for)."""

    found: dict[tuple[str, str], tuple[Unrecorded, ...]]
    failed: dict[tuple[str, str], str]
    keys: dict[str, frozenset[str]]  # per bundle, the spec keys of its probed instances
    not_stored: dict[tuple[str, str], str] = field(default_factory=dict)
    # how `found` was had: "computed" (the sweep was run) or "stored" (read, nothing converted)
    source: str = "computed"

    def of(self, bundle: str, steps: list[tuple[str, str]]) -> tuple[Unrecorded, ...]:
        """Those of one bundle's traced instances, in the given steps."""
        keys = self.keys.get(bundle, frozenset())
        return tuple(u for s in steps for u in self.found.get(s, ()) if u.spec.key() in keys)

    def unswept(self, steps: list[tuple[str, str]]) -> tuple[str, ...]:
        """`old->new could not run (why)` for each of these steps that could not be swept."""
        return tuple(
            f"{a}->{b} could not run ({self.failed[(a, b)]})"
            for a, b in steps
            if (a, b) in self.failed
        )


def sweep_steps(
    wanted: dict[tuple[str, str], list[Bundle]],
    fixes: list[Fix],
    catalog: Catalog,
    policy: Policy,
    use_cache: bool = True,
    progress: Progress = lambda _: None,
    session: Session | None = None,
    after_worker_failure: bool = False,
    stored_only: bool = False,
) -> StepSweeps:
    """`sweep --registry` of each consecutive release step over the traced instances of the
    bundles that cross it: the same regimes, stored comparisons and records, so a change is
    unexplained here exactly when that sweep says so.

    A step whose environment cannot be had is not swept, and said so. So is, unless
    `after_worker_failure`, a step one of whose releases had a worker die or time out earlier in
    the session: every instance would be converted there, each by a worker started again.

    `stored_only` (`affected` without `--sweep`): each step's sweep read from the store, as
    `plan` or `sweep --registry` left it, and nothing converted. A step the store does not hold
    whole is not looked for (`not_stored`): a part of the sweep is not read as the sweep, so
    the answer does not depend on which other answers happened to store which instances."""
    bundles = list({b.name: b for crossing in wanted.values() for b in crossing}.values())
    regimes = registry_regimes(bundles)  # named by every holder, as `sweep --registry` names them
    keys = {b.name: probed_keys(b) for b in bundles}
    found: dict[tuple[str, str], tuple[Unrecorded, ...]] = {}
    failed: dict[tuple[str, str], str] = {}
    not_stored: dict[tuple[str, str], str] = {}
    with opened(session, catalog, progress) as session:
        for (old, new), crossing in sorted(wanted.items(), key=lambda w: version_key(w[0][0])):
            mine = frozenset().union(*(keys[b.name] for b in crossing))
            if not mine:  # no traced instance crosses the step: nothing to convert, no env
                found[(old, new)] = ()
                continue
            if stored_only and not use_cache:
                not_stored[(old, new)] = "--no-cache: the store is not read"
                continue
            died = [
                f"a coreai-torch {v} worker failed earlier in this run: {why}"
                for v in (old, new)
                if (why := session.worker_failures.get(v))
            ]
            if died and not after_worker_failure and not stored_only:
                failed[(old, new)] = "; ".join(died)
                continue
            try:
                sw = sweep(
                    old,
                    new,
                    fixes,
                    [r for r in regimes if r.spec.key() in mine],
                    catalog,
                    policy,
                    use_cache,
                    progress,
                    "registry",
                    session,
                    stored_only,
                )
            except NotStored as exc:
                not_stored[(old, new)] = str(exc)
                continue
            except EnvError as exc:
                failed[(old, new)] = str(exc)
                continue
            # one step: each unexplained finding is that step's comparison of the instance
            found[(old, new)] = tuple(
                Unrecorded(
                    f.outcome,
                    step_between(fixes, f.outcome.regime.spec, old, new, f.outcome.result),
                )
                for f in sw.unexplained
            )
    return StepSweeps(found, failed, keys, not_stored, "stored" if stored_only else "computed")
