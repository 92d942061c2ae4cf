"""`inventory plan --to V`: for each bundle, every fix between its exporter and V, answered.

A plan probes the constructs its records name, and also sweeps every traced instance of the
bundle across every release step from its exporter to V (`sweep --registry`'s comparisons,
stored): a change no record of its step explains is listed apart and counted in the bundle's
level like a recorded one, so a missing record (a draft on release day) never turns a change of
what would ship into a "no".
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from inventory import batch
from inventory.affected import Analyzer
from inventory.answer_types import BundleAnswer
from inventory.attribution import Step, release_steps
from inventory.coverage import Coverage, coverage
from inventory.errors import InputFileError, UsageError
from inventory.ignore import Ignore, in_force, matching, unmatched
from inventory.load_answers import LoadAnswer, load_answer_record
from inventory.policy import Policy, accepted_unchecked
from inventory.probe_coverage import probe_ops, swept_results
from inventory.registry import Bundle, exporter_release
from inventory.shell_commands import trace_command, verify_command
from inventory.summary import BundleLine, Summary, summarise
from inventory.sweep import StepSweeps, Unrecorded, sweep_steps
from inventory.verdict import IGNORED, ProbeVerdict, Reexport, Verdict, judge, rank, worst
from oracle.catalog import Catalog, EnvError, Fix, RunFault, between, version_key
from oracle.compare import ProbeResult
from oracle.infra import Progress, Routine, read_text
from oracle.session import Session, opened

# A plan level and its key in the JSON record, in the record's order.
LEVEL_KEYS = (
    (Reexport.REQUIRED, "required"),
    (Reexport.INCONCLUSIVE, "inconclusive"),
    (Reexport.UNCHECKED, "unchecked"),
    (Reexport.OPTIONAL, "optional"),
    (Reexport.NO, "not_affected"),
    (IGNORED, "ignored"),
)


@dataclass(frozen=True)
class PlanItem:
    fix: Fix
    answer: BundleAnswer
    ignored: Ignore | None = None

    @property
    def level(self) -> str:
        return IGNORED if self.ignored else self.answer.reexport

    @property
    def load_failure(self) -> bool:
        """Forced by a runtime refusing the shipped asset: nothing runs, so it comes first."""
        return self.answer.load is not None and self.answer.verdict == Verdict.DOES_NOT_LOAD


@dataclass(frozen=True)
class Unexplained:
    """A program change in a release step where no record names the probe's construct: never
    credited to a fix of another step, listed apart, and counted in the bundle's level."""

    probe: str  # the probe's label
    construct: str
    step: Step
    verdict: ProbeVerdict  # what the change does to the shipped bundle (exporter -> target)
    evidence: str  # the step's comparison
    # the exporter -> target comparison the verdict rests on (its drift, when measured)
    result: ProbeResult | None = None

    @property
    def reason(self) -> str:
        note = f"; {self.step.note}" if self.step.note else ""
        return (
            f"changes in {self.step.label} and no record of that step explains it (none "
            f"names {self.construct}){note}; {self.verdict.verdict}: {self.verdict.reason}"
        )


def unexplained_changes(items: tuple[PlanItem, ...]) -> tuple[Unexplained, ...]:
    """Those the records' own probes found while locating their changes by step."""
    seen: dict[tuple[str, str], Unexplained] = {}
    for item in items:
        for p in item.answer.probes:
            for s in p.steps:
                key = (p.spec.key(), s.label)
                if s.unexplained and key not in seen:
                    seen[key] = Unexplained(
                        p.spec.label(),
                        p.spec.construct,
                        s,
                        p.elsewhere or p.verdict,
                        s.result.evidence,
                        p.result,
                    )
    return tuple(seen.values())


def swept_changes(
    session: Session,
    found: tuple[Unrecorded, ...],
    exporter: str,
    to: str,
    policy: Policy,
    use_cache: bool,
) -> tuple[Unexplained, ...]:
    """The registry sweep's unexplained changes of one bundle, each judged from the bundle's
    exporter to the target, as a recorded change is (a one-step range is the swept comparison
    itself, read once per session)."""
    out = []
    try:
        old, new = session.env(exporter), session.env(to)
        for u in found:
            result = session.compare(u.spec, old, new, use_cache=use_cache)
            out.append(
                Unexplained(
                    u.spec.label(),
                    u.spec.construct,
                    u.step,
                    judge(result, policy),
                    u.step.result.evidence,
                    result,
                )
            )
    except RunFault:
        raise  # the store cannot be written, an environment cannot run: the run's error
    except EnvError as exc:
        # an environment could not be built when a comparison first had to convert in it
        why = ProbeVerdict(Verdict.INCONCLUSIVE, Reexport.INCONCLUSIVE, str(exc))
        return tuple(
            Unexplained(u.spec.label(), u.spec.construct, u.step, why, u.step.result.evidence)
            for u in found
        )
    return tuple(out)


