"""How a bundle is answered for a fix record, beneath `affected.Analyzer` (which answers lowering
records per traced construct; the kind picks the way: `oracle/catalog/record_kinds.py`).

`Question` is what is asked (a bundle, a record, the target release), `Means` what answering it
has at hand (the Analyzer, or a test's stand-in), and `Framed` one answer as it is made: its
chain of reasons, and every way of ending it.

asset: what the saved asset carries besides the program. Answered by the load check (question 2,
`inventory/load_answers.py`): does the shipped asset load on the bundle's deployment runtimes?
pipeline: what runs around the lowerings (core pin, what to_coreai() returns). Answered on the
bundle's own whole program where it has a whole-bundle form (`inventory verify`'s parts for the
release step where the change ships, stored, or measured with `--verify`): the regions of that
step whose stage is the optimizer's are what the pin changes (attribution rule b), and the
step's drift on one runtime says what they do. Without such a check, the asset probe shaped
like the bundle (nested modules, its dtype and pipeline), converted at that step, compared and
measured like a lowering probe, and the answer says it holds none of the bundle's own patterns.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from inventory.answer_types import BundleAnswer, ConditionFinding, ProbeAnswer
from inventory.attribution import own_step
from inventory.deployment import Deployment
from inventory.load_answers import LoadAnswer
from inventory.policy import Policy
from inventory.registry import UNKNOWN, Bundle, Instance
from inventory.shell_commands import verify_command
from inventory.verdict import ProbeVerdict, Reexport, Verdict
from inventory.verify.mode import VerifyMode, measures_all, measures_unchecked
from inventory.verify.step_check import StepCheck
from inventory.verify.step_region import StepRegion
from oracle.catalog import Catalog, Condition, EnvError, Fix, RunFault, version_key
from oracle.compare import ProbeSpec
from oracle.envs import Env
from oracle.infra import Progress
from oracle.session import Session
from oracle.workers import asset_probe


@dataclass(frozen=True)
class Question:
    """Which of the bundle's shipped programs does the record change, re-exported with
    `target`?"""

    bundle: Bundle
    fix: Fix
    target: str


class Means(Protocol):
    """What answering a bundle for a record has at hand: the session, the run's settings and
    the comparisons made once per run (`affected.Analyzer` holds them)."""

    session: Session
    catalog: Catalog
    policy: Policy
    fixes: list[Fix]
    conditions: dict[str, list[Condition]]
    weights: dict[str, Path]
    checks: dict[str, Any]
    verify: VerifyMode | None
    use_cache: bool
    allow_code: bool
    recipe_root: Path | None
    progress: Progress

    def whole(
        self, bundle: Bundle, exporter: str, old: str, fix: Fix, measure: bool = False
    ) -> tuple[Any, str]: ...

    def probe(
        self,
        bundle: Bundle,
        instance: Instance,
        old_env: Env,
        new_env: Env,
        condition: Condition | None = None,
        spec: ProbeSpec | None = None,
    ) -> ProbeAnswer: ...

    def load_answer(self, bundle: Bundle, target: str) -> LoadAnswer: ...

    def deployment(self, bundle: Bundle, target: str) -> Deployment: ...


@dataclass
class Framed:
    """One bundle's answer for one record as it is made: the exporter it is answered from, the
    traced instances the record names, and the chain of reasons so far."""

    question: Question
    exporter: str
    instances: tuple[Instance, ...]
    deployment: Deployment
    chain: list[str]

    def done(
        self,
        verdict: Verdict,
        reexport: Reexport,
        reason: str,
        probes: tuple[ProbeAnswer, ...] = (),
        runtimes: tuple[str, ...] = (),
        findings: tuple[ConditionFinding, ...] = (),
    ) -> BundleAnswer:
        """The answer: with probes, the chain already ends with each probe's verdict and
        reason; without, the reason is its last line."""
        bundle = self.question.bundle
        steps = self.chain if probes else self.chain + [reason]
        return BundleAnswer(
            bundle.name,
            self.exporter,
            bundle.exporter.converter,
            bundle.exporter.source,
            self.instances,
            probes,
            verdict,
            reexport,
            reason,
            tuple(steps),
            runtimes,
            findings,
            self.deployment,
        )


def asset_spec(bundle: Bundle) -> ProbeSpec:
    """The asset probe shaped like the bundle: nested modules, its dtype and pipeline."""
    return ProbeSpec(
        asset_probe.CONSTRUCT, dict(asset_probe.DEFAULT_PARAMS), bundle.dtype, bundle.pipeline
    )


def asset_instance(bundle: Bundle) -> Instance:
    """How a pipeline record's probe is listed beside traced instances (it is not traced)."""
    return Instance(
        asset_probe.CONSTRUCT,
        dict(asset_probe.DEFAULT_PARAMS),
        1,
        bundle.dtype,
        (),
        f"not traced: the asset probe ({asset_probe.LABEL}) in the bundle's dtype and pipeline",
    )


