"""Attribution by release step: where between two releases a probe's program changes, and which
fix records of that step explain the change.

A probe compared from a bundle's exporter straight to a target release says *that* the program
changes, not *where*. Blaming every record in the range that names the construct credits a fix
whose own release step leaves the probe identical (sam3's dynamic views changed in 0.4.1 ->
0.4.2, yet #13 of 0.4.1 was named). So a change across several steps is compared again
under each consecutive pair of releases (stored results, so a second ask is free), and each
changing step is explained only by the records that ship in that very step. Where that step was
bisected (`inventory bisect`, evidence/bisect/), only by those of its records whose pull
request's commit changes the probe (#13, not #25, for arange with mixed bounds).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from inventory.bisect_evidence import narrowed
from oracle.catalog import (
    BOTH,
    LOWERING,
    OPTIMIZER,
    Catalog,
    EnvError,
    Fix,
    RunFault,
    between,
    version_key,
)
from oracle.compare import Identity, ProbeResult, ProbeSpec, Side
from oracle.infra import Routine
from oracle.session import Session
from oracle.workers import asset_probe

# An environment's name in a failure ("coreai-torch-0.4.1 worker died of SIGABRT (log:
# .../coreai-torch-0.4.1.worker.log)", or a commit's `coreai-torch-src-53d6bddfd6ad`): two
# releases that fail alike differ only there.
_ENV_NAME = re.compile(r"coreai-torch-[A-Za-z0-9._+-]+")


# An MLIR diagnostic's location, up to the message after it: 0.4.0 writes fused call-stack
# locations, 0.4.1 on debuginfo ones (#28), so one failure reads differently under the two.
_LOCATION = re.compile(r"at (?:loc\(|#debuginfo\.location<).*?[)>]:\s+")
# A path: the temp folder a side wrote into names its side and release (`.../old-0.4.0/...`).
_PATH = re.compile(r"(?<![\w.])/[\w.+$-]+(?:/[\w.+$-]+)+")


def said(side: Side) -> str:
    """A failed side's error as the converter said it: the exception's every line, from the
    traceback the worker kept (the one-line error a result holds stops at 500 characters, before
    the message of a pass that prints its location first)."""
    trace = Path(side.files.get("traceback", "") or "/nonexistent")
    if not trace.is_file():
        return side.error
    lines = trace.read_text(errors="replace").splitlines()
    frames = [i for i, ln in enumerate(lines) if ln.startswith("  ")]
    message = " ".join(ln.strip() for ln in lines[frames[-1] + 1 if frames else 0 :] if ln.strip())
    return message or side.error


def failure(side: Side) -> str:
    """A side's failure with what differs between two releases that fail alike set aside: the
    environment's name, the location format and the paths of the side's own folders."""
    text = _ENV_NAME.sub("<env>", said(side))
    return _PATH.sub("<path>", _LOCATION.sub("at <location>: ", text))


def failing_both(result: ProbeResult) -> bool:
    """Both releases fail the same way: a standing limitation, not a change."""
    return result.shipped == Identity.BOTH_CANNOT_CONVERT and failure(result.old) == failure(
        result.new
    )


def program_changed(result: ProbeResult) -> bool:
    """The shipped program differs, or only one side converts (a change either way)."""
    return result.shipped != Identity.IDENTICAL and not failing_both(result)


def release_steps(catalog: Catalog, old: str, new: str) -> list[tuple[str, str]]:
    """The consecutive release pairs from `old` to `new` in the catalog."""
    chain = sorted(
        (v for v in catalog.releases if version_key(old) <= version_key(v) <= version_key(new)),
        key=version_key,
    )
    return list(zip(chain, chain[1:], strict=False))


def own_step(catalog: Catalog, exporter: str, fix: Fix) -> tuple[str, str]:
    """The step a fix ships in, as seen from a bundle's exporter: the release before
    `ships_in` (or the exporter, if later) -> `ships_in`."""
    before = [
        v
        for v in catalog.releases
        if version_key(exporter) <= version_key(v) < version_key(fix.ships_in)
    ]
    return (max(before, key=version_key) if before else exporter), fix.ships_in


def stage(result: ProbeResult) -> str:
    """Where a probe's change is made, as verify says of a whole program's region: `optimizer`
    when the emitted programs are identical and the shipped ones are not (no lowering emitted
    anything else); else `lowering` (the emitted programs differ, or one side's emitted program
    is already optimized and the stage cannot be told apart, as verify does). One case is told:
    a probe whose pipeline does not optimize, where one side's `to_coreai()` returns an
    optimized program (0.4.3) and the other the emitted one, ships programs of two stages: the
    optimizer's work is part of the change, and a lowering change under it cannot be told from
    these two programs (`BOTH`)."""
    if result.emitted == Identity.IDENTICAL and result.shipped == Identity.DIFFERS:
        return OPTIMIZER
    if (
        result.emitted == Identity.NOT_COMPARABLE
        and result.shipped == Identity.DIFFERS
        and not result.spec.pipeline.optimize
    ):
        return BOTH
    return LOWERING


def held(construct: str) -> tuple[str, ...]:
    """The constructs a probe's module holds: its own, and for the asset probe those its blocks
    are built of (its fp16 batch norms change with #54:
    tests/oracle/workers/test_asset_probe_holds.py)."""
    if construct == asset_probe.CONSTRUCT:
        return (construct, *asset_probe.HOLDS)
    return (construct,)


def explaining(
    fixes: list[Fix], construct: str, old: str, new: str, result: ProbeResult | None = None
) -> tuple[str, ...]:
    """The records shipping between `old` and `new` a change of this construct's program in
    that step can be credited to: the lowering records naming a construct the probe holds; for
    a change made by the optimizer alone (`result`'s stage), the records of a kind that changes
    the optimizer's output instead (a lowering that emits the same program changed nothing)."""
    records = between(fixes, old, new)
    where = stage(result) if result is not None else LOWERING
    kinds = set(held(construct))
    return tuple(
        f.id for f in records if f.record_kind.credited(where, bool(kinds & set(f.constructs)))
    )


def explained_by(
    fixes: list[Fix], spec: ProbeSpec, old: str, new: str, result: ProbeResult
) -> tuple[str, ...]:
    """`explaining`, its lowering records narrowed by bisection where the step was bisected. A
    record changing the optimizer is not narrowed: bisection builds every commit with one
    release's pins, so a pin's change is never seen there."""
    ids = explaining(fixes, spec.construct, old, new, result)
    unseen = {f.id for f in fixes if not f.record_kind.narrowed_by_bisection}
    seen = narrowed(tuple(i for i in ids if i not in unseen), fixes, old, new, spec)
    return tuple(i for i in ids if i in unseen or i in seen)


def step_note(result: ProbeResult, explained: bool) -> str:
    """What the evidence says of a step's change beyond its records: programs of two stages
    (always said: the records credited cannot be told apart), or an optimizer-only change no
    record of the step explains."""
    if not program_changed(result):
        return ""
    where = stage(result)
    if where == BOTH:
        return (
            "the pipeline does not optimize and one release's to_coreai() returns an "
            "optimized program: the two shipped programs are of two stages, so the "
            "optimizer's work is part of the change and a lowering change under it cannot be "
            "told apart"
        )
    if where == OPTIMIZER and not explained:
        return (
            "emitted program identical, only optimize()'s output differs; no pipeline record "
            "in this step"
        )
    return ""


@dataclass(frozen=True)
class Step:
    """One consecutive release pair's comparison of a probe."""

    old: str
    new: str
    result: ProbeResult
    explained_by: tuple[str, ...]  # lowering records of this step naming the construct
    note: str = ""  # for an unexplained change: what the evidence says of it

    @property
    def label(self) -> str:
        return f"{self.old}->{self.new}"

    @property
    def changed(self) -> bool:
        return program_changed(self.result)

    @property
    def unexplained(self) -> bool:
        return self.changed and not self.explained_by


def locate(
    session: Session,
    spec: ProbeSpec,
    old: str,
    new: str,
    whole: ProbeResult,
    fixes: list[Fix],
    use_cache: bool = True,
) -> tuple[Step, ...]:
    """Every step from `old` to `new` with its comparison; `whole` (old -> new) is reused when
    the range is one step. Empty when the program does not change or a step's environment
    cannot be had (then nothing is attributed, and the caller says so)."""
    if not program_changed(whole):
        return ()
    pairs = release_steps(session.catalog, old, new)
    if len(pairs) <= 1:
        return (step_between(fixes, spec, old, new, whole),)
    steps = []
    for a, b in pairs:
        try:
            env_a, env_b = session.env(a), session.env(b)
            session.progress(Routine(f"{spec.label()}: locating the change, {a} -> {b}"))
            # built when a side first converts: a build that fails attributes nothing either
            result = session.compare(spec, env_a, env_b, use_cache=use_cache)
        except RunFault:
            raise  # the store cannot be written, an environment cannot run: the run's error
        except EnvError:
            return ()
        steps.append(step_between(fixes, spec, a, b, result))
    return tuple(steps)


def step_between(
    fixes: list[Fix], spec: ProbeSpec, old: str, new: str, result: ProbeResult
) -> Step:
    """One release step's comparison of a probe, with the records of that step that explain a
    change of it (what `locate` gives per step, and the registry sweep of a single step)."""
    ids = explained_by(fixes, spec, old, new, result)
    return Step(old, new, result, ids, step_note(result, bool(ids)))


def step_line(steps: tuple[Step, ...]) -> str:
    """Where a change happens, for a reason chain: 'changes in 0.4.1->0.4.2 (#56)'."""
    parts = []
    for s in steps:
        if s.changed:
            who = (
                ", ".join(f"#{i}" if i.isdigit() else i for i in s.explained_by)
                or "unexplained: no record of this step names the construct"
            ) + (f"; {s.note}" if s.note else "")
            parts.append(f"{s.label} ({who})")
    return "changes in " + "; ".join(parts) if parts else "no step changes it"