def merged(swept: tuple[Unexplained, ...], own: tuple[Unexplained, ...]) -> tuple[Unexplained, ...]:
    """The sweep's findings, then any the records' probes found that it does not hold (a
    pipeline record's asset probe is no traced instance)."""
    keys = {(u.probe, u.construct, u.step.label) for u in swept}
    return swept + tuple(u for u in own if (u.probe, u.construct, u.step.label) not in keys)


@dataclass(frozen=True)
class BundlePlan:
    bundle: str
    exporter: str
    exporter_assumed: bool
    items: tuple[PlanItem, ...]
    # Question 2 for the bundle, whatever the records in range: does its asset load where it
    # ships? An asset record in range carries the same answer as a plan item.
    load: LoadAnswer | None = None
    unexplained: tuple[Unexplained, ...] = ()
    # release steps whose registry sweep could not run ("old->new: why"): a change no record
    # explains cannot be ruled out there, so the bundle cannot be answered "no"
    unswept: tuple[str, ...] = ()
    # the whole program's check (inventory.verify.service.BundleVerify), when one is stored or
    # `--verify` measured it: its unrecorded changes count in the level like the sweep's
    whole: Any = None
    # what the plan rests on: each op of the traced program probed, checked whole, or not
    # covered over the bundle's steps (`inventory.coverage`); None when no step is compared
    coverage: Coverage | None = None

    def by_level(self, level: str) -> tuple[PlanItem, ...]:
        return tuple(i for i in self.items if i.level == level)

    @property
    def not_checked(self) -> tuple[PlanItem, ...]:
        """The records answered without the bundle's own program (a pipeline record the asset
        probe answered alone): `--verify` checks them."""
        return tuple(i for i in self.items if i.answer.not_checked)

    @property
    def load_explained_by(self) -> tuple[str, ...]:
        return tuple(i.fix.id for i in self.items if i.answer.load is not None)

    @property
    def reexport(self) -> Reexport:
        levels = [i.level for i in self.items if i.level != IGNORED]
        if self.load is not None and not self.load_explained_by:
            # A refusal no asset record in range explains still forces a re-export.
            levels.append(self.load.reexport)
        # A change no record explains still changes what would ship.
        levels += [u.verdict.reexport for u in self.unexplained]
        if self.unswept:
            levels.append(Reexport.INCONCLUSIVE)
        if self.whole is not None:
            levels += [u["reexport"] for u in self.whole.unrecorded]
        level = worst(levels)
        if level == Reexport.NO and self.uncovered:
            # A "no" is earned: the sweep sees only the traced instances the library probes,
            # so with ops no probe and no whole-program check covers, nothing moving is all
            # that can be said
            return Reexport.UNCHECKED
        return level

    @property
    def uncovered(self) -> bool:
        """Some op of the bundle is neither probed nor checked whole over its steps (or its
        ops were never counted)."""
        return self.coverage is not None and not self.coverage.complete


@dataclass(frozen=True)
class BaselineChange:
    """A record whose level for a bundle differs from a previous plan's: both sides."""

    bundle: str
    item: PlanItem  # the answer now
    before: str | None  # the baseline's level (None: the baseline did not have the record)

    @property
    def now(self) -> str:
        return self.item.level


@dataclass(frozen=True)
class Plan:
    to: str
    bundles: tuple[BundlePlan, ...]
    warnings: tuple[str, ...]
    baseline: str | None = None  # the baseline file, when only changes since it are kept
    verify_computed: bool = False  # `--verify`: every whole-program check measured now
    # with a baseline: each (bundle, record) whose level differs from the baseline's
    changes: tuple[BaselineChange, ...] = ()

    @property
    def verified(self) -> dict[str, Any]:
        """bundle -> its whole-program check (those stored, or all with --verify)."""
        return {b.bundle: b.whole for b in self.bundles if b.whole is not None}

    @property
    def reexport(self) -> Reexport:
        return worst(b.reexport for b in self.bundles)