def pipeline_answer(analyzer: Means, framed: Framed) -> BundleAnswer:
    """A pipeline change touches every program: the bundle's own whole program at the record's
    step, else the asset probe under both releases."""
    bundle, fix, exporter = framed.question.bundle, framed.question.fix, framed.exporter
    chain, done = framed.chain, framed.done
    # Compared at the release step where the change ships, so that lowering changes of other
    # steps between the exporter and the target are not attributed to it.
    old, _ = own_step(analyzer.catalog, exporter, fix)
    chain.append(
        f"a pipeline change: compared at the step where it ships, coreai-torch "
        f"{old} -> {fix.ships_in}"
    )
    try:
        old_env, new_env = analyzer.session.env(old), analyzer.session.env(fix.ships_in)
        whole, why_not = analyzer.whole(bundle, exporter, old, fix)
        if whole is not None:
            return _on_whole_program(analyzer, framed, whole)
        chain.append(
            f"not answered on the bundle's own program: {why_not}; the asset probe "
            "stands in, and it holds none of the bundle's own patterns"
        )
        answer = analyzer.probe(
            bundle, asset_instance(bundle), old_env, new_env, spec=asset_spec(bundle)
        )
    except RunFault:
        raise  # the store cannot be written, an environment cannot run: the run's error
    except EnvError as exc:
        # an environment that could not be built when a side first had to convert in it
        return done(Verdict.INCONCLUSIVE, Reexport.INCONCLUSIVE, str(exc))
    chain.append(
        f"{answer.spec.label()} (the asset probe: {asset_probe.LABEL}, the bundle's "
        f"dtype and pipeline): {answer.verdict.verdict} - {answer.verdict.reason}"
    )
    m = answer.result.measurement if answer.result else None
    runtimes = (m.runtime,) if m is not None and m.ok else ()
    verdict, level = answer.verdict.verdict, answer.verdict.reexport
    reason = (
        f"answered by the asset probe alone, not on {bundle.name}'s own program "
        f"({why_not}): {answer.verdict.verdict} - {answer.verdict.reason}"
    )
    if verdict == Verdict.SAME_PROGRAM and measures_unchecked(analyzer.verify):
        # `--verify auto`: the same program of the generic probe is no check of the bundle's
        # own, so its whole program is measured at the step, where it can be built
        try:
            whole, why_not = analyzer.whole(bundle, exporter, old, fix, measure=True)
        except RunFault:
            raise
        except EnvError as exc:
            return done(Verdict.INCONCLUSIVE, Reexport.INCONCLUSIVE, str(exc))
        if whole is not None:
            chain.append(
                "--verify auto: the asset probe's same program checks none of the bundle's "
                "own ops, so its whole program was measured at the step"
            )
            return _on_whole_program(analyzer, framed, whole)
        reason = (
            f"answered by the asset probe alone, not on {bundle.name}'s own program "
            f"(--verify auto could not check it: {why_not}): {answer.verdict.verdict} - "
            f"{answer.verdict.reason}"
        )
    if verdict == Verdict.SAME_PROGRAM:
        # the generic probe's program is the same; the bundle's own may not be (sam3's moves
        # in core-b2's step): a pipeline change reaches every op, and none of the bundle's own
        # was checked, so this is no "no"
        verdict, level = Verdict.ASSET_PROBE_SAME_PROGRAM, Reexport.UNCHECKED
        reason += f"; {unchecked_line(bundle.name, old, fix.ships_in)}"
    return replace(done(verdict, level, reason, (answer,), runtimes), not_checked=why_not)


