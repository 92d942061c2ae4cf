"""`inventory verify BUNDLE --to V`: the whole program, step by step, with the probe answers.

For each bundle the whole module is built in its form (`inventory.verify.forms`) and converted
under every release from its exporter to V (`inventory.verify.chain`: one stored conversion per
release). Each consecutive pair is a release step; every region in which a step's shipped
programs differ gets that step, its stage (lowering or optimizer) and the records of the step
that explain it by the rules of `inventory.verify.explain`, or is an **unrecorded change**:
listed with its drift, never folded into a record. The exporter against V is what ships against
what would ship: its drift, judged by the re-export policy, is the bundle's level.

The probes of every traced instance are compared step by step too (`sweep` over the bundle's
registry instances, the answers `affected` and `plan` are made of), and the two instruments are
reconciled per step:

* identical shipped programs in a step => every probe is same-program there;
* a probe whose program changes in a step => a region of that step holds its construct (unless
  the built form holds no such construct: a stand-in's stated difference, a limitation).

Any breach is an inconsistency: exit 3, with both sides' evidence.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from inventory.attribution import release_steps
from inventory.errors import UsageError
from inventory.policy import Policy
from inventory.registry import Bundle, exporter_release
from inventory.sweep import Sweep, registry_regimes, sweep
from inventory.trace import trust
from inventory.trace.service import TraceError, vet
from inventory.verdict import ProbeVerdict, Reexport, Verdict
from inventory.verify import chain, cuts, explain, forms, whole
from inventory.verify.built_module import BuiltModule, build_of
from inventory.verify.compared_pair import (
    CANNOT_CONVERT,
    DIFFERS,
    IDENTICAL,
    ComparedPair,
    pairs_of,
)
from inventory.verify.converted_side import ConvertedSide, sides_of
from inventory.verify.probe_check import ProbeChange, ProbeCheck
from inventory.verify.step_check import StepCheck
from inventory.verify.step_region import RegionRun, StepRegion
from inventory.verify.torch_check import TorchCheck
from oracle.catalog import (
    Catalog,
    EnvError,
    Fix,
    RunFault,
    base_version,
    between,
    version_key,
)
from oracle.infra import Progress
from oracle.session import Session

REGIONS_SPELLED = 3  # more regions than this are counted by step in the answer line


@dataclass(frozen=True)
class BundleVerify:
    bundle: str
    exporter: str
    exporter_assumed: bool
    to: str
    record: dict[str, Any]  # the chain's parts (inventory.verify.chain), or an error
    cached: bool
    steps: tuple[StepCheck, ...] = ()
    regions: tuple[StepRegion, ...] = ()
    unrecorded: tuple[dict[str, Any], ...] = ()
    verdict: ProbeVerdict | None = None  # exporter -> to, judged by the re-export policy
    probes: ProbeCheck = ProbeCheck()
    inconsistencies: tuple[str, ...] = ()
    limitations: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    disagreements: tuple[str, ...] = ()  # region runs against model-level runs
    torch: TorchCheck | None = None  # the torch it was built on and the recipe's (torch_of)

    @property
    def inconclusive(self) -> bool:
        return self.verdict is None or self.verdict.reexport == Reexport.INCONCLUSIVE

    @property
    def consistent(self) -> bool:
        return not self.inconsistencies

    @property
    def build(self) -> BuiltModule | None:
        """The module built and exported (None: the check ended before it was)."""
        return build_of(self.record)

    @property
    def overall(self) -> ComparedPair | None:
        """The exporter against the target (None: the check ended before comparing)."""
        return pairs_of(self.record)[1]


@dataclass(frozen=True)
class Verify:
    to: str
    bundles: tuple[BundleVerify, ...]

    @property
    def inconsistent(self) -> bool:
        return any(not b.consistent for b in self.bundles)

    @property
    def inconclusive(self) -> bool:
        return any(b.inconclusive for b in self.bundles)

    @property
    def unrecorded(self) -> bool:
        return any(b.unrecorded for b in self.bundles)


# ---- the steps, their regions and records ---------------------------------------------------


def _present(record: dict[str, Any]) -> set[str]:
    """The construct kinds a detector found in any side's whole program."""
    kinds: set[str] = set()
    side: ConvertedSide
    for side in record.get("sides", {}).values():
        nodes = side.files.get("nodes")
        if nodes and Path(nodes).is_file():
            kinds |= {
                n["kind"] for n in json.loads(Path(nodes).read_text()).values() if n.get("kind")
            }
    return kinds