def plan(
    to: str,
    bundles: list[Bundle],
    fixes: list[Fix],
    catalog: Catalog,
    policy: Policy,
    ignores: list[Ignore] | None = None,
    use_cache: bool = True,
    progress: Progress = lambda _: None,
    runtimes: tuple[str, ...] | None = None,
    session: Session | None = None,
    checks: dict[str, Any] | None = None,
    recipe_root: Path | None = None,
    allow_code: bool = False,
) -> Plan:
    """`session`: a caller's open session, whose stored results are then read once for several
    plans (e.g. the same bundles under several fix databases). `checks`: each bundle's
    whole-program check of `to` (`inventory.verify.service.verified`): it joins the bundle's
    answer (one answer: a record it credits takes its step's level, its unrecorded changes
    count); `recipe_root`: where a recipe-traced bundle's builder is, for its check."""
    catalog.release(to)
    checks = checks or {}
    active, warnings = in_force(ignores or [])
    seen: set[tuple[str, str]] = set()
    out = []
    with opened(session, catalog, progress) as session:
        analyzer = Analyzer(
            session,
            policy,
            use_cache,
            runtimes=runtimes,
            fixes=fixes,
            checks=checks,
            recipe_root=recipe_root,
            allow_code=allow_code,
        )
        ranges = {b.name: _range(b, to, catalog) for b in bundles}
        # every comparison below (records, the sweep of every step, the follow-ups their
        # results call for), handed to the executor at once; the plan is assembled after
        session.dispatch(batch.plan(analyzer, bundles, fixes, to, ranges), use_cache)
        answered = []
        for bundle in bundles:
            exporter, assumed = exporter_release(bundle.exporter, catalog)
            load = analyzer.load_answer(bundle, to)
            items: list[PlanItem] = []
            for fix in between(fixes, exporter, to):
                progress(Routine(f"{bundle.name}: fix {fix.label}"))
                answer = analyzer.answer(bundle, fix, to)
                ids = {fix.id, *fix.aliases}
                ignored = matching(active, ids, bundle.name)
                seen.update((i, bundle.name) for i in ids)
                items.append(PlanItem(fix, answer, ignored))
            answered.append(
                (bundle, exporter, assumed, _ordered(joined(items, checks.get(bundle.name))), load)
            )
        # After the records' probes, so a step where a worker already failed is not swept
        # (it would start a worker again for every instance), and is said so.
        swept = _sweep(bundles, ranges, fixes, catalog, policy, use_cache, progress, session)
        for bundle, exporter, assumed, ordered, load in answered:
            found = swept_changes(
                session, swept.of(bundle.name, ranges[bundle.name]), exporter, to, policy, use_cache
            )
            unswept = swept.unswept(ranges[bundle.name])
            warnings += [
                f"{bundle.name}: the registry sweep of {why}; a change no record "
                f"explains cannot be ruled out there"
                for why in unswept
            ]
            out.append(
                BundlePlan(
                    bundle.name,
                    exporter,
                    assumed,
                    ordered,
                    load,
                    merged(found, unexplained_changes(ordered)),
                    unswept,
                    checks.get(bundle.name),
                    _coverage(session, bundle, ranges[bundle.name], ordered, checks, to),
                )
            )
    warnings += unmatched(active, seen)
    warnings += accepted_unchecked(policy, [b.bundle for b in out if b.reexport == "unchecked"])
    return Plan(to, tuple(out), tuple(warnings))


def _coverage(
    session: Session,
    bundle: Bundle,
    steps: list[tuple[str, str]],
    items: tuple[PlanItem, ...],
    checks: dict[str, Any],
    to: str,
) -> Coverage | None:
    """What the plan rests on for the bundle over its steps: the ops its records' probes and
    the registry sweep of each step cover, or every op when its whole-program check holds every
    step."""
    if not steps:
        return None
    labels = tuple(f"{a}->{b}" for a, b in steps)
    whole = checks.get(bundle.name)
    held = (
        whole is not None
        and not whole.record.get("error")
        and set(labels) <= {s.step for s in whole.steps}
    )
    results = [p.result for i in items for p in i.answer.probes]
    results += swept_results(session, bundle, steps)
    return coverage(
        bundle.trace,
        probe_ops(results),
        held,
        labels,
        verify_command(bundle.name, to),
        trace_command(bundle),
    )


