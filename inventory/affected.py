"""`inventory affected --fix N`: which shipped bundles does one converter fix change?

The answer stays about N. When N's own release step also holds changes of a bundle's traced
instances that no record of the step explains (the registry sweep, as `plan` reads it), the
bundle's answer says so in one line and points to `plan`, which counts them.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from inventory import batch
from inventory.answer_types import (
    COMPUTED,
    NOT_LOOKED_FOR,
    STORED,
    AffectedReport,
    BundleAnswer,
    ConditionFinding,
    ProbeAnswer,
    detours,
)
from inventory.attribution import Step, locate, own_step, step_line
from inventory.coverage import coverage
from inventory.deployment import Deployment, deployment
from inventory.errors import UsageError
from inventory.ignore import Ignore, in_force, matching, unmatched
from inventory.instances import instance_spec
from inventory.kind_answers import (
    Framed,
    Question,
    asset_answer,
    asset_spec,
    pipeline_answer,
    whole_program,
)
from inventory.load_answers import LoadAnswer, answer_load
from inventory.policy import Policy, accepted_unchecked
from inventory.probe_coverage import probe_ops, swept_results
from inventory.registry import Bundle, Instance, exporter_release
from inventory.shell_commands import trace_command, verify_command, weights_command
from inventory.sweep import StepSweeps, sweep_steps
from inventory.verdict import ProbeVerdict, Reexport, Verdict, judge, rank, worst
from inventory.verify.mode import VerifyMode
from oracle.catalog import (
    Catalog,
    Condition,
    EnvError,
    Fix,
    RunFault,
    check,
    cores,
    load_conditions,
    load_fixes,
    version_key,
)
from oracle.compare import ProbeResult, ProbeSpec
from oracle.constructs import get as construct_of
from oracle.constructs import has_probe
from oracle.envs import Env
from oracle.infra import Checkpoint, Progress, Routine, instance_tensors, regular_file
from oracle.load_check import LoadCheck, RuntimeOutcome, load_check
from oracle.session import Session


class Analyzer:
    """Answers bundle x fix questions within one session (environments and worker pool)."""

    def __init__(
        self,
        session: Session,
        policy: Policy,
        use_cache: bool = True,
        weights: dict[str, Path] | None = None,
        runtimes: tuple[str, ...] | None = None,
        fixes: list[Fix] | None = None,
        verify: VerifyMode | None = None,
        checks: dict[str, Any] | None = None,
        recipe_root: Path | None = None,
        allow_code: bool = False,
    ) -> None:
        self.session = session
        # `--verify`: a pipeline record's step is measured on the bundle's whole program when
        # no check of it is stored (else a stored one is read, and the asset probe is the
        # fallback that says so); `--verify auto`: only where the asset probe's answer would
        # leave the bundle unchecked
        self.verify = verify
        # bundle -> the whole-program check the caller holds (`plan`'s, of its target): a
        # pipeline record of a step it covers is answered from it
        self.checks = checks or {}
        # `--recipe-root`: a recipe-traced bundle's whole module is built by its own builder
        # from that checkout (`--allow-code`: code the registry names outside the project)
        self.recipe_root = recipe_root
        self.allow_code = allow_code
        # every record, to credit a change to the records of the step it happens in
        self.fixes = fixes if fixes is not None else load_fixes()
        self._steps: dict[tuple[str, str, str], tuple[Step, ...]] = {}
        self.catalog = session.catalog
        self.progress = session.progress
        self.weights = weights or {}
        self._checkpoints: dict[Path, Checkpoint] = {}
        self.conditions = load_conditions()
        self.policy = policy
        self.use_cache = use_cache
        self.runtime_override = runtimes  # --runtime
        self._load_checks: dict[tuple[str, str], LoadCheck] = {}
        self._load_answers: dict[tuple[str, str], LoadAnswer] = {}
        self._wholes: dict[tuple[str, str, str, str, bool], tuple[Any, str]] = {}

    def whole(
        self, bundle: Bundle, exporter: str, old: str, fix: Fix, measure: bool = False
    ) -> tuple[Any, str]:
        """`kind_answers.whole_program`, once per run: the batch plan asks it first."""
        key = (bundle.name, exporter, old, fix.id, measure)
        if key not in self._wholes:
            self._wholes[key] = whole_program(self, bundle, exporter, old, fix, measure)
        return self._wholes[key]

    def deployment(self, bundle: Bundle, target: str) -> Deployment:
        return deployment(bundle, self.catalog, target, self.runtime_override)

    def load_check(self, bundle: Bundle, release: str) -> LoadCheck:
        """The asset `release` writes for a probe shaped like the bundle, on every runtime of
        the catalog (deployments pick from it; one stored check serves them all)."""
        spec = asset_spec(bundle)
        key = (release, spec.key())
        if key not in self._load_checks:
            self.progress(Routine(f"{bundle.name}: load check of a coreai-torch {release} asset"))
            try:
                exporter = self.session.env(release)
            except EnvError as exc:
                # No exporter environment: every runtime `not-run`, the answer inconclusive.
                why = f"no environment for coreai-torch {release}: {exc}"
                return LoadCheck(
                    spec,
                    release,
                    {},
                    False,
                    why,
                    tuple(
                        RuntimeOutcome(c, "not-run", "environment", why)
                        for c in cores(self.catalog)
                    ),
                    "",
                )
            self._load_checks[key] = load_check(
                spec, exporter, cores(self.catalog), self.session, self.use_cache
            )
        return self._load_checks[key]

    def load_answer(self, bundle: Bundle, target: str) -> LoadAnswer:
        """Question 2 for one bundle: does its shipped asset load on its deployment runtimes?"""
        key = (bundle.name, target)
        if key not in self._load_answers:
            self._load_answers[key] = answer_load(
                bundle,
                self.deployment(bundle, target),
                target,
                self.catalog,
                lambda release: self.load_check(bundle, release),
            )
        return self._load_answers[key]

    def answer(self, bundle: Bundle, fix: Fix, target: str) -> BundleAnswer:
        """Which of the bundle's shipped programs does the record change, re-exported with
        `target`? Answered the way the record's kind says (`oracle/catalog/record_kinds.py`)."""
        return fix.record_kind.answer(self, Question(bundle, fix, target))

    # the ways of answering a kind picks (oracle.catalog.record_kinds.AnswerContext)

    def by_load_check(self, question: Question) -> BundleAnswer:
        # no program comparison: does the shipped asset load where it ships?
        return asset_answer(self, question)

    def by_whole_program(self, question: Question) -> BundleAnswer:
        framed = self._framed(question)
        return self._undecidable(framed) or pipeline_answer(self, framed)

    def by_construct_probes(self, question: Question) -> BundleAnswer:
        framed = self._framed(question)
        return self._undecidable(framed) or self._lowering_answer(framed)

    def _framed(self, question: Question) -> Framed:
        """The answer's start: the exporter it is answered from, and the instances of the
        record's constructs."""
        bundle, fix = question.bundle, question.fix
        exporter, assumed = exporter_release(bundle.exporter, self.catalog)
        if assumed:
            line = (
                f"exporter not recorded ({bundle.exporter.source}); assumed the oldest "
                f"supported release, coreai-torch {exporter}"
            )
        else:
            line = (
                f"exported with coreai-torch {bundle.exporter.converter} ({bundle.exporter.source})"
            )
        instances = tuple(i for i in bundle.instances if i.kind in fix.constructs)
        return Framed(
            question, exporter, instances, self.deployment(bundle, question.target), [line]
        )

    def _undecidable(self, framed: Framed) -> BundleAnswer | None:
        """The answer decided before any program is compared: by an exporter the oracle cannot
        build, or by versions alone."""
        fix, exporter = framed.question.fix, framed.exporter
        if exporter not in self.catalog.releases:
            return framed.done(
                Verdict.INCONCLUSIVE,
                Reexport.INCONCLUSIVE,
                f"exporter coreai-torch {exporter} is not a release the oracle can build",
            )
        if version_key(exporter) >= version_key(fix.ships_in):
            # Decided by versions alone: the bundle was exported with the fix in place.
            return framed.done(
                Verdict.NOT_AFFECTED,
                Reexport.NO,
                f"fix {fix.label} ships in {fix.ships_in}; already in {exporter}",
            )
        return None

    def _lowering_answer(self, framed: Framed) -> BundleAnswer:
        """A lowering record: what tracing found of its constructs decides whether anything is
        compared; each instance is then probed under the exporter and the target."""
        bundle, fix, target = framed.question.bundle, framed.question.fix, framed.question.target
        instances, chain, done = framed.instances, framed.chain, framed.done
        what = " or ".join(fix.constructs)
        looked_for = set(bundle.trace.get("detected", []))
        unseen = [c for c in fix.constructs if c not in looked_for]
        if not instances and unseen:
            # Absence is only evidence if the trace looked: never read "not found" as "absent".
            return done(
                Verdict.INCONCLUSIVE,
                Reexport.INCONCLUSIVE,
                f"the recorded trace did not look for {', '.join(unseen)} (no detector "
                f"when it ran); re-trace with `inventory trace {bundle.name} --write`",
            )
        if not instances:
            chain.append(
                f"tracing found no {what} in the exported graph "
                f"({bundle.trace.get('summary', 'see recipes.toml')})"
            )
            return done(Verdict.NOT_AFFECTED, Reexport.NO, f"no {what} in this bundle")
        chain.append(
            f"tracing found {sum(i.count for i in instances)} {what} "
            f"in {len(instances)} parameter set(s)"
        )
        missing = sorted({i.kind for i in instances if not has_probe(i.kind)})
        if missing:
            return done(
                Verdict.INCONCLUSIVE,
                Reexport.INCONCLUSIVE,
                f"the probe library has no probe for {', '.join(missing)} yet",
            )
        probes: list[ProbeAnswer] = []
        findings: list[ConditionFinding] = []
        measured_lines: list[str] = []
        try:
            envs = self.session.env(framed.exporter), self.session.env(target)
            for instance in instances:
                weights = self.weights.get(bundle.name)
                if weights is not None and construct_of(instance.kind).checkpoint:
                    # The bundle's own tensors: each module measured, no threshold inferred.
                    own = [
                        self._credit(p, fix)
                        for p in self._own_tensors(bundle, instance, weights, *envs)
                    ]
                    probes.extend(own)
                    measured_lines += _measured_lines(instance, own, weights)
                    continue
                decided, found = self._under_conditions(bundle, instance, fix, *envs)
                probes.append(decided)
                findings += found
        except RunFault:
            raise  # the store cannot be written, an environment cannot run: the run's error
        except EnvError as exc:
            # an environment a probe converts in could not be built (when it first had to be)
            return done(Verdict.INCONCLUSIVE, Reexport.INCONCLUSIVE, str(exc))
        return self._concluded(framed, probes, findings, measured_lines)

    def _under_conditions(
        self, bundle: Bundle, instance: Instance, fix: Fix, old_env: Env, new_env: Env
    ) -> tuple[ProbeAnswer, list[ConditionFinding]]:
        """One instance probed with trained-looking values, then under each condition of its
        construct: the answer that applies to the bundle, and the conditions that make it
        worse (decided by the bundle's weights when given)."""
        trained = self._credit(self.probe(bundle, instance, old_env, new_env), fix)
        decided = trained
        findings = []
        for condition in self.conditions.get(instance.kind, []):
            variant = self._credit(self.probe(bundle, instance, old_env, new_env, condition), fix)
            if _rank(variant) >= _rank(trained):
                continue  # these values do not make it worse: no condition
            weights = self.weights.get(bundle.name)
            found = ConditionFinding(
                instance,
                condition,
                trained,
                variant,
                check(condition, weights) if weights else None,
            )
            findings.append(found)
            if _rank(found.decided) < _rank(decided):
                decided = found.decided
        return decided, findings

    def _concluded(
        self,
        framed: Framed,
        probes: list[ProbeAnswer],
        findings: list[ConditionFinding],
        measured_lines: list[str],
    ) -> BundleAnswer:
        """The probes' answer: the worst level decides, and the chain says each probe's verdict,
        each condition and where a runtime refused the exporter's asset."""
        bundle, chain = framed.question.bundle, framed.chain
        level = worst(p.verdict.reexport for p in probes)
        deciding = next(p for p in probes if p.verdict.reexport == level)
        chain.extend(
            f"{p.spec.label()}: {p.verdict.verdict} - {p.verdict.reason}"
            for p in probes
            if not p.module
        )
        chain.extend(measured_lines)
        reason = deciding.verdict.reason
        if deciding.module:
            reason = f"{deciding.module} (its own tensors): {reason}"
        for f in findings:
            worse = f.adversarial.verdict
            if f.check is None:
                # a command that takes the checkpoint, whatever command printed the answer
                # (`plan` has no --weights): the same question, for the same release
                target = framed.question.target
                run = weights_command(
                    framed.question.fix.id,
                    bundle.name,
                    None if target == framed.question.fix.ships_in else target,
                )
                note = (
                    f"if {f.condition.when}: {worse.verdict}, re-export {worse.reexport} "
                    f"(to decide from the bundle's checkpoint: `{run}`)"
                )
                reason += f"; {note}"
            else:
                verdict = "holds" if f.check.holds else "does not hold"
                note = (
                    f"condition '{f.condition.when}' {verdict} in {f.check.weights}: "
                    f"{f.check.detail}"
                )
            chain.append(f"{f.instance.kind}: {note}")
        measured = [
            p.result.measurement
            for p in probes
            if p.result and p.result.measurement and p.result.measurement.ok
        ]
        runtimes = tuple(sorted({m.runtime for m in measured if m is not None}))
        for line in detours(probes):
            # A runtime that could not run the exporter's asset is a finding about the bundle,
            # not only a detour of the measurement: say where it is answered.
            chain.append(
                f"{line}; whether the shipped asset loads where it ships is the load check's "
                f"answer (asset records, e.g. `inventory affected --fix 28`, and `inventory plan`)"
            )
        return framed.done(
            deciding.verdict.verdict, level, reason, tuple(probes), runtimes, tuple(findings)
        )

    def probe(
        self,
        bundle: Bundle,
        instance: Instance,
        old_env: Env,
        new_env: Env,
        condition: Condition | None = None,
        spec: ProbeSpec | None = None,
    ) -> ProbeAnswer:
        spec = spec or instance_spec(bundle, instance, condition.params if condition else None)
        values = f"values: {condition.name}" if condition else "trained-looking values"
        self.progress(
            Routine(
                f"{bundle.name}: {spec.label()} ({values}) under "
                f"{old_env.converter} and {new_env.converter}"
            )
        )
        result = self.session.compare(spec, old_env, new_env, use_cache=self.use_cache)
        return ProbeAnswer(
            instance,
            spec,
            result,
            judge(result, self.policy),
            steps=self._located(spec, old_env, new_env, result),
        )

    def _located(
        self, spec: ProbeSpec, old_env: Env, new_env: Env, result: ProbeResult
    ) -> tuple[Step, ...]:
        """The release steps of a change (each compared once per run, stored like any result)."""
        key = (spec.key(), old_env.converter, new_env.converter)
        if key not in self._steps:
            self._steps[key] = locate(
                self.session,
                spec,
                old_env.converter,
                new_env.converter,
                result,
                self.fixes,
                self.use_cache,
            )
        return self._steps[key]

    def _credit(self, answer: ProbeAnswer, fix: Fix) -> ProbeAnswer:
        """The probe's answer for one fix. A change is the fix's only if it happens in the step
        the fix ships in; otherwise the fix gets its own step's verdict (the same program) and
        the change stays with the step it happens in, named in the reason."""
        if len(answer.steps) < 2:
            return answer
        where = step_line(answer.steps)
        mine = next((s for s in answer.steps if s.new == fix.ships_in), None)
        if mine is None or mine.changed:
            v = answer.verdict
            return replace(
                answer,
                verdict=ProbeVerdict(v.verdict, v.reexport, f"{v.reason}; the program {where}"),
            )
        own = judge(mine.result, self.policy)
        reason = (
            f"at {mine.label}, the step fix {fix.label} ships in: {own.reason}; the program {where}"
        )
        return replace(
            answer,
            verdict=ProbeVerdict(own.verdict, own.reexport, reason),
            elsewhere=answer.verdict,
        )

    def _checkpoint(self, path: Path) -> Checkpoint:
        if path not in self._checkpoints:
            self._checkpoints[path] = Checkpoint(path)
        return self._checkpoints[path]

    def _own_tensors(
        self, bundle: Bundle, instance: Instance, weights: Path, old_env: Env, new_env: Env
    ) -> list[ProbeAnswer]:
        """One probe per traced module of the instance, each with that module's own tensors read
        from the checkpoint by the module paths the registry records."""
        ckpt = self._checkpoint(weights)
        construct = construct_of(instance.kind)
        answers = []
        for n, module in enumerate(instance.modules):
            producer = instance.producers[n] if n < len(instance.producers) else ""
            tensors = instance_tensors(
                ckpt,
                construct.checkpoint,
                module,
                producer,
                f"{bundle.name}'s {instance.kind} at {module}",
            )
            spec = replace(
                instance_spec(bundle, instance),
                values="checkpoint",
                tensors=tensors,
                checkpoint=str(weights.resolve()),
            )
            self.progress(
                Routine(
                    f"{bundle.name}: {spec.label()} with {module}'s own tensors "
                    f"under {old_env.converter} and {new_env.converter}"
                )
            )
            result = self.session.compare(spec, old_env, new_env, use_cache=self.use_cache)
            answers.append(
                ProbeAnswer(
                    instance,
                    spec,
                    result,
                    judge(result, self.policy),
                    module,
                    self._located(spec, old_env, new_env, result),
                )
            )
        return answers