def _changed(probes: Sweep, step: str) -> tuple[ProbeChange, ...]:
    return tuple(
        ProbeChange(
            f.outcome.regime.id,
            f.outcome.regime.construct,
            f.outcome.verdict.verdict,
            tuple(f.explained_by),
            step,
        )
        for f in probes.changed
    )


def _step(
    record: dict[str, Any], pair: ComparedPair, fixes: list[Fix], policy: Policy, dtype: str
) -> tuple[StepCheck, list[StepRegion]]:
    """One step's check, with its level, and its regions (step, stage, records, own runs)."""
    sides = sides_of(record)
    old, new = sides[pair.old], sides[pair.new]
    shipped = whole.differing(pair, old, new, "shipped")
    emitted = whole.differing(pair, old, new, "emitted")
    texts = explain.stage_texts(pair, old, new)
    label = pair.label
    regions = _with_region_drift(
        explain.step_regions(pair, shipped, emitted, texts, fixes), record, label
    )
    m = (record.get("run") or {}).get("measurement") or {}
    rows = (m.get("drift") or {}).get(label, {}).get("outputs")
    runtime = m.get("runtime") if rows else None
    verdict, source = step_verdict(
        record, label, pair.shipped.identity, rows, runtime, policy, dtype
    )
    check = StepCheck(
        step=label,
        old=pair.old,
        new=pair.new,
        emitted=pair.emitted.summary(),
        shipped=pair.shipped.summary(),
        regions=len(regions),
        unrecorded_regions=sum(1 for r in regions if r.unrecorded),
        records=tuple(f.id for f in _records(fixes, pair)),
        runtime=runtime,
        drift=None if rows is None else tuple(rows),
        evidence=pair.evidence,
        verdict=verdict.verdict,
        reexport=verdict.reexport,
        reason=verdict.reason,
        drift_source=source,
    )
    return check, regions


def _with_region_drift(
    regions: list[StepRegion], record: dict[str, Any], label: str
) -> list[StepRegion]:
    """Each region with its own run (`inventory.verify.cuts`): whether its cut reproduces it,
    and its drift per cut output (a composite's call sites), with the worst of them."""
    step_runs = next((r for r in record.get("region_runs") or [] if r["step"] == label), None)
    if step_runs is None:
        return regions
    by_index = {r["region"]: r for r in step_runs.get("regions", [])}
    return [
        replace(region, region_run=_region_run(by_index.get(i), step_runs))
        for i, region in enumerate(regions)
    ]


def _region_run(run: dict[str, Any] | None, step_runs: dict[str, Any]) -> RegionRun:
    if run is None:
        return RegionRun.not_cut(step_runs.get("error") or "not cut")
    reaches, rows = run.get("reaches_outputs"), run.get("drift")
    return RegionRun(
        reproduces=run.get("reproduces"),
        why=run.get("why"),
        hops=run.get("hops"),
        attempts=tuple(run.get("attempts", [])),
        runtime=run.get("runtime"),
        runtime_attempts=tuple(run.get("runtime_attempts", [])),
        reaches_outputs=None if reaches is None else tuple(reaches),
        inputs=run.get("inputs"),
        drift=cuts.summary(rows),
        outputs=None if rows is None else tuple(rows),
        evidence=run.get("run_evidence"),
        cut=step_runs.get("evidence"),
        # a hoisted constant is cut where its values are used; nodes the cut's release
        # does not name are left out of it: both said in the answer, not only in a log
        cut_from=run.get("cut_from") or "the region's own aten nodes",
        nodes_missing=tuple(run.get("missing", [])),
    )


def _records(fixes: list[Fix], pair: ComparedPair) -> list[Fix]:
    return between(fixes, pair.old, pair.new)


