"""From a measured probe result to a verdict and a re-export decision, with the reasons."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from inventory.policy import Policy
from oracle.compare import Identity, ProbeResult


class Verdict(StrEnum):
    """What a probe (and a bundle, by its worst probe) found."""

    NOT_AFFECTED = "not-affected"
    SAME_PROGRAM = "same-program"
    # a pipeline record answered by the generic asset probe alone, which converts to the same
    # program: the bundle's own program was not checked (`plan` lists it, `--verify` checks it)
    ASSET_PROBE_SAME_PROGRAM = "asset-probe-same-program"
    VALUES_IDENTICAL = "values-identical"
    VALUES_MOVE = "values-move"
    SHAPE_CHANGE = "shape-change"
    OLD_CANNOT_CONVERT = "old-cannot-convert"
    NEW_CANNOT_CONVERT = "new-cannot-convert"
    INCONCLUSIVE = "inconclusive"
    # The load check (question 2: does the shipped asset load where it ships?)
    LOADS = "loads"
    DOES_NOT_LOAD = "does-not-load"
    DEPENDS_ON_EXPORTER = "depends-on-exporter"


class Reexport(StrEnum):
    """Whether to re-export; the members are in order, worst first."""

    REQUIRED = "required"
    INCONCLUSIVE = "inconclusive"
    # nothing found that moves, but what the answer rests on does not reach the bundle's own
    # program (a pipeline record answered by the stand-in asset probe alone): never a "no"
    UNCHECKED = "unchecked"
    OPTIONAL = "optional"
    NO = "no"


# Worst first: a bundle's answer is its worst probe's.
REEXPORT_ORDER = tuple(Reexport)
# A plan's levels: an accepted risk (ignore file) ranks after every answer.
IGNORED = "ignored"
PLAN_ORDER = (*REEXPORT_ORDER, IGNORED)


class AloneCheck(StrEnum):
    """When exactly one side converts: is that side's program right against torch fp32?"""

    RIGHT = "right"
    WRONG = "wrong"
    NOT_RUN = "not-run"


@dataclass(frozen=True)
class ProbeVerdict:
    verdict: Verdict
    reexport: Reexport
    reason: str
    alone: AloneCheck | None = None  # set when exactly one side converts


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _rel(err: float | None, magnitude: float) -> float | None:
    if err is None:
        return None
    return err / magnitude if magnitude > 0 else err


def alone_check(result: ProbeResult, policy: Policy) -> tuple[AloneCheck, str]:
    """The one side that converts, against torch fp32 (the other side cannot convert): the
    same policy as a pair's, its numbers and the runtime it was run on."""
    a = result.alone
    converter = (result.new if a is None or a.side == "new" else result.old).converter
    if a is None or not a.ok or a.stats is None:
        why = a.error if a is not None else "not run (a result stored before this check)"
        return AloneCheck.NOT_RUN, (
            f"coreai-torch {converter}'s program could not be checked against torch fp32: {why}"
        )
    s = a.stats
    if s.shapes != s.shapes_ref:
        return AloneCheck.WRONG, (
            f"coreai-torch {converter}'s program gives shape {s.shapes}, "
            f"torch gives {s.shapes_ref} ({a.runtime})"
        )
    tol = policy.tolerance_for(result.spec.dtype)
    err = _rel(s.maxabs_ref, s.ref_magnitude)
    right = s.nonfinite == 0 and err is not None and err <= tol
    nonfinite = f", {s.nonfinite} NaN/inf where torch is finite" if s.nonfinite else ""
    return (AloneCheck.RIGHT if right else AloneCheck.WRONG), (
        f"coreai-torch {converter}'s program {'matches' if right else 'is WRONG against'} "
        f"torch fp32: error {_fmt(err)} relative to |ref|={s.ref_magnitude:.3g}{nonfinite}, "
        f"tolerance {tol:g} ({a.runtime})"
    )


