"""Every comparison and load check a command will ask for, planned before it asks for any, so
that the executor gets them at once (`Session.dispatch`) instead of one at a time.

Each function here follows the path of the answer it plans for (`Analyzer.answer`, the registry
sweep, the release notes) with the same spec builders, and asks for nothing: it only lists
comparisons. What an answer asks for only after a result (a change located release step by
step; the registry sweep's unexplained change judged from a bundle's exporter to the target) is
a comparison's follow-up (`Comparison.then`), dispatched as soon as that result lands. The
answers are then assembled exactly as before, reading each result as it comes; a comparison
this plan missed is still made when asked, only not in the batch, so a plan can cost time but
never change an answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from inventory.attribution import explained_by, own_step, program_changed, release_steps
from inventory.instances import instance_spec, probed_keys
from inventory.kind_answers import Means, Question, asset_spec
from inventory.registry import Bundle, exporter_release
from inventory.release_notes import asset_regimes, concerned_bundles, regimes_of_notes
from inventory.sweep import registry_regimes
from inventory.verify.mode import measures_all
from oracle.catalog import EnvError, Fix, Regime, between, cores, version_key
from oracle.compare import ProbeResult, ProbeSpec
from oracle.constructs import get as construct_of
from oracle.constructs import has_probe
from oracle.envs import Env
from oracle.executors import Comparison, Job, LoadRequest
from oracle.session import Session

Step = tuple[str, str]
# plan: per bundle, its (exporter, target) and the release steps between
Judged = dict[str, tuple[Step, list[Step]]]


def _envs(session: Session, old: str, new: str) -> tuple[Env, Env] | None:
    """The environments of both releases (built or waited for now), or None when one cannot
    be had: the answer says why when it asks, and nothing is planned for it."""
    try:
        return session.env(old), session.env(new)
    except (EnvError, KeyError):
        return None


def located(
    session: Session, spec: ProbeSpec, old: str, new: str
) -> Callable[[ProbeResult], Sequence[Comparison]] | None:
    """`attribution.locate`'s comparisons, as a follow-up: when the program changes over a range
    of several steps, the probe under each step."""
    steps = release_steps(session.catalog, old, new)
    if len(steps) <= 1:
        return None
    envs = [_envs(session, a, b) for a, b in steps]
    if any(e is None for e in envs):
        return None  # locate attributes nothing then, and asks for nothing
    pairs = [(e[0], e[1]) for e in envs if e is not None]

    def then(result: ProbeResult) -> Sequence[Comparison]:
        if not program_changed(result):
            return ()
        return [Comparison(spec, a, b) for a, b in pairs]

    return then


class _Compared:
    """What each way of answering a record compares
    (`oracle.catalog.record_kinds.AnswerContext`), by the path `Analyzer.answer` takes with the
    same spec builders."""

    def __init__(self, means: Means) -> None:
        self.means = means

    def by_load_check(self, question: Question) -> list[Job]:
        """The load check of the asset the bundle's exporter writes (the releases after it, the
        controls, are checked only when it does not load: made when asked)."""
        return own_load_check(self.means.session, question.bundle)

    def by_whole_program(self, question: Question) -> list[Job]:
        """The asset probe at the record's own step when no whole-program check answers it."""
        means, bundle, fix = self.means, question.bundle, question.fix
        exporter = self._exporter(question)
        if exporter is None:
            return []
        old, _ = own_step(means.catalog, exporter, fix)
        envs = _envs(means.session, old, fix.ships_in)
        if envs is None or measures_all(means.verify):
            return []  # --verify measures the whole program first: asked when needed
        whole, _ = means.whole(bundle, exporter, old, fix)
        return [] if whole is not None else [Comparison(asset_spec(bundle), *envs)]

    def by_construct_probes(self, question: Question) -> list[Job]:
        """The probes of each traced instance (trained-looking values and each condition's);
        a probe with a checkpoint's own tensors is made when asked."""
        means, bundle, fix = self.means, question.bundle, question.fix
        exporter = self._exporter(question)
        instances = [i for i in bundle.instances if i.kind in fix.constructs]
        if exporter is None or not instances or any(not has_probe(i.kind) for i in instances):
            return []
        envs = _envs(means.session, exporter, question.target)
        if envs is None:
            return []
        out: list[Job] = []
        for instance in instances:
            if bundle.name in means.weights and construct_of(instance.kind).checkpoint:
                continue
            specs = [instance_spec(bundle, instance)] + [
                instance_spec(bundle, instance, c.params)
                for c in means.conditions.get(instance.kind, [])
            ]
            out += [
                Comparison(s, *envs, then=located(means.session, s, exporter, question.target))
                for s in specs
            ]
        return out

    def _exporter(self, question: Question) -> str | None:
        """The bundle's exporter, when the answer compares anything from it (a release the
        oracle can build, before the record ships)."""
        catalog = self.means.catalog
        exporter, _ = exporter_release(question.bundle.exporter, catalog)
        if exporter not in catalog.releases or version_key(exporter) >= version_key(
            question.fix.ships_in
        ):
            return None
        return exporter