def reconcile_step(
    step: StepCheck, regions: list[StepRegion], probes: Sweep, present: set[str]
) -> tuple[ProbeCheck, list[str], list[str], list[StepRegion]]:
    """A step's probes against its whole programs; its regions, each with the changing probes'
    constructs it holds where the shipped programs differ."""
    changed = _changed(probes, step.step)
    summary = ProbeCheck(probes.probed, changed, tuple(o.regime.id for o in probes.failing_both))
    inconsistencies: list[str] = []
    limitations: list[str] = []
    identity = step.shipped_identity
    if identity == "identical":
        inconsistencies += [
            f"{step.step}: probe {c.probe} says the shipped program "
            f"changes ({c.verdict}), but the whole shipped programs are "
            "identical in this step"
            for c in changed
        ]
        return summary, inconsistencies, limitations, regions
    if identity != "differs":
        return summary, inconsistencies, limitations, regions
    kinds_changed = {c.construct for c in changed}
    in_regions = {k for r in regions for k in r.kinds}
    for kind in sorted(kinds_changed - in_regions):
        probes_of = ", ".join(c.probe for c in changed if c.construct == kind)
        if kind in present:
            inconsistencies.append(
                f"{step.step}: the probes of {kind} change ({probes_of}),"
                f" but no region of the whole program that differs in this "
                f"step holds a {kind}"
            )
        else:
            limitations.append(
                f"{step.step}: the probes of {kind} change ({probes_of}); the"
                f" built form holds no {kind} (a stand-in difference), so the "
                "whole program cannot confirm them"
            )
    explained = [
        replace(r, explained_by_probes=tuple(sorted(r.kinds & kinds_changed))) for r in regions
    ]
    return summary, inconsistencies, limitations, explained


def _overall_verdict(b_record: dict[str, Any], policy: Policy, dtype: str) -> ProbeVerdict:
    if b_record.get("error"):
        return ProbeVerdict(Verdict.INCONCLUSIVE, Reexport.INCONCLUSIVE, b_record["error"])
    steps, overall = pairs_of(b_record)
    assert overall is not None  # a record without an error is compared
    shipped = overall.shipped.identity
    if shipped == CANNOT_CONVERT:
        bad = [f"coreai-torch {r} ({s.failure})" for r, s in sides_of(b_record).items() if not s.ok]
        return ProbeVerdict(
            Verdict.INCONCLUSIVE,
            Reexport.INCONCLUSIVE,
            f"the whole module does not convert under {'; '.join(bad)}",
        )
    bad_steps = [s for s in steps if s.shipped.identity == CANNOT_CONVERT]
    if shipped == IDENTICAL:
        return ProbeVerdict(
            Verdict.SAME_PROGRAM,
            Reexport.NO,
            f"identical shipped programs {overall.old} -> {overall.new}",
        )
    if bad_steps:
        return ProbeVerdict(
            Verdict.INCONCLUSIVE,
            Reexport.INCONCLUSIVE,
            "an intermediate release does not convert the whole module",
        )
    m = (b_record.get("run") or {}).get("measurement") or {}
    rows = (m.get("drift") or {}).get(overall.label, {}).get("outputs")
    why = m.get("error") or "; ".join(m.get("attempts", []))
    if rows:
        return explain.judge_drift(rows, m.get("runtime"), policy.tolerance_for(dtype), why)
    return _judged_at_regions(b_record, policy.tolerance_for(dtype), why)


def _judged_at_regions(
    b_record: dict[str, Any], tolerance: float, why_not: str, step: str | None = None
) -> ProbeVerdict:
    """Without a model-level run, the level is the region runs' drift, every cut output of
    every step (`step`: of that step only), judged by the same policy; a region that was not
    measured at its cut (nothing located, or no cut reproduces it) leaves the answer
    inconclusive, since its drift is unknown."""
    regions = [
        r
        for s in b_record.get("region_runs") or []
        if step in (None, s.get("step"))
        for r in s.get("regions", [])
    ]
    unmeasured = [r for r in regions if not r.get("drift")]
    rows = [row for r in regions for row in r.get("drift") or []]
    if not rows or unmeasured:
        detail = (
            f"{len(unmeasured)} of {len(regions)} region(s) not measured at their cut"
            if regions
            else "no region run"
        )
        return ProbeVerdict(
            Verdict.INCONCLUSIVE,
            Reexport.INCONCLUSIVE,
            f"the whole programs differ; no model-level run ({why_not}); {detail}",
        )
    runtimes = sorted({r["runtime"] for r in regions if r.get("runtime")})
    verdict = explain.judge_drift(rows, ", ".join(runtimes), tolerance)
    return ProbeVerdict(
        verdict.verdict,
        verdict.reexport,
        f"at the {len(regions)} region(s)' own cuts ({why_not}): {verdict.reason}",
    )