def _ordered(items: list[PlanItem]) -> tuple[PlanItem, ...]:
    """Correctness first: what forces a re-export (an asset a runtime refuses before anything
    else), then what cannot be decided."""
    return tuple(
        sorted(
            items, key=lambda i: (rank(i.level), not i.load_failure, version_key(i.fix.ships_in))
        )
    )


def joined(items: list[PlanItem], whole: Any) -> list[PlanItem]:
    """Each record the whole-program check credits with regions of a step takes the level
    verify gives that step (the drift it measured there: the model-level runs when they ran,
    else the regions' own cuts, saying which), so the item and the check cannot disagree; what
    the record's probes said stays in its chain. Records it credits with nothing keep their
    own answer (a construct the built form lacks, a step it does not cover)."""
    if whole is None or whole.record.get("error"):
        return items
    steps = {s.step: s for s in whole.steps}
    out = []
    for item in items:
        credited = sorted({r.step for r in whole.regions if item.fix.id in r.explained_by})
        step = steps.get(credited[-1]) if credited else None
        answer = item.answer
        if (
            step is None
            or answer.load is not None
            or (
                (answer.whole_program or {}).get("step") == step.step
                and answer.reexport == step.reexport
            )
        ):
            out.append(item)  # not credited, or already answered from this step's level
            continue
        form = whole.record["form"]["form"]
        reason = f"the whole {form} program in {step.step} ({step.drift_source}): {step.reason}"
        chain = (
            *answer.chain,
            f"joined to the bundle's whole-program check: {reason} (before "
            f"it: {answer.verdict}, re-export {answer.reexport}: {answer.reason})",
        )
        out.append(
            replace(
                item,
                answer=replace(
                    answer,
                    verdict=step.verdict,
                    reexport=step.reexport,
                    reason=reason,
                    chain=chain,
                ),
            )
        )
    return out


def _range(bundle: Bundle, to: str, catalog: Catalog) -> list[tuple[str, str]]:
    """The release steps from the bundle's exporter (as answered: assumed if unrecorded) to the
    target; none when the exporter is not a release the oracle can build."""
    exporter, _ = exporter_release(bundle.exporter, catalog)
    return release_steps(catalog, exporter, to) if exporter in catalog.releases else []


def _sweep(
    bundles: list[Bundle],
    ranges: dict[str, list[tuple[str, str]]],
    fixes: list[Fix],
    catalog: Catalog,
    policy: Policy,
    use_cache: bool,
    progress: Progress,
    session: Session,
) -> StepSweeps:
    """Each step any bundle crosses, swept over the instances of the bundles that cross it."""
    wanted: dict[tuple[str, str], list[Bundle]] = {}
    for bundle in bundles:
        for step in ranges[bundle.name]:
            wanted.setdefault(step, []).append(bundle)
    return sweep_steps(wanted, fixes, catalog, policy, use_cache, progress, session)