def own_load_check(session: Session, bundle: Bundle) -> list[Job]:
    """The load check question 2 starts from (`Analyzer.load_check` of the bundle's recorded
    exporter), when that release is one the catalog can build."""
    release = bundle.exporter.converter
    if release not in session.catalog.releases:
        return []  # not recorded (every candidate is checked when asked) or not buildable
    try:
        exporter = session.env(release)
    except EnvError:
        return []  # the answer says why when it asks
    return [LoadRequest(asset_spec(bundle), exporter, tuple(cores(session.catalog)), session)]


def answer(means: Means, bundle: Bundle, fix: Fix, target: str) -> list[Job]:
    """What `Analyzer.answer(bundle, fix, target)` compares, as the record's kind answers it."""
    return fix.record_kind.answer(_Compared(means), Question(bundle, fix, target))


def registry_sweep(
    session: Session,
    wanted: dict[Step, list[Bundle]],
    fixes: list[Fix],
    after_worker_failure: bool = False,
    judged: Judged | None = None,
) -> list[Comparison]:
    """What `sweep.sweep_steps(wanted, ...)` compares: every traced instance of the
    bundles crossing each step, under that step. `after_worker_failure` False: a job is
    optional (not started once a worker of its releases failed: the sweep skips such a step).

    `judged` (plan): per bundle, its (exporter, target) and its steps; a change of a step that
    no record of it explains is then judged from each such bundle's exporter to the target
    (`plan.swept_changes`), a follow-up of the step's comparison."""
    bundles = list({b.name: b for crossing in wanted.values() for b in crossing}.values())
    regimes = registry_regimes(bundles)
    keys = {b.name: probed_keys(b) for b in bundles}
    out: list[Comparison] = []
    for (old, new), crossing in wanted.items():
        mine = frozenset().union(*(keys[b.name] for b in crossing))
        envs = _envs(session, old, new) if mine else None
        if envs is None:
            continue
        for regime in (r for r in regimes if r.spec.key() in mine):
            then = _judged(session, regime, (old, new), fixes, keys, judged or {})
            out.append(Comparison(regime.spec, *envs, then=then, optional=not after_worker_failure))
    return out


def _judged(
    session: Session,
    regime: Regime,
    step: Step,
    fixes: list[Fix],
    keys: dict[str, frozenset[str]],
    judged: Judged,
) -> Callable[[ProbeResult], Sequence[Comparison]] | None:
    spans = {
        span: True
        for bundle, (span, steps) in judged.items()
        if regime.spec.key() in keys.get(bundle, frozenset()) and step in steps
    }
    pairs = [e for span in spans if (e := _envs(session, *span)) is not None]
    if not pairs:
        return None

    def then(result: ProbeResult) -> Sequence[Comparison]:
        if not program_changed(result) or explained_by(fixes, regime.spec, *step, result):
            return ()
        return [Comparison(regime.spec, a, b) for a, b in pairs]

    return then