def unchecked_line(bundle: str, old: str, new: str) -> str:
    """What an unchecked answer lacks, and the one command that checks it: the bundle's whole
    program at the step, stored where every later answer reads it."""
    return (
        f"unchecked: none of {bundle}'s own ops was checked at {old}->{new}; "
        f"`{verify_command(bundle, new)}` checks its whole program"
    )


def asset_answer(analyzer: Means, question: Question) -> BundleAnswer:
    """An asset change: does the shipped asset load on the bundle's deployment runtimes?"""
    bundle, fix, target = question.bundle, question.fix, question.target
    recorded = bundle.exporter.converter
    load = analyzer.load_answer(bundle, target)
    chain = [f"must load on {load.deployment.describe()}"]
    verdict, level, reason = load.verdict, load.reexport, load.reason
    if recorded == UNKNOWN:
        # Never answered as if the oldest release had exported it: conditional, measured.
        chain.insert(0, f"exporter not recorded ({bundle.exporter.source})")
    else:
        chain.insert(0, f"exported with coreai-torch {recorded} ({bundle.exporter.source})")
        if version_key(recorded) >= version_key(fix.ships_in):
            already = f"fix {fix.label} ships in {fix.ships_in}; already in {recorded}"
            if load.verdict == Verdict.LOADS:
                verdict, level, reason = Verdict.NOT_AFFECTED, Reexport.NO, already
                chain.append(f"measured: {load.reason}")
            else:
                reason = f"{load.reason} (not explained by {fix.label}: {already})"
    chain.append(reason)
    chain += [f"remedy: {r}" for r in load.remedies] if level != Reexport.NO else []
    chain.append(f"load checks: {', '.join(load.evidence)}")
    return BundleAnswer(
        bundle.name,
        recorded,
        recorded,
        bundle.exporter.source,
        (),
        (),
        verdict,
        level,
        reason,
        tuple(chain),
        tuple(dict.fromkeys(load.deployment.runtimes)),
        (),
        load.deployment,
        load,
    )


def whole_program(
    analyzer: Means, bundle: Bundle, exporter: str, old: str, fix: Fix, measure: bool = False
) -> tuple[Any, str]:
    """The bundle's whole-program check holding the step `old -> fix.ships_in` (a
    `inventory.verify.service.BundleVerify`): the caller's own (`plan`'s check of its target,
    `analyzer.checks`); else a stored `verify BUNDLE --to V`, V the record's release or the
    first later one stored; else, with `--verify` (or `measure`: `--verify auto` where the
    answer would be unchecked), `verify BUNDLE --to <the record's release>` measured now. Or
    None and why not."""
    from inventory.verify import chain as verify_chain
    from inventory.verify import forms, service

    label = f"{old}->{fix.ships_in}"
    given = analyzer.checks.get(bundle.name)
    if (
        given is not None
        and not given.record.get("error")
        and any(s.step == label for s in given.steps)
    ):
        return given, ""
    try:
        forms.compared_form(bundle, recipe_root=analyzer.recipe_root)
        forms.run_form(bundle, recipe_root=analyzer.recipe_root)
    except forms.FormError as exc:
        return None, f"no whole-bundle form ({exc})"
    later = [
        v
        for v in sorted(analyzer.catalog.releases, key=version_key)
        if version_key(v) >= version_key(fix.ships_in)
    ]
    targets = [(to, True) for to in later]
    if measures_all(analyzer.verify) or measure:
        targets = [(fix.ships_in, False)]
    for to, read_only in targets:
        with Session(analyzer.catalog, analyzer.progress) as session:
            try:
                record, cached = service.measured(
                    bundle,
                    session,
                    exporter,
                    to,
                    analyzer.weights.get(bundle.name),
                    analyzer.use_cache,
                    analyzer.allow_code,
                    analyzer.progress,
                    read_only=read_only,
                    recipe_root=analyzer.recipe_root,
                )
            except verify_chain.Missing:
                continue
        if record.get("error"):
            return None, f"the whole-program check to {to} failed: {record['error']}"
        return service.assembled(
            bundle, exporter, False, to, record, cached, analyzer.fixes, analyzer.policy, {}, []
        ), ""
    return None, (
        f"no whole-program check holding {label} is stored (`inventory verify "
        f"{bundle.name} --to {fix.ships_in}`, or `--verify`)"
    )