def plan_record(p: Plan) -> dict:
    """The stable JSON shape of a plan (also what --baseline reads back)."""
    from inventory.verify.record import bundle_record

    def item(i: PlanItem, b: BundlePlan) -> dict:
        evidence = [pr.result.evidence for pr in i.answer.probes if pr.result]
        if i.answer.load is not None:
            evidence += list(i.answer.load.evidence)
        entry: dict[str, Any] = {
            "fix": i.fix.id,
            "kind": i.fix.kind,
            "title": i.fix.title,
            "verdict": i.answer.verdict,
            "reason": i.answer.reason,
            "changed_in": changed_in(i.answer),
            "chain": list(i.answer.chain),
            "runtime": "; ".join(i.answer.runtimes) or None,
            "remedies": list(i.answer.remedies),
            "evidence": evidence,
            "whole_program": whole_program(b, i.fix),
            "not_checked": i.answer.not_checked or None,
        }
        if i.ignored:
            entry["ignored"] = {
                "reason": i.ignored.reason,
                "expires": i.ignored.expires.isoformat() if i.ignored.expires else None,
                # the level the finding has without the ignore file
                "level": i.answer.reexport,
            }
        return entry

    changed = {(c.bundle, c.item.fix.id) for c in p.changes}

    def keep(b: BundlePlan, i: PlanItem) -> bool:
        """With a baseline, only the answers that changed since it are listed."""
        return p.baseline is None or (b.bundle, i.fix.id) in changed

    return {
        "to": p.to,
        "reexport": p.reexport,
        "baseline": p.baseline,
        "bundles": [
            {
                "bundle": b.bundle,
                "exporter": b.exporter,
                "exporter_assumed": b.exporter_assumed,
                "reexport": b.reexport,
                "deployment": b.load.deployment.to_json() if b.load else None,
                "load": load_answer_record(b.load),
                "load_explained_by": list(b.load_explained_by),
                **{
                    key: [item(i, b) for i in b.by_level(level) if keep(b, i)]
                    for level, key in LEVEL_KEYS
                },
                "unexplained": [
                    {
                        "probe": u.probe,
                        "construct": u.construct,
                        "step": u.step.label,
                        "verdict": u.verdict.verdict,
                        "reexport": u.verdict.reexport,
                        "reason": u.reason,
                        "note": u.step.note or None,
                        "drift": drift(u.result),
                        "evidence": u.evidence,
                    }
                    for u in b.unexplained
                ],
                "verify": bundle_record(b.whole) if b.whole is not None else None,
                "not_checked": [i.fix.id for i in b.not_checked],
                "coverage": b.coverage.to_json() if b.coverage is not None else None,
            }
            for b in p.bundles
        ],
        "suggest": suggestion(p),
        "changes": [
            {"bundle": c.bundle, "fix": c.item.fix.id, "before": c.before, "now": c.now}
            for c in p.changes
        ],
    }


def setting(b: BundlePlan, level: str) -> list[str]:
    """The findings of a bundle at one level: its records (with their verdicts and the release
    steps they change in), a load failure no record explains, the changes no record explains,
    a step the sweep could not cover, the whole-program check's unrecorded changes."""
    cells = [f"{i.fix.label} ({i.answer.verdict}{_steps(i)})" for i in b.by_level(level)]
    if (
        b.load is not None
        and not b.load_explained_by
        and b.load.reexport == level
        and level != Reexport.NO
    ):
        cells.append(f"load ({b.load.verdict})")
    cells += [
        f"unrecorded {u.construct} ({u.verdict.verdict}, changes in {u.step.label})"
        for u in b.unexplained
        if u.verdict.reexport == level
    ]
    if level == Reexport.INCONCLUSIVE:
        cells += [f"not swept: {why}" for why in b.unswept]
    if level == Reexport.UNCHECKED and b.uncovered and b.coverage is not None:
        cells.append(f"coverage ({b.coverage.cell()})")
    if b.whole is not None:
        cells += [
            f"whole program: unrecorded change in {u['step']} {u['stage']}"
            for u in b.whole.unrecorded
            if u["reexport"] == level
        ]
    return cells


def _steps(i: PlanItem) -> str:
    """The release steps the item's probes change in, when the range has more than one."""
    steps = sorted({s.label for p in i.answer.probes if len(p.steps) > 1 for s in p.changed_in})
    return f", changes in {' '.join(steps)}" if steps else ""


def plan_summary(p: Plan) -> Summary:
    """Per bundle its level and the findings that set it (a bundle at `no`: how many records
    it was checked against)."""

    def reason(b: BundlePlan) -> str:
        if b.reexport == Reexport.NO:
            n = len(b.by_level(Reexport.NO))
            return f"{n} record{'' if n == 1 else 's'} in range, none affects it"
        return ", ".join(setting(b, b.reexport)) or "-"

    return summarise(BundleLine(b.bundle, b.reexport, reason(b)) for b in p.bundles)


def suggestion(p: Plan) -> str | None:
    """One line when a record was answered without a bundle's own program: the command that
    checks it."""
    missing = [
        f"{b.bundle} ({', '.join(i.fix.label for i in b.not_checked)})"
        for b in p.bundles
        if b.not_checked
    ]
    if not missing:
        return None
    return (
        f"not checked on their own programs: {'; '.join(missing)}: the asset probe "
        f"answered alone; `inventory plan --to {p.to} --verify` checks each bundle's "
        "whole program"
    )