# where a step's level comes from: the step's model-level runs, else its regions' own cuts
MODEL_LEVEL, REGION_CUTS = "model-level run", "region cuts"


def step_verdict(
    b_record: dict[str, Any],
    step: str,
    shipped: str | None,
    drift: list[dict[str, Any]] | None,
    runtime: str | None,
    policy: Policy,
    dtype: str,
) -> tuple[ProbeVerdict, str | None]:
    """One release step's level, judged as the bundle's is: its drift in the model-level runs
    (`drift`, on `runtime`) when they ran, else its regions' drift at their own cuts; and which
    of the two it is (None when nothing was measured: identical programs, or a side that does
    not convert). A record answered from the whole program (a pipeline record, a lowering
    record its regions join) takes this level for its step: one measurement, one answer."""
    if shipped == "identical":
        return ProbeVerdict(
            Verdict.SAME_PROGRAM, Reexport.NO, f"identical shipped programs in {step}"
        ), None
    if shipped != "differs":
        return ProbeVerdict(
            Verdict.INCONCLUSIVE,
            Reexport.INCONCLUSIVE,
            f"the whole program cannot be compared across {step} ({shipped})",
        ), None
    tolerance = policy.tolerance_for(dtype)
    m = (b_record.get("run") or {}).get("measurement") or {}
    why = m.get("error") or "; ".join(m.get("attempts", [])) or "not run"
    if drift:
        verdict = explain.judge_drift(drift, runtime, tolerance)
        return ProbeVerdict(
            verdict.verdict, verdict.reexport, f"{MODEL_LEVEL}: {verdict.reason}"
        ), MODEL_LEVEL
    return _judged_at_regions(b_record, tolerance, why, step), REGION_CUTS


# ---- the measured part --------------------------------------------------------------------


def measured(
    bundle: Bundle,
    session: Session,
    exporter: str,
    to: str,
    weights: Path | None,
    use_cache: bool,
    allow_code: bool,
    progress: Progress,
    read_only: bool = False,
    run_budget: float | None = chain.DEFAULT_RUN_BUDGET,
    full: bool = False,
    recipe_root: Path | None = None,
) -> tuple[dict[str, Any], bool]:
    """The chain's record (measured now where a part is not stored), and whether every part
    was read back. `read_only`: raises chain.Missing unless every part is stored; `full`: the
    full target even where the registry states a miniature; `recipe_root`: a recipe-traced
    bundle built by its own builder from that checkout."""
    releases = [exporter] + [b for _a, b in release_steps(session.catalog, exporter, to)]
    try:
        record = chain.measure(
            bundle,
            session,
            releases,
            weights,
            use_cache,
            allow_code,
            progress,
            read_only=read_only,
            run_budget=run_budget,
            full=full,
            recipe_root=recipe_root,
        )
    except RunFault:
        raise  # the store cannot be written, an environment cannot run: the run's error
    except (whole.VerifyError, EnvError) as exc:
        # never stored: a failed build (of the module, or of a converter or runtime
        # environment when a side first has to convert or run in it) is told, this bundle's
        # answer, and measured again next time; the other bundles go on
        form = forms.compared_form(bundle, full, recipe_root)
        return {"error": str(exc), "form": form.to_json()}, False
    return record, bool(record.get("cached"))


def assembled(
    bundle: Bundle,
    exporter: str,
    assumed: bool,
    to: str,
    record: dict[str, Any],
    cached: bool,
    fixes: list[Fix],
    policy: Policy,
    step_probes: dict[str, Sweep],
    deviations: list[str],
) -> BundleVerify:
    """What the stored parts say, derived on every read: steps, regions, records, level."""
    notes = tuple(_notes(bundle, record, deviations))
    verdict = _overall_verdict(record, policy, bundle.dtype)
    torch = torch_of(bundle, record)
    if record.get("error"):
        return BundleVerify(
            bundle.name,
            exporter,
            assumed,
            to,
            record,
            cached,
            verdict=verdict,
            notes=notes,
            torch=torch,
        )
    present = _present(record)
    steps: list[StepCheck] = []
    regions: list[StepRegion] = []
    probes: list[ProbeCheck] = []
    inconsistencies: list[str] = []
    limitations: list[str] = []
    for pair in pairs_of(record)[0]:
        step, step_regions = _step(record, pair, fixes, policy, bundle.dtype)
        if step.step in step_probes:
            p, inc, lim, step_regions = reconcile_step(
                step, step_regions, step_probes[step.step], present
            )
            probes.append(p)
            inconsistencies += inc
            limitations += lim
        steps.append(step)
        regions += step_regions
    by_step = {s.step: s for s in steps}
    found = explain.unrecorded(regions, by_step, fixes, verdict)
    disagreements = tuple(d for s in steps for d in agreement(s, regions))
    return BundleVerify(
        bundle.name,
        exporter,
        assumed,
        to,
        record,
        cached,
        tuple(steps),
        tuple(regions),
        tuple(found),
        verdict,
        ProbeCheck.over(probes),
        tuple(inconsistencies),
        tuple(limitations),
        notes,
        disagreements,
        torch,
    )