def judge(result: ProbeResult, policy: Policy) -> ProbeVerdict:
    old, new = result.old, result.new
    if not old.ok and not new.ok:
        return ProbeVerdict(
            Verdict.INCONCLUSIVE,
            Reexport.INCONCLUSIVE,
            f"neither converter converted the probe ({old.stage}: {old.error})",
        )
    if not old.ok:
        alone, how = alone_check(result, policy)
        return ProbeVerdict(
            Verdict.OLD_CANNOT_CONVERT,
            Reexport.INCONCLUSIVE,
            f"coreai-torch {old.converter} cannot convert the probe ({old.stage}: {old.error}); "
            f"the shipped bundle was converted, so it cannot hold this construct as probed; {how}",
            alone,
        )
    if not new.ok:
        alone, how = alone_check(result, policy)
        return ProbeVerdict(
            Verdict.NEW_CANNOT_CONVERT,
            Reexport.INCONCLUSIVE,
            f"coreai-torch {new.converter} cannot convert the probe ({new.stage}: {new.error}); "
            f"re-exporting with it would fail; {how}",
            alone,
        )
    if result.shipped == Identity.IDENTICAL:
        stage = (
            "emitted graphs differ but optimize() makes them the same"
            if result.emitted == Identity.DIFFERS
            else "emitted and shipped graphs identical"
        )
        return ProbeVerdict(
            Verdict.SAME_PROGRAM, Reexport.NO, f"same program after normalisation ({stage})"
        )
    m = result.measurement
    if m is None or not m.ok or m.stats is None:
        why = m.error if m is not None else "not measured"
        tried = "; ".join(m.attempts) if m is not None and m.attempts else ""
        return ProbeVerdict(
            Verdict.INCONCLUSIVE,
            Reexport.INCONCLUSIVE,
            f"shipped graphs differ but could not be run: {why}" + (f" ({tried})" if tried else ""),
        )
    s = m.stats
    tol = policy.tolerance_for(result.spec.dtype)
    if s.shapes_old != s.shapes_new:
        old_right = s.shapes_old == s.shapes_ref
        new_right = s.shapes_new == s.shapes_ref
        if new_right and not old_right:
            return ProbeVerdict(
                Verdict.SHAPE_CHANGE,
                Reexport.REQUIRED,
                f"shipped output shape {s.shapes_old} is wrong, torch gives {s.shapes_ref}; "
                f"coreai-torch {new.converter} gives {s.shapes_new} ({m.runtime})",
            )
        return ProbeVerdict(
            Verdict.SHAPE_CHANGE,
            Reexport.OPTIONAL,
            f"output shape {s.shapes_old} -> {s.shapes_new}, torch gives "
            f"{s.shapes_ref} ({m.runtime})",
        )
    if s.bit_identical:
        return ProbeVerdict(
            Verdict.VALUES_IDENTICAL,
            Reexport.OPTIONAL,
            f"shipped graph differs, outputs bit-identical on {m.runtime}",
        )
    old_err = _rel(s.maxabs_old_ref, s.ref_magnitude)
    new_err = _rel(s.maxabs_new_ref, s.ref_magnitude)
    old_bad = s.nonfinite_old > 0 or old_err is None or old_err > tol
    new_bad = s.nonfinite_new > 0 or new_err is None or new_err > tol
    numbers = (
        f"max|old-new|={_fmt(s.maxabs_old_new)}, error vs torch fp32 relative to "
        f"|ref|={s.ref_magnitude:.3g}: old {_fmt(old_err)}, new {_fmt(new_err)}, "
        f"tolerance {tol:g} ({m.runtime})"
    )
    if old_bad and not new_bad:
        return ProbeVerdict(
            Verdict.VALUES_MOVE, Reexport.REQUIRED, f"shipped outputs wrong: {numbers}"
        )
    if s.nonfinite_old > 0 and s.nonfinite_new == 0:
        # NaN/inf where torch gives a finite, representable value is wrong whatever the
        # tolerance; the new program's remaining error is reported, not hidden.
        return ProbeVerdict(
            Verdict.VALUES_MOVE,
            Reexport.REQUIRED,
            f"shipped outputs hold {s.nonfinite_old} NaN/inf where torch fp32 is "
            f"finite, the new program none: {numbers}",
        )
    closer = "new" if (new_err or 0) < (old_err or 0) else "old"
    return ProbeVerdict(
        Verdict.VALUES_MOVE,
        Reexport.OPTIONAL,
        f"outputs move, {closer} side closer to torch: {numbers}",
    )


def worst(reexports: Iterable[str]) -> Reexport:
    """The worst of some re-export levels ("no" when there is none)."""
    levels = set(reexports)
    return next((level for level in REEXPORT_ORDER if level in levels), Reexport.NO)


def rank(level: str) -> int:
    """Lower is worse: a level's place in PLAN_ORDER (re-export levels, then ignored)."""
    return PLAN_ORDER.index(level)
