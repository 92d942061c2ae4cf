"""From a measured probe result to a verdict and a re-export decision, with the reasons."""

from __future__ import annotations

from dataclasses import dataclass

from inventory.policy import Policy
from oracle.compare import ProbeResult

# Worst first: a bundle's answer is its worst probe's.
REEXPORT_ORDER = ("required", "inconclusive", "optional", "no")


@dataclass(frozen=True)
class ProbeVerdict:
    verdict: str  # same-program | values-identical | values-move | shape-change |
    # old-cannot-convert | new-cannot-convert | inconclusive
    reexport: str  # required | optional | no | inconclusive
    reason: str


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3g}"


def _rel(err: float | None, magnitude: float) -> float | None:
    if err is None:
        return None
    return err / magnitude if magnitude > 0 else err


def judge(result: ProbeResult, policy: Policy) -> ProbeVerdict:
    old, new = result.old, result.new
    if not old.ok and not new.ok:
        return ProbeVerdict("inconclusive", "inconclusive",
                            f"neither converter converted the probe ({old.stage}: {old.error})")
    if not old.ok:
        return ProbeVerdict(
            "old-cannot-convert", "inconclusive",
            f"coreai-torch {old.converter} cannot convert the probe ({old.stage}: {old.error}); "
            "the shipped bundle was converted, so it cannot hold this construct as probed",
        )
    if not new.ok:
        return ProbeVerdict(
            "new-cannot-convert", "inconclusive",
            f"coreai-torch {new.converter} cannot convert the probe ({new.stage}: {new.error}); "
            "re-exporting with it would fail",
        )
    if result.shipped == "identical":
        stage = ("emitted graphs differ but optimize() makes them the same"
                 if result.emitted == "differs" else "emitted and shipped graphs identical")
        return ProbeVerdict("same-program", "no", f"same program after normalisation ({stage})")
    m = result.measurement
    if m is None or not m.ok or m.stats is None:
        why = m.error if m is not None else "not measured"
        tried = "; ".join(m.attempts) if m is not None and m.attempts else ""
        return ProbeVerdict("inconclusive", "inconclusive",
                            f"shipped graphs differ but could not be run: {why}"
                            + (f" ({tried})" if tried else ""))
    s = m.stats
    tol = policy.tolerance_for(result.spec.dtype)
    if s.shapes_old != s.shapes_new:
        old_right = s.shapes_old == s.shapes_ref
        new_right = s.shapes_new == s.shapes_ref
        if new_right and not old_right:
            return ProbeVerdict(
                "shape-change", "required",
                f"shipped output shape {s.shapes_old} is wrong, torch gives {s.shapes_ref}; "
                f"coreai-torch {new.converter} gives {s.shapes_new} ({m.runtime})",
            )
        return ProbeVerdict("shape-change", "optional",
                            f"output shape {s.shapes_old} -> {s.shapes_new}, torch gives "
                            f"{s.shapes_ref} ({m.runtime})")
    if s.bit_identical:
        return ProbeVerdict("values-identical", "optional",
                            f"shipped graph differs, outputs bit-identical on {m.runtime}")
    old_err = _rel(s.maxabs_old_ref, s.ref_magnitude)
    new_err = _rel(s.maxabs_new_ref, s.ref_magnitude)
    old_bad = s.nonfinite_old > 0 or old_err is None or old_err > tol
    new_bad = s.nonfinite_new > 0 or new_err is None or new_err > tol
    numbers = (f"max|old-new|={_fmt(s.maxabs_old_new)}, error vs torch fp32 relative to "
               f"|ref|={s.ref_magnitude:.3g}: old {_fmt(old_err)}, new {_fmt(new_err)}, "
               f"tolerance {tol:g} ({m.runtime})")
    if old_bad and not new_bad:
        return ProbeVerdict("values-move", "required", f"shipped outputs wrong: {numbers}")
    if s.nonfinite_old > 0 and s.nonfinite_new == 0:
        # NaN/inf where torch gives a finite, representable value is wrong whatever the
        # tolerance; the new program's remaining error is reported, not hidden.
        return ProbeVerdict("values-move", "required",
                            f"shipped outputs hold {s.nonfinite_old} NaN/inf where torch fp32 is "
                            f"finite, the new program none: {numbers}")
    closer = "new" if (new_err or 0) < (old_err or 0) else "old"
    return ProbeVerdict("values-move", "optional",
                        f"outputs move, {closer} side closer to torch: {numbers}")


def worst(reexports: list[str]) -> str:
    for level in REEXPORT_ORDER:
        if level in reexports:
            return level
    return "no"