def agreement(step: StepCheck, regions: list[StepRegion]) -> list[str]:
    """Where a step has both model-level and region drift, they must agree: a region that moves
    values at its cut shows at a model output that depends on it, and a model output that moves
    has a region that moves (when every region of the step was measured). Each breach is told."""
    rows = step.drift
    mine = [r for r in regions if r.step == step.step]
    runs = [r.region_run or RegionRun.not_cut("") for r in mine]
    if not rows or not any(r.drift for r in runs):
        return []
    out = []
    for region, run in zip(mine, runs, strict=True):
        d = run.drift
        if not d or d["bit_identical"]:
            continue
        reached = [rows[i] for i in run.reaches_outputs or () if i < len(rows)]
        if reached and all(r["bit_identical"] for r in reached):
            out.append(
                f"{step.step}: region @{region.graph} "
                f"({', '.join(region.modules[:2]) or 'no module'}) moves values at "
                f"its cut (max |old-new| {d['maxabs_old_new']:.3g}) but no model output "
                f"it reaches moves ({', '.join(r['output'] for r in reached)}) in the "
                "model-level run"
            )
    if all(r.drift and r.drift["bit_identical"] for r in runs):
        moved = [r["output"] for r in rows if not r["bit_identical"]]
        if moved:
            out.append(
                f"{step.step}: model outputs move ({', '.join(moved)}) but every "
                "region is bit-identical at its cut"
            )
    return out


def _notes(bundle: Bundle, record: dict[str, Any], deviations: list[str]) -> list[str]:
    notes = [f"environment deviation: {d}" for d in deviations]
    form = record.get("form", {})
    if form.get("standin"):
        notes.append(
            f"the module is the stand-in {form['target']}, not the recipe's own: its "
            f"stated differences are in [bundles.{bundle.name}.standin]"
        )
    recipe = form.get("recipe")
    if recipe:
        notes.append(
            f"the module is the recipe's own: {recipe['repository']} "
            f"{recipe['commit'][:12]} ({recipe['commit_source']}), {form['target']}, "
            "built by the registry's builder from --recipe-root"
            + ("; the checkout has local changes" if recipe["modified"] else "")
        )
    return notes


def torch_of(bundle: Bundle, record: dict[str, Any]) -> TorchCheck | None:
    """The torch the whole program was built and exported on, beside the one the registry says
    the recipe ran (None: nothing was built). A program built on another torch is not the one
    the recipe exported: `same` is false, and every format says so beside the answer."""
    build = build_of(record)
    built = build.torch if build is not None else None
    if not built:
        return None
    exporter = bundle.exporter
    recipe = exporter.torch or None
    return TorchCheck(
        built=built,
        recipe=recipe,
        recipe_source=exporter.torch_source or None,
        same=None if recipe is None else base_version(built) == base_version(recipe),
        sensitivity=exporter.torch_checked or None,
    )


def _checked(
    bundles: list[Bundle],
    to: str,
    catalog: Catalog,
    allow_code: bool,
    full: bool = False,
    recipe_root: Path | None = None,
) -> None:
    """A malformed form, a target or recipe builder the registry may not run (the trace's
    trust rules), or a --to that is not later than the exporter is refused before anything
    runs."""
    catalog.release(to)
    if recipe_root is not None and not recipe_root.is_dir():
        raise UsageError(f"--recipe-root {recipe_root}: not a folder")
    for bundle in bundles:
        exporter, _assumed = exporter_release(bundle.exporter, catalog)
        if version_key(exporter) >= version_key(to):
            raise UsageError(
                f"{bundle.name} was exported with coreai-torch {exporter}: "
                f"--to must be a later release"
            )
        form = forms.compared_form(bundle, full, recipe_root)
        forms.run_form(bundle, full, recipe_root)
        try:
            if form.recipe is not None:
                vet(bundle, recipe_root, allow_code)
            else:
                trust.check_target(
                    form.target, f"[bundles.{bundle.name}] verify target", allow_code
                )
        except TraceError as exc:  # names the bundle itself
            raise forms.FormError(str(exc)) from None
        except trust.UntrustedCode as exc:
            raise forms.FormError(f"{bundle.name}: {exc}") from None