def _measured_lines(instance: Instance, answers: list[ProbeAnswer], weights: Path) -> list[str]:
    """The chain for one instance measured module by module: a module whose answer differs from
    the rest is named with its verdict and reason; modules with the same answer are counted."""
    if not answers:
        return []
    head = (
        f"{answers[0].spec.label()}: measured with each module's own tensors from "
        f"{weights.name} ({len(answers)} module(s))"
    )
    groups: dict[tuple[str, str], list[ProbeAnswer]] = {}
    for a in answers:
        groups.setdefault((a.verdict.verdict, a.verdict.reexport), []).append(a)
    lines = [head]
    for (verdict, reexport), members in sorted(groups.items(), key=lambda g: rank(g[0][1])):
        if len(members) == 1 or len(groups) > 1 and members is not max(groups.values(), key=len):
            lines += [
                f"{a.module}: {verdict}, re-export {reexport} - {a.verdict.reason}" for a in members
            ]
        else:
            names = [a.module for a in members]
            shown = ", ".join(names[:3]) + (f" ... {names[-1]}" if len(names) > 3 else "")
            lines.append(
                f"{len(members)} module(s) ({shown}): {verdict}, re-export {reexport} "
                f"- e.g. {members[0].verdict.reason}"
            )
    return lines


def _rank(answer: ProbeAnswer) -> int:
    """Lower is worse."""
    return rank(answer.verdict.reexport)