def affected(
    means: Means,
    bundles: list[Bundle],
    fix: Fix,
    target: str,
    steps: dict[Step, list[Bundle]],
    fixes: list[Fix],
    sweep: bool = False,
) -> list[Job]:
    """`affected --fix`: each bundle's answer, then with `sweep` the registry sweep of the fix's
    own step (without it the sweep is read from the store only: nothing to compare)."""
    out = [c for b in bundles for c in answer(means, b, fix, target)]
    return out + (registry_sweep(means.session, steps, fixes) if sweep else [])


def plan(
    means: Means, bundles: list[Bundle], fixes: list[Fix], to: str, ranges: dict[str, list[Step]]
) -> list[Job]:
    """`plan --to`: each bundle's load check (question 2, asked first) and every record in its
    range, answered; the registry sweep of every step of each range, each unexplained change
    judged exporter -> target."""
    catalog = means.catalog
    out: list[Job] = []
    judged: Judged = {}
    wanted: dict[Step, list[Bundle]] = {}
    for bundle in bundles:
        exporter, _ = exporter_release(bundle.exporter, catalog)
        out += own_load_check(means.session, bundle)
        for fix in between(fixes, exporter, to):
            out += answer(means, bundle, fix, to)
        judged[bundle.name] = ((exporter, to), ranges[bundle.name])
        for step in ranges[bundle.name]:
            wanted.setdefault(step, []).append(bundle)
    return out + registry_sweep(means.session, wanted, fixes, judged=judged)


def regimes(session: Session, regimes: list[Regime], old: str, new: str) -> list[Comparison]:
    """The release notes' (and `sweep`'s) regimes under `old -> new`, each changed one located
    step by step when the range has several."""
    envs = _envs(session, old, new)
    if envs is None:
        return []
    return [Comparison(r.spec, *envs, then=located(session, r.spec, old, new)) for r in regimes]


def release_notes(
    session: Session,
    old: str,
    new: str,
    fixes: list[Fix],
    regimes_: list[Regime],
    bundles: list[Bundle],
    means: Means | None = None,
) -> list[Job]:
    """`release-notes --from --to`: the registry sweep of every step between (a step is swept
    whatever failed before it), then the records' regimes under the pair, each changed one
    located step by step, the asset probe's load checks under both releases when a record
    of the pair is answered by them, and (`means`) what each concerned bundle's own answer
    for each record compares, as `affected` answers it. Nothing for a pair the notes refuse
    (they say why)."""
    catalog = session.catalog
    if (
        old not in catalog.releases
        or new not in catalog.releases
        or version_key(new) <= version_key(old)
    ):
        return []
    steps = release_steps(catalog, old, new)
    chosen = between(fixes, old, new)
    out: list[Job] = [
        *registry_sweep(session, {s: bundles for s in steps}, fixes, after_worker_failure=True),
        *regimes(session, regimes_of_notes(chosen, regimes_), old, new),
    ]
    envs = _envs(session, old, new)
    if envs is not None and any(fix.record_kind.probed(_LoadChecked(), fix) for fix in chosen):
        out += [
            LoadRequest(r.spec, env, tuple(cores(catalog)), session)
            for r in asset_regimes()
            for env in envs
        ]
    if means is not None:
        out += [
            job
            for fix in chosen
            for bundle in concerned_bundles(fix, bundles)
            for job in answer(means, bundle, fix, fix.ships_in)
        ]
    return out


class _LoadChecked:
    """Whether the notes show a record with load checks (`release_notes._Loads`), as its kind
    says: only the way that answers by load checks lists something."""

    def construct_regimes(self, record: Fix) -> list[bool]:
        return []

    def asset_probe(self, record: Fix) -> list[bool]:
        return []

    def load_checks(self, record: Fix) -> list[bool]:
        return [True]