def _checkable(
    bundle: Bundle,
    to: str,
    catalog: Catalog,
    full: bool = False,
    recipe_root: Path | None = None,
    allow_code: bool = False,
) -> bool:
    return unbuildable(bundle, to, catalog, full, recipe_root, allow_code) is None


def unbuildable(
    bundle: Bundle,
    to: str,
    catalog: Catalog,
    full: bool = False,
    recipe_root: Path | None = None,
    allow_code: bool = False,
) -> str | None:
    """Why `verify` would refuse to build the bundle's whole program for `to` (no form, a
    builder the registry may not run, no later release), or None when it can."""
    try:
        _checked([bundle], to, catalog, allow_code, full, recipe_root)
    except (forms.FormError, UsageError) as exc:
        return str(exc)
    return None


def _step_probes(
    bundle: Bundle,
    exporter: str,
    to: str,
    fixes: list[Fix],
    catalog: Catalog,
    policy: Policy,
    use_cache: bool,
    progress: Progress,
    session: Session,
) -> dict[str, Sweep]:
    progress(f"{bundle.name}: probing every traced instance, step by step from {exporter} to {to}")
    return {
        f"{a}->{b}": sweep(
            a,
            b,
            fixes,
            registry_regimes([bundle]),
            catalog,
            policy,
            use_cache=use_cache,
            progress=progress,
            source="registry",
            session=session,
        )
        for a, b in release_steps(catalog, exporter, to)
    }


def verify(
    bundles: list[Bundle],
    to: str,
    fixes: list[Fix],
    catalog: Catalog,
    policy: Policy,
    weights: dict[str, Path] | None = None,
    use_cache: bool = True,
    allow_code: bool = False,
    progress: Progress = lambda _: None,
    read_only: bool = False,
    run_budget: float | None = chain.DEFAULT_RUN_BUDGET,
    full: bool = False,
    recipe_root: Path | None = None,
) -> Verify:
    """`read_only` (`plan` without --verify): only bundles whose every part is stored are
    answered; the others are left out. `full` (`--full`): each bundle's full target, even where
    the registry states a miniature. `recipe_root` (`--recipe-root`): a bundle whose recipe the
    checkout holds is built by the recipe's own builder (`inventory.verify.forms`)."""
    _checked(bundles, to, catalog, allow_code, full, recipe_root)
    out = []
    for bundle in bundles:
        exporter, assumed = exporter_release(bundle.exporter, catalog)
        with Session(catalog, progress) as session:
            try:
                record, cached = measured(
                    bundle,
                    session,
                    exporter,
                    to,
                    (weights or {}).get(bundle.name),
                    use_cache,
                    allow_code,
                    progress,
                    read_only=read_only,
                    run_budget=run_budget,
                    full=full,
                    recipe_root=recipe_root,
                )
            except chain.Missing:
                continue
            if record.get("error"):
                # nothing was built: told at once (inconclusive), no environment or probe
                out.append(
                    assembled(bundle, exporter, assumed, to, record, cached, fixes, policy, {}, [])
                )
                continue
            deviations = [d for v in record["releases"] for d in session.env(v).deviations]
            probes = _step_probes(
                bundle, exporter, to, fixes, catalog, policy, use_cache, progress, session
            )
        out.append(
            assembled(
                bundle, exporter, assumed, to, record, cached, fixes, policy, probes, deviations
            )
        )
    return Verify(to, tuple(out))


# ---- what a bundle's check says --------------------------------------------------------------


def status(b: BundleVerify) -> str:
    if not b.consistent:
        return "inconsistent"
    return "inconclusive" if b.inconclusive else "consistent"