def check_target(fix: Fix, target: str, catalog: Catalog) -> None:
    catalog.release(target)  # unknown releases fail here, before any work
    if version_key(target) < version_key(fix.ships_in):
        raise UsageError(f"--to {target} predates fix {fix.label}, which ships in {fix.ships_in}")


def affected(
    fix: Fix,
    bundles: list[Bundle],
    catalog: Catalog,
    policy: Policy,
    to: str | None = None,
    use_cache: bool = True,
    progress: Progress = lambda _: None,
    ignores: list[Ignore] | None = None,
    weights: dict[str, Path] | None = None,
    runtimes: tuple[str, ...] | None = None,
    fixes: list[Fix] | None = None,
    verify: VerifyMode | None = None,
    recipe_root: Path | None = None,
    allow_code: bool = False,
    sweep: bool = False,
) -> AffectedReport:
    """`fixes`: the fix database (default: the shipped one) whose records explain a change.
    `verify`: a pipeline record's step is measured on each bundle's whole program when no check
    of it is stored (`auto`: only where the asset probe would leave the answer unchecked);
    `recipe_root`: a recipe-traced bundle's module is built by its own builder from that
    checkout. `sweep`: the registry sweep of the fix's own step is run, for the
    changes of that step no record explains; without it that sweep is only read from the store
    (`plan` and `sweep --registry` leave it there), and only the fix's own probes convert."""
    target = to or fix.ships_in
    check_target(fix, target, catalog)
    active, warnings = in_force(ignores or [])
    with Session(catalog, progress) as session:
        analyzer = Analyzer(
            session,
            policy,
            use_cache,
            weights,
            runtimes,
            fixes,
            verify,
            recipe_root=recipe_root,
            allow_code=allow_code,
        )
        steps = {b.name: step for b in bundles if (step := _own_step(b, fix, catalog))}
        wanted: dict[tuple[str, str], list[Bundle]] = {}
        for b in bundles:
            if b.name in steps:
                wanted.setdefault(steps[b.name], []).append(b)
        # every comparison below, handed to the executor at once; answered in order after
        session.dispatch(
            batch.affected(analyzer, bundles, fix, target, wanted, analyzer.fixes, sweep),
            use_cache,
        )
        answers = []
        for bundle in bundles:
            progress(Routine(f"{bundle.name}: checking"))
            answers.append(analyzer.answer(bundle, fix, target))
        swept = sweep_steps(
            wanted,
            analyzer.fixes,
            catalog,
            policy,
            use_cache,
            progress,
            session,
            stored_only=not sweep,
        )
        by_name = {b.name: b for b in bundles}
        answers = [
            _with_coverage(a, by_name[a.bundle], steps.get(a.bundle), fix, session) for a in answers
        ]
    answers = [_with_unrecorded(a, fix, steps.get(a.bundle), swept, target) for a in answers]
    ids = {fix.id, *fix.aliases}
    ignored = {
        b.bundle: hit for b in answers if (hit := matching(active, ids, b.bundle)) is not None
    }
    seen = {(i, b.bundle) for b in answers for i in ids}
    other = [i for i in active if i.fix not in ids]  # entries for other fixes are not this run's
    warnings += unmatched([i for i in active if i not in other], seen)
    known = {n for f in (fixes if fixes is not None else load_fixes()) for n in (f.id, *f.aliases)}
    warnings += [
        f"ignore entry for fix #{i.fix} / {i.bundle}: no fix record has that id, so "
        "it can never match"
        for i in other
        if i.fix not in known
    ]
    warnings += accepted_unchecked(
        policy, [a.bundle for a in answers if a.reexport == "unchecked" and a.bundle not in ignored]
    )
    return AffectedReport(fix, target, tuple(answers), ignored, tuple(warnings))


