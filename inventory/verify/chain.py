"""A bundle's whole program along the chain of releases from its exporter to the target.

Every release of the chain converts the same built program once (a stored side each); each
consecutive pair is compared (a step), and so is the exporter against the target (what ships
against what would ship). When a step's shipped programs differ, the assets run: **one**
runtime for the whole chain (the newest whose coreai-core loads every asset that must run,
tried from the target's down; the exporter's asset first, since an older asset is the one a
newer runtime refuses), each asset once, on the same seeded inputs, against the torch fp32
reference. A step's drift and the exporter-to-target drift are both read off those runs, so
they are measured on one runtime and say which.

What is measured is stored in parts (`inventory.verify.parts`); this module only assembles
them, and says whether every part was read back (`cached`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from inventory.errors import InventoryError
from inventory.registry import Bundle
from inventory.trace import extra
from inventory.trace.service import recipe_process, trace_recipe
from inventory.verify import cuts, forms, parts, stage_compare, whole
from inventory.verify.built_module import BuiltModule
from inventory.verify.compared_pair import ComparedPair, pairs_of
from inventory.verify.converted_side import ConvertedSide, sides_of
from inventory.verify.runtime_run import RuntimeRun, runs_of
from oracle.catalog import EnvError
from oracle.envs import Env
from oracle.executors import ProgramAnswer
from oracle.infra import Progress
from oracle.session import Session
from oracle.store import result_store as store

# seconds of model-level runs a check may spend unless told otherwise (`--run-budget`): the
# region runs measure every region whatever the budget; a model-level run that would cost more
# is skipped, and the answer says so and why
DEFAULT_RUN_BUDGET = 120.0


def _always(_: dict[str, Any]) -> bool:
    return True


def _never(_: Path) -> dict[str, Any]:
    raise AssertionError("a read-only check measures nothing")  # `part` raises Missing first


class Missing(Exception):
    """A part is not stored and the caller only reads (`plan` without --verify)."""


class _Parts:
    def __init__(
        self,
        bundle: Bundle,
        session: Session,
        weights: Path | None,
        use_cache: bool,
        allow_code: bool,
        progress: Progress,
        read_only: bool,
        recipe_root: Path | None = None,
    ) -> None:
        self.bundle, self.session, self.weights = bundle, session, weights
        self.use_cache, self.allow_code, self.progress = use_cache, allow_code, progress
        self.read_only = read_only
        self.recipe_root = recipe_root
        self.all_cached = True

    def part(
        self,
        folder: Path,
        make: parts.Make,
        keep: Callable[[dict[str, Any]], bool],
        kind: tuple[Path, ...],
    ) -> dict[str, Any]:
        if self.read_only:
            record = parts.fetched(folder)
            if record is None or record["code"] != parts.code(kind):
                raise Missing(folder.name)
            return record
        record, cached = parts.stored(folder, make, self.use_cache, keep, kind)
        self.all_cached &= cached
        return record

    def build(self, form: forms.Form, reference: bool) -> BuiltModule:
        folder = parts.build_folder(self.bundle, form, self.weights, reference, self.recipe_root)
        legacy = parts.legacy_build_folder(self.bundle, form, self.weights, reference)
        if (
            legacy is not None
            and parts.cached(folder, self.use_cache, parts.BUILDING) is None
            and parts.cached(legacy, self.use_cache, parts.BUILDING) is not None
        ):
            # stored under the key of an earlier version (the checkout's commit): read there,
            # with every part made from it, never measured again under another key
            folder = legacy

        def make(work: Path) -> dict[str, Any]:
            site = None
            try:
                if form.recipe is not None:  # as a trace of the recipe runs it
                    python, site = recipe_process(self.bundle, self.session.catalog, self.progress)
                else:  # the `trace` extra, installed on first use
                    python = extra.module_python(self.session.catalog, self.progress)
            except EnvError as exc:
                raise whole.VerifyError(
                    f"{self.bundle.name}: the {form.name} module cannot be built: {exc}"
                ) from None
            self.progress(f"{self.bundle.name}: building the whole module, {form.described()}")
            return whole.build(
                self.bundle,
                form,
                work,
                reference,
                self.weights,
                self.allow_code,
                python,
                self.recipe_root,
                site,
            )

        return BuiltModule.from_part(self.part(folder, make, _always, parts.BUILDING), folder)

    def miniature(self, form: forms.Form, build: BuiltModule) -> dict[str, Any] | None:
        """The distinct instances of a recipe's miniature (traced from the checkout, as `trace`
        does, and stored beside its build); None where only stored parts are read and this one
        was not stored (a check stored before it was kept)."""
        folder = parts.miniature_folder(self.bundle, build.folder)
        if self.read_only:
            record = parts.fetched(folder)
            ok = record is not None and record["code"] == parts.code(parts.TRACING)
            return record if ok else None
        root = self.recipe_root
        assert root is not None and form.recipe is not None  # a recipe form is built from one

        def make(work: Path) -> dict[str, Any]:
            self.progress(f"{self.bundle.name}: tracing the miniature, {form.described()}")
            try:
                traced = trace_recipe(
                    self.bundle,
                    root,
                    self.session.catalog,
                    self.progress,
                    self.allow_code,
                    build=form.build,
                    inputs=form.recipe["inputs"] if form.recipe else None,
                )
            except InventoryError as exc:
                raise whole.VerifyError(
                    f"{self.bundle.name}: the miniature cannot be traced: {exc}"
                ) from None
            return {"ok": True, "distinct": sorted(forms.distinct(traced.instances))}

        return self.part(folder, make, _always, parts.TRACING)

    def conversions(self, wanted: list[tuple[Path, Env, str]], what: str) -> list[ConvertedSide]:
        """Sides (folder, release, program): each stored one read back, the others converted
        in one batch of calls (`Session.calls`: two at a time here, as a whole program takes
        one core and up to 1.6 GB; on a cluster's nodes), each stored as it may repeat."""
        if self.read_only:
            return [
                ConvertedSide.from_part(self.part(f, _never, parts.repeatable, parts.CONVERTING))
                for f, _, _ in wanted
            ]
        out = [parts.cached(f, self.use_cache, parts.CONVERTING) for f, _, _ in wanted]
        missing = [i for i, record in enumerate(out) if record is None]
        if not missing:
            return [ConvertedSide.from_part(r) for r in out if r is not None]
        self.all_cached = False
        with ExitStack() as stack:
            works = {i: stack.enter_context(store.building(wanted[i][0])) for i in missing}
            for i in missing:
                self.progress(
                    f"{self.bundle.name}: converting {what} under "
                    f"coreai-torch {wanted[i][1].converter}"
                )
            answers = self.session.calls(
                [
                    whole.conversion(wanted[i][1], wanted[i][2], self.bundle, works[i])
                    for i in missing
                ],
                ProgramAnswer.decode,
                at_once=2,
            )
            for i, answer in zip(missing, answers, strict=True):
                folder, env, _program = wanted[i]
                # the packages it converted with: its environment, built by the call
                side = whole.side(self.session.ready(env), answer)
                if side.get("ok"):
                    side["shipped_digest"] = parts.shipped_digest(side)
                out[i] = parts.finished(
                    folder, works[i], side, self.use_cache, parts.repeatable, parts.CONVERTING
                )
        return [ConvertedSide.from_part(r) for r in out if r is not None]

    def sides(self, build: BuiltModule, releases: list[str]) -> dict[str, ConvertedSide]:
        program = build.program
        wanted = []
        for release in releases:
            env = self.session.env(release)
            wanted.append((parts.side_folder(self.bundle, build.folder, env), env, program))
        return dict(zip(releases, self.conversions(wanted, "it whole"), strict=True))

    def pair(self, sides: dict[str, ConvertedSide], a: str, b: str) -> ComparedPair:
        old, new = sides[a], sides[b]
        if not old.evidence or not new.evidence:
            # a side that was not stored: compare in a temp folder, store nothing
            keep: Callable[[dict[str, Any]], bool] = lambda _: False  # noqa: E731
        else:
            keep = _always
        folder = parts.pair_folder(
            self.bundle, Path(old.evidence or a), Path(new.evidence or b), a, b
        )
        record = self.part(
            folder, lambda work: stage_compare.compared(old, new, work), keep, parts.COMPARING
        )
        return ComparedPair.from_part(record, a, b)

    def drift(
        self, old: RuntimeRun, new: RuntimeRun, reference: Path, labels: list[str]
    ) -> list[dict[str, Any]]:
        """Two runs' drift per output against the reference: derived once from their tensors
        and kept beside them (a read then loads no tensor); computed directly for a run that
        was not stored."""

        def rows() -> list[dict[str, Any]]:
            # numpy only where tensors are read: a warm plan imports this module to read stored
            # checks and never computes a drift (numpy is about a third of its start-up)
            from inventory.verify.drift import per_output

            assert old.outputs_file is not None and new.outputs_file is not None  # both ran
            return per_output(
                old.outputs_file, new.outputs_file, reference, list(new.outputs), labels
            )

        if not old.evidence or not new.evidence:
            return rows()
        folder = parts.drift_folder(
            self.bundle, Path(old.evidence).name, Path(new.evidence).name, reference, labels
        )
        stored = parts.fetched(folder)
        if stored is not None and stored["code"] == parts.code(parts.DRIFTING):
            return stored["rows"]
        record, _cached = parts.stored(
            folder, lambda _work: {"rows": rows()}, True, _always, parts.DRIFTING
        )
        return record["rows"]

    def run(
        self,
        side: ConvertedSide,
        label: str,
        runtime: Any,
        inputs: Path,
        inputs_key: str,
        kind: str = "run",
    ) -> RuntimeRun:
        """One asset run on the inputs stored in the folder `inputs` (`inputs_key` names them
        in the run's key)."""
        assert side.shipped_digest is not None  # only a side that converted runs
        folder = parts.run_folder(self.bundle, side.shipped_digest, inputs_key, runtime, kind)

        def make(work: Path) -> dict[str, Any]:
            return whole.run(
                self.session, runtime, side.files["asset"], inputs, work, self.progress, label
            )

        return RuntimeRun.from_part(self.part(folder, make, parts.run_repeats, parts.RUNNING))


def _holds_the_full_modules_instances(
    bundle: Bundle, form: forms.Form, miniature: dict[str, Any] | None
) -> None:
    """A miniature stands for the full module only if its distinct instances (kind, dtype,
    parameters) are the full module's, as the registry's recipe trace recorded them; where they
    are not, the check answers for another module, so it is refused, naming what differs."""
    if miniature is None or bundle.trace.get("origin") != "recipe" or not bundle.instances:
        return
    full = forms.distinct(
        [{"kind": i.kind, "dtype": i.dtype, "params": i.params} for i in bundle.instances]
    )
    mini = set(miniature["distinct"])
    if mini == full:
        return
    said = [f"lacks {d}" for d in sorted(full - mini)] + [f"adds {d}" for d in sorted(mini - full)]
    args = ", ".join(f"{k}={v!r}" for k, v in sorted(form.build.items()))
    raise whole.VerifyError(
        f"{bundle.name}: the miniature ({args}) does not hold the full module's distinct "
        f"instances as the registry's trace recorded them: it {said[0]}"
        + (f" (and {len(said) - 1} more difference(s))" if len(said) > 1 else "")
        + f"; state a miniature that keeps them in [bundles.{bundle.name}.verify], or --full"
    )


def measure(
    bundle: Bundle,
    session: Session,
    releases: list[str],
    weights: Path | None,
    use_cache: bool,
    allow_code: bool,
    progress: Progress,
    read_only: bool = False,
    run_budget: float | None = DEFAULT_RUN_BUDGET,
    full: bool = False,
    recipe_root: Path | None = None,
) -> dict[str, Any]:
    """The chain's record: its sides, steps, the exporter-to-target pair, the model-level runs
    (within `run_budget` seconds, None: whatever they cost) and the region runs of every step
    whose programs differ. `read_only`: only what is stored (raises Missing otherwise); `full`:
    the full target even where the registry states a miniature; `recipe_root`: a recipe-traced
    bundle is built by its own builder from that checkout."""
    start = time.perf_counter()
    if run_budget is not None and math.isinf(run_budget):
        run_budget = None  # no limit (`--run-budget inf`): JSON has no infinity
    form = forms.compared_form(bundle, full, recipe_root)
    run_form = forms.run_form(bundle, full, recipe_root)
    key = json.dumps(
        [
            str(parts.store.results_root()),
            bundle.name,
            bundle.verify,
            bundle.pipeline.decompositions,
            bundle.pipeline.optimize,
            releases,
            str(weights),
            run_budget,
            full,
            form.to_json(),
            run_form.to_json(),
            parts.source_key(bundle, form, recipe_root),
        ],
        sort_keys=True,
        default=str,
    )
    if use_cache and key in _READ:
        # read back whole earlier in this process (plan reads a chain once for its check and
        # again for each pipeline record): the same stored parts, not read again
        return _READ[key]
    same_form = run_form == form
    p = _Parts(bundle, session, weights, use_cache, allow_code, progress, read_only, recipe_root)
    record: dict[str, Any] = {"bundle": bundle.name, "releases": releases, "form": form.to_json()}
    record["build"] = p.build(form, reference=same_form)
    if form.recipe is not None and form.name == forms.MINIATURE:
        record["miniature"] = p.miniature(form, record["build"])
        _holds_the_full_modules_instances(bundle, form, record["miniature"])
    sides = p.sides(record["build"], releases)
    record["sides"] = sides
    steps = [p.pair(sides, a, b) for a, b in zip(releases, releases[1:], strict=False)]
    record["steps"] = steps
    record["overall"] = steps[0] if len(steps) == 1 else p.pair(sides, releases[0], releases[-1])
    record["run"] = None
    record["region_runs"] = []
    if any(s.differs for s in steps) or record["overall"].differs:
        record["run"] = _model_level(
            p, bundle, record, run_form, same_form, releases, run_budget, full
        )
        m = record["run"].get("measurement") or {}
        # the model-level runs' runtime, else the chain's candidates in their order
        runtimes = [
            e for e in _candidates(p, releases) if not m.get("ok") or e.runtime == m["runtime"]
        ]
        refused: dict[tuple[str, str], str] = {}
        record["region_runs"] = [
            cuts.region_runs(
                p,
                s,
                whole.differing(s, sides[s.old], sides[s.new], "shipped"),
                record["build"],
                runtimes,
                refused,
            )
            for s in steps
            if s.differs
        ]
    record["cached"] = p.all_cached
    # what measuring the parts cost when they were measured (the same on every read)
    record["timing"] = timing(record)
    record["seconds"] = round(sum(record["timing"].values()), 3)
    record["read_seconds"] = time.perf_counter() - start
    if record["cached"]:
        _READ[key] = record
    return record


_READ: dict[str, dict[str, Any]] = {}  # chains whose every part was read back, this process


def _estimate(bundle: Bundle, needed: int, full: bool) -> tuple[float | None, str]:
    """What the model-level runs would cost: the registry's measured seconds per run of the form
    that runs (`[bundles.X.verify.run] seconds_per_run`, or `[bundles.X.verify]`'s without a
    run form; `cost_measured` says where) times the runs."""
    if full:
        return None, "no measured cost for the full form (the registry's figures are its forms')"
    # the run form's own figure, or the compared form's when it is the one that runs
    table = bundle.verify.get("run") or bundle.verify
    per = table.get("seconds_per_run")
    if not isinstance(per, int | float) or isinstance(per, bool) or per < 0:
        return None, "no measured cost in the registry"
    return float(per) * needed, (
        f"{needed} run(s) at {per:g} s each, measured {table.get('cost_measured', 'here')}"
    )


def _model_level(
    p: _Parts,
    bundle: Bundle,
    record: dict[str, Any],
    run_form: forms.Form,
    same_form: bool,
    releases: list[str],
    budget: float | None,
    full: bool,
) -> dict[str, Any]:
    """The model-level runs, when their cost fits the budget or they are stored; else what was
    skipped and why."""
    needed = len(_wanted(record))
    estimate, how = _estimate(bundle, needed, full)
    if budget is None or estimate is None or estimate <= budget:
        out = _runs(p, bundle, record, run_form, same_form, releases)
        out["estimate_seconds"], out["budget_seconds"] = estimate, budget
        out["note"] = (
            f"run: {how}" if estimate is None else f"run: {how} = {estimate:g} s, within the budget"
        )
        return out
    # over budget: served if every part is stored, never measured
    was, p.read_only = p.read_only, True
    try:
        stored = _runs(p, bundle, record, run_form, same_form, releases)
        stored["estimate_seconds"], stored["budget_seconds"] = estimate, budget
        stored["note"] = (
            f"read from the store: {how} = {estimate:g} s is over the run "
            "budget, so it would not be measured now"
        )
        return stored
    except Missing:
        return {
            "form": run_form.to_json(),
            "same_as_compared": same_form,
            "skipped": True,
            "estimate_seconds": estimate,
            "budget_seconds": budget,
            "measurement": {
                "ok": False,
                "runtime": None,
                "attempts": [],
                "error": f"model-level run skipped: {how} = {estimate:g} s, "
                f"over the run budget of {budget:g} s (--run-budget)",
            },
        }
    finally:
        p.read_only = was


def _wanted(record: dict[str, Any]) -> set[str]:
    steps, overall = pairs_of(record)
    assert overall is not None  # asked only once the chain is compared
    wanted = {r for s in steps if s.differs for r in (s.old, s.new)}
    if overall.differs:
        wanted |= {overall.old, overall.new}
    return wanted


def timing(record: dict[str, Any]) -> dict[str, float]:
    """What measuring the parts cost when they were measured (the same on every read), split:
    builds, whole-program conversions, model-level runs, and the region runs' cutting, cut
    conversions and cut runs. A run two releases share (the same program) was paid once."""
    run = record.get("run") or {}
    builds: list[BuiltModule] = [record["build"], *([run["build"]] if run.get("build") else [])]
    sides: list[ConvertedSide] = [*record["sides"].values(), *(run.get("sides") or {}).values()]
    runs = runs_of(run.get("measurement") or {}).values()
    once = {r.evidence or id(r): r.seconds or 0.0 for r in runs}
    regions = [r.get("seconds") or {} for r in record.get("region_runs") or []]
    out = {
        "build": sum(x.wall_seconds or 0.0 for x in builds),
        "conversions": sum(x.wall_seconds or 0.0 for x in sides),
        "runs": sum(once.values()),
        "region_cuts": sum(r.get("cut", 0.0) for r in regions),
        "region_conversions": sum(r.get("conversions", 0.0) for r in regions),
        "region_runs": sum(r.get("runs", 0.0) for r in regions),
    }
    return {k: round(v, 3) for k, v in out.items()}


def _runs(
    p: _Parts,
    bundle: Bundle,
    record: dict[str, Any],
    run_form: forms.Form,
    same_form: bool,
    releases: list[str],
) -> dict[str, Any]:
    out: dict[str, Any] = {"form": run_form.to_json(), "same_as_compared": same_form}
    steps, overall = pairs_of(record)
    assert overall is not None  # run only once the chain is compared
    wanted = _wanted(record)
    needed = [r for r in releases if r in wanted]
    sides: dict[str, ConvertedSide]
    if same_form:
        build, sides = record["build"], sides_of(record)
        run_pairs = {(s.old, s.new): s for s in [*steps, overall]}
    else:
        p.progress(f"{bundle.name}: the run form, {run_form.described()}")
        build = p.build(run_form, reference=True)
        sides = p.sides(build, needed)
        run_pairs = {}
        for s in [*steps, overall]:
            if s.old in sides and s.new in sides and (s.old, s.new) not in run_pairs:
                run_pairs[(s.old, s.new)] = p.pair(sides, s.old, s.new)
        out["build"] = build
        out["sides"] = sides
    out["pairs"] = {f"{a}->{b}": v.to_json() for (a, b), v in run_pairs.items()}
    if any(not sides[r].ok for r in needed):
        bad = [r for r in needed if not sides[r].ok]
        out["measurement"] = {
            "ok": False,
            "error": f"the run form does not convert under {', '.join(bad)}",
            "attempts": [],
        }
        return out
    out["measurement"] = _on_one_runtime(p, bundle, sides, needed, build, releases)
    m = out["measurement"]
    if m.get("ok"):
        labels = list(bundle.export.get("names", {}).get("outputs", []))
        reference = build.reference
        m["drift"] = {}
        for (a, b), pair in run_pairs.items():
            if a in m["runs"] and b in m["runs"]:
                m["drift"][f"{a}->{b}"] = {
                    "shipped": pair.shipped.identity,
                    "outputs": p.drift(m["runs"][a], m["runs"][b], reference, labels),
                }
    return out


def _on_one_runtime(
    p: _Parts,
    bundle: Bundle,
    sides: dict[str, ConvertedSide],
    needed: list[str],
    build: BuiltModule,
    releases: list[str],
) -> dict[str, Any]:
    # read-only, the same path is replayed from the store (a refusal is stored too), and a
    # run that is not stored raises Missing
    attempts: list[str] = []
    for env in _candidates(p, releases):
        runs: dict[str, RuntimeRun] = {}
        failed = ""
        for release in needed:  # oldest first: the asset a newer runtime may refuse
            answer = p.run(
                sides[release],
                f"the {release} program",
                env,
                build.folder,
                build.folder.name,
            )
            if answer.stage == "flaky":  # no lasting answer: not another runtime's turn
                return {
                    "ok": False,
                    "runtime": env.runtime,
                    "attempts": [*attempts, f"{env.runtime}: {release}: flaky"],
                    "error": f"coreai-core on {env.runtime} gave no lasting answer for the "
                    f"{release} program: {answer.error}",
                }
            if not answer.ok:
                failed = f"{release}: {answer.failure}"
                break
            runs[release] = answer
        if failed:
            attempts.append(f"{env.runtime}: {failed}")
            continue
        return {"ok": True, "runtime": env.runtime, "attempts": attempts, "runs": runs}
    return {
        "ok": False,
        "runtime": None,
        "attempts": attempts,
        "error": "no runtime could run every program of the chain",
    }


def _candidates(p: _Parts, releases: list[str]) -> list[Any]:
    """The chain's runtimes, the target's first, one per coreai-core."""
    out, cores = [], set()
    for release in reversed(releases):
        env = p.session.env(release)
        if env.core not in cores:
            cores.add(env.core)
            out.append(env)
    return out