def _step_line(step: StepCheck, regions: list[StepRegion]) -> str:
    shipped = step.shipped or {}
    if shipped.get("identity") != "differs":
        return f"{step.step} {shipped.get('identity', 'not compared')}"
    mine = [r for r in regions if r.step == step.step]
    ids = sorted({i for r in mine for i in r.explained_by})
    by = ", ".join(f"#{i}" if i.isdigit() else i for i in ids)
    unrecorded = sum(1 for r in mine if r.unrecorded)
    parts = [f"{len(mine)} region(s)"]
    if by:
        parts.append(f"{len(mine) - unrecorded} explained by {by}")
    if unrecorded:
        parts.append(f"{unrecorded} unrecorded")
    return f"{step.step} {', '.join(parts)}"


def answer(b: BundleVerify) -> str:
    """One sentence: what the whole program says."""
    r = b.record
    if r.get("error"):
        return f"inconclusive: {r['error']}"
    overall = b.overall
    form = r["form"]["form"]
    if overall is None or overall.shipped.identity == CANNOT_CONVERT or b.verdict is None:
        return f"inconclusive: {b.verdict.reason if b.verdict else 'not measured'}"
    shipped = overall.shipped
    steps = "; ".join(_step_line(s, list(b.regions)) for s in b.steps)
    if shipped.identity == IDENTICAL:
        text = (
            f"identical shipped programs: no fix between {b.exporter} and {b.to} can "
            f"change this {form} module"
        )
        emitted = overall.emitted
        if emitted.identity == DIFFERS:
            text += (
                f" (the emitted programs differ in {emitted.changed_lines} lines; "
                "the optimizer makes them the same)"
            )
        if len(b.steps) > 1 and any(s.regions for s in b.steps):
            text += f"; by step: {steps}"
        return text
    regions = list(b.regions)
    # few regions are spelled out; more are counted by step (each is in the record and table)
    where = (
        "; ".join(region_line(g.to_json()) for g in regions)
        if len(regions) <= REGIONS_SPELLED
        else steps
    )
    return (
        f"shipped programs differ in {shipped.changed_lines} lines, "
        f"{len(regions)} region(s): {where}; {b.verdict.verdict}: {b.verdict.reason}"
    )


def region_line(g: dict[str, Any]) -> str:
    kinds = ", ".join(g["constructs"]) or "no detected construct"
    calls = f", {g['calls']} call(s)" if g.get("calls") else ""
    more = (
        f" and {g['module_count'] - len(g['modules'])} more"
        if g["module_count"] > len(g["modules"])
        else ""
    )
    modules = ", ".join(g["modules"]) + more if g["modules"] else "no located module"
    how = g.get("explained_how") or {}
    fixes = (
        ", ".join(
            f"{'#' + i if i.isdigit() else i} ({how.get(i, '')})" for i in g.get("explained_by", [])
        )
        or "no record: unrecorded"
    )
    ops = f"; {', '.join(g['coreai_ops'])}" if g.get("coreai_ops") and not g["composite"] else ""
    return (
        f"{g.get('step', '')} {g.get('stage', '')} @{g['graph']} ({kinds}{calls}; "
        f"{g['changed_lines']} lines{ops}; modules {modules}; explained by {fixes})"
    ).strip()


def verified(
    bundles: list[Bundle],
    to: str,
    fixes: list[Fix],
    catalog: Catalog,
    policy: Policy,
    use_cache: bool = True,
    compute: bool = True,
    progress: Progress = lambda _: None,
    run_budget: float | None = chain.DEFAULT_RUN_BUDGET,
    full: bool = False,
    recipe_root: Path | None = None,
    allow_code: bool = False,
) -> dict[str, BundleVerify]:
    """`plan`: each bundle's whole-program check, for the bundles exported before `to` (a bundle
    exported with `to` itself has nothing to compare). `compute=False` (plan without --verify):
    only the bundles whose every part is stored."""
    later = [
        b
        for b in bundles
        if version_key(exporter_release(b.exporter, catalog)[0]) < version_key(to)
    ]
    if not compute:
        # reading only: a bundle without a form verify can build has nothing stored
        later = [b for b in later if _checkable(b, to, catalog, full, recipe_root, allow_code)]
    result = verify(
        later,
        to,
        fixes,
        catalog,
        policy,
        use_cache=use_cache,
        progress=progress,
        read_only=not compute,
        run_budget=run_budget,
        full=full,
        allow_code=allow_code,
        recipe_root=recipe_root,
    )
    return {b.bundle: b for b in result.bundles}