def _own_step(bundle: Bundle, fix: Fix, catalog: Catalog) -> tuple[str, str] | None:
    """The release step the fix ships in, seen from the bundle's exporter; none when the
    exporter already holds the fix or is not a release the oracle can build."""
    exporter, _ = exporter_release(bundle.exporter, catalog)
    if exporter not in catalog.releases or version_key(exporter) >= version_key(fix.ships_in):
        return None
    return own_step(catalog, exporter, fix)


def _with_coverage(
    answer: BundleAnswer, bundle: Bundle, step: tuple[str, str] | None, fix: Fix, session: Session
) -> BundleAnswer:
    """What the answer rests on at the fix's own step: the ops its probes and the step's stored
    registry sweep cover, or the whole program when the answer was had on it."""
    if step is None:
        return answer
    results = [p.result for p in answer.probes] + swept_results(session, bundle, [step])
    return replace(
        answer,
        coverage=coverage(
            bundle.trace,
            probe_ops(results),
            answer.whole_program is not None,
            (f"{step[0]}->{step[1]}",),
            verify_command(bundle.name, fix.ships_in),
            trace_command(bundle),
        ),
    )


def _with_unrecorded(
    answer: BundleAnswer, fix: Fix, step: tuple[str, str] | None, swept: StepSweeps, target: str
) -> BundleAnswer:
    """The one line about changes of the fix's own step that no record explains, and how they
    were had (`unrecorded_state`): the sweep computed, read from the store, or not looked for.
    They are never counted in this fix's level, so not looking leaves the level as it is; the
    line says so, in the chain every format shows, so a "no" does not read as having looked."""
    if step is None:
        return answer
    label = f"{step[0]}->{step[1]}"
    looks = f"`inventory plan --to {target}` or `inventory affected --fix {fix.id} --sweep` looks"
    if swept.unswept([step]):
        line = (
            f"the registry sweep of {swept.unswept([step])[0]}: changes no record of "
            f"{label} explains were not looked for"
        )
        return _unrecorded(answer, NOT_LOOKED_FOR, line)
    if step in swept.not_stored:
        line = (
            f"changes of this bundle's instances in {label} that no record explains were not "
            f"looked for (no stored registry sweep of that step: {swept.not_stored[step]}); "
            f"{looks}"
        )
        return _unrecorded(answer, NOT_LOOKED_FOR, line)
    state = STORED if swept.source == "stored" else COMPUTED
    found = swept.of(answer.bundle, [step])
    if not found:
        return replace(answer, unrecorded_state=state)
    what = "; ".join(
        f"{u.spec.label()} ({u.spec.construct}): {u.outcome.verdict.verdict}" for u in found
    )
    line = (
        f"also in {label}, the step {fix.label} ships in: {len(found)} change(s) of this "
        f"bundle's instances that no record of {label} explains, not counted here: {what}; "
        f"`inventory plan --to {target}` counts them"
    )
    return replace(_unrecorded(answer, state, line), unrecorded=found)


def _unrecorded(answer: BundleAnswer, state: str, line: str) -> BundleAnswer:
    return replace(
        answer, chain=answer.chain + (line,), unrecorded_line=line, unrecorded_state=state
    )


def parse_weights(pairs: list[str] | None, bundles: list[Bundle]) -> dict[str, Path]:
    """Parse repeated BUNDLE=PATH options; the bundle must be registered, the file must exist."""
    out: dict[str, Path] = {}
    known = {b.name for b in bundles}
    for pair in pairs or []:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--weights takes BUNDLE=PATH, not {pair!r}")
        if name not in known:
            raise UsageError(f"--weights names {name!r}, which is not in the registry")
        if not os.path.lexists(path):
            raise UsageError(f"--weights {name}: no file at {path}")
        regular_file(Path(path), UsageError)  # a FIFO, a device, a folder: said as such
        Checkpoint(Path(path))  # its header read now: a file that is no checkpoint is refused
        # before any bundle is answered, not when its bundle's turn comes
        out[name] = Path(path)
    return out