def _on_whole_program(analyzer: Means, framed: Framed, whole: Any) -> BundleAnswer:
    fix, chain, done = framed.question.fix, framed.chain, framed.done
    old, _ = own_step(analyzer.catalog, whole.exporter, fix)
    label = f"{old}->{fix.ships_in}"
    [step] = [s for s in whole.steps if s.step == label]
    form = whole.record["form"]["form"]
    regions = [r for r in whole.regions if r.step == label]
    mine = [r for r in regions if fix.id in r.explained_by]
    others = [r for r in regions if fix.id not in r.explained_by]
    shipped = step.shipped_identity
    chain.append(
        f"answered on the bundle's own whole program ({form} form, "
        f"{whole.build.params or 0:,} parameters; the check "
        f"{whole.exporter} -> {whole.to}): step {step.step}, shipped programs "
        f"{shipped}"
    )
    summary = {
        "step": step.step,
        "to": whole.to,
        "form": whole.record["form"],
        "shipped": shipped,
        "regions": [r.to_json() for r in mine],
        "other_regions": len(others),
        "drift": step.drift_rows,
        "drift_source": step.drift_source,
        "runtime": step.runtime,
        "evidence": step.evidence,
    }
    if shipped == "identical":
        reason = (
            f"the whole {form} program is identical across {step.step}: the pin "
            "changes nothing this bundle ships"
        )
        return replace(done(Verdict.SAME_PROGRAM, Reexport.NO, reason), whole_program=summary)
    if shipped != "differs":
        reason = f"the whole program cannot be compared across {step.step} ({shipped})"
        return replace(
            done(Verdict.INCONCLUSIVE, Reexport.INCONCLUSIVE, reason), whole_program=summary
        )
    if not mine:
        reason = (
            f"no region of the whole program changes at the optimizer stage in "
            f"{step.step}: the {len(others)} region(s) that differ are lowering "
            "changes, other records' or unrecorded"
        )
        return replace(done(Verdict.SAME_PROGRAM, Reexport.NO, reason), whole_program=summary)
    modules = sorted({m for r in mine for m in r.modules})
    chain.append(
        f"{len(mine)} region(s) of the optimizer stage, the pin's (rule: "
        f"{mine[0].explained_how[fix.id]}): "
        f"{', '.join(sorted({op for r in mine for op in r.coreai_ops})) or 'no op'};"
        f" modules {', '.join(modules[:6]) or 'none located'}"
        f"{f' and {len(modules) - 6} more' if len(modules) > 6 else ''}"
    )
    if others:
        chain.append(
            f"{len(others)} other region(s) of the step are lowering changes "
            "(their own records' or unrecorded): `inventory verify` lists them"
        )
    # the step's level as verify judges it: its model-level drift when run, else its regions'
    # drift at their own cuts (the reason says which), so this answer and verify's agree
    verdict = ProbeVerdict(step.verdict, step.reexport, step.reason)
    if others:
        verdict = replace(
            verdict,
            reason=f"{verdict.reason}; the step also holds {len(others)}"
            " lowering region(s) the pin does not explain, measured with it",
        )
    runtimes = _runtimes(step, whole.regions)
    return replace(
        done(verdict.verdict, verdict.reexport, verdict.reason, (), runtimes), whole_program=summary
    )


def _runtimes(step: StepCheck, regions: tuple[StepRegion, ...]) -> tuple[str, ...]:
    """Where the step's level was measured: the model-level runs' runtime, else the runtimes
    of its regions' cut runs."""
    if step.runtime:
        return (step.runtime,)
    found = {r.region_run.runtime for r in regions if r.step == step.step and r.region_run}
    return tuple(sorted(r for r in found if r))