def whole_program(b: BundlePlan, fix: Fix) -> list[dict]:
    """The regions of the bundle's whole program this record explains, per step and stage: the
    whole-program evidence joins the record's own reasons."""
    if b.whole is None:
        return []
    out: dict[tuple[str, str], dict] = {}
    for r in b.whole.regions:
        if fix.id not in r.explained_by:
            continue
        g = out.setdefault(
            (r.step, r.stage),
            {
                "step": r.step,
                "stage": r.stage,
                "regions": 0,
                "rule": r.explained_how[fix.id],
                "modules": [],
                "evidence": r.evidence,
            },
        )
        g["regions"] += 1
        g["modules"] += [m for m in r.modules if m not in g["modules"]]
    return list(out.values())


def drift(result: ProbeResult | None) -> dict | None:
    """How far a change moves the outputs (exporter -> target, on one runtime), when both
    programs were run: the numbers the verdict applies the policy to."""
    m = result.measurement if result is not None else None
    if result is None or m is None or not m.ok or m.stats is None:
        return None
    s = m.stats
    return {
        "runtime": m.runtime,
        "maxabs_old_new": s.maxabs_old_new,
        "maxabs_old_ref": s.maxabs_old_ref,
        "maxabs_new_ref": s.maxabs_new_ref,
        "ref_magnitude": s.ref_magnitude,
        "evidence": result.evidence,
    }


def changed_in(answer: BundleAnswer) -> list[dict]:
    """The release steps in which this answer's probes change, with the records of each step
    that explain the change (none: unexplained)."""
    out: dict[str, set[str]] = {}
    for p in answer.probes:
        for s in p.changed_in:
            out.setdefault(s.label, set()).update(s.explained_by)
    return [{"step": step, "explained_by": sorted(ids)} for step, ids in sorted(out.items())]


def since_baseline(p: Plan, baseline: Path) -> Plan:
    """The plan whole (its levels are the plan's), with each (bundle, record) answer whose
    level differs from a previous plan's JSON as a change holding both sides."""
    before = read_baseline(baseline)
    changes = tuple(
        BaselineChange(b.bundle, i, before.get((b.bundle, i.fix.id)))
        for b in p.bundles
        for i in b.items
        if before.get((b.bundle, i.fix.id)) != i.level
    )
    return replace(p, baseline=str(baseline), changes=changes)


def baseline_reexport(p: Plan) -> Reexport:
    """With a baseline, what the exit code follows: the worst level a change comes to (no
    change: no)."""
    return worst(c.now for c in p.changes if c.now != IGNORED)


def read_baseline(baseline: Path) -> dict[tuple[str, str], str]:
    """(bundle, fix) -> level in a previous `plan --json`; anything of another shape is one line
    naming the file and what is wrong."""
    text = read_text(baseline, InputFileError)  # a regular file of bounded size (not /dev/zero)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InputFileError(f"{baseline}: not a plan JSON ({exc})") from None
    except RecursionError:  # json parses nested arrays recursively
        raise InputFileError(f"{baseline}: not a plan JSON (nested too deeply)") from None
    if not isinstance(data, dict):
        raise InputFileError(f"{baseline}: not a plan JSON (not an object)")
    if isinstance(data.get("result"), dict):
        data = data["result"]  # a `plan --json` envelope
    if "bundles" not in data:
        raise UsageError(f"{baseline}: not a plan JSON (no 'bundles')")
    if not isinstance(data["bundles"], list):
        raise InputFileError(f"{baseline}: not a plan JSON ('bundles' is not a list)")
    before: dict[tuple[str, str], str] = {}
    for n, b in enumerate(data["bundles"], start=1):
        where = f"{baseline}: bundles[{n}]"
        if not isinstance(b, dict) or not isinstance(b.get("bundle"), str):
            raise InputFileError(f"{where} is not a bundle's plan (no 'bundle' name)")
        for level, key in LEVEL_KEYS:
            entries = b.get(key, [])
            if not isinstance(entries, list):
                raise InputFileError(f"{where}: '{key}' is not a list")
            for entry in entries:
                fix = entry.get("fix") if isinstance(entry, dict) else None
                if isinstance(fix, bool) or not isinstance(fix, str | int):
                    raise InputFileError(f"{where}: an entry of '{key}' has no 'fix' id")
                before[(b["bundle"], str(fix))] = level
    return before
