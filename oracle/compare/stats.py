"""Numbers from stored output tensors: how far two programs' outputs are apart and from torch."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where a measurement is read: a warm answer needs none
    import numpy as np


@dataclass(frozen=True)
class OutputStats:
    bit_identical: bool
    shapes_old: list[list[int]]
    shapes_new: list[list[int]]
    shapes_ref: list[list[int]]
    maxabs_old_new: float | None  # None when shapes differ
    maxabs_old_ref: float | None
    maxabs_new_ref: float | None
    ref_magnitude: float  # max |reference|, to read the errors against
    nonfinite_old: int  # non-finite where the reference is finite and representable
    nonfinite_new: int
    # reference values beyond what the output dtype can hold (e.g. > 65504 for fp16): no
    # program can produce them, so they are left out of the errors and non-finite counts
    unrepresentable: int = 0


@dataclass(frozen=True)
class SideStats:
    """One program's outputs against torch fp32, when it is the only side that converts."""

    shapes: list[list[int]]
    shapes_ref: list[list[int]]
    maxabs_ref: float | None  # None when shapes differ
    ref_magnitude: float
    nonfinite: int  # non-finite where the reference is finite and representable
    unrepresentable: int = 0


def _maxabs(a: np.ndarray, b: np.ndarray, mask: np.ndarray | None = None) -> float | None:
    import numpy as np

    if a.shape != b.shape:
        return None
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        both_nan = np.isnan(a64) & np.isnan(b64)
        same_inf = np.isinf(a64) & (a64 == b64)
        diff = np.abs(a64 - b64)
    diff[both_nan | same_inf] = 0.0
    diff[np.isnan(diff)] = np.inf  # NaN on one side only counts as infinitely far
    if mask is not None:
        diff = diff[mask]
    return float(diff.max()) if diff.size else 0.0


def _representable(out: np.ndarray, ref: np.ndarray) -> np.ndarray | None:
    """Where the reference fits the output's dtype (None: shapes differ)."""
    import numpy as np

    if out.shape != ref.shape:
        return None
    r = ref.astype(np.float64)
    if not np.issubdtype(out.dtype, np.floating):
        return np.ones(r.shape, dtype=bool)
    return ~np.isfinite(r) | (np.abs(r) <= float(np.finfo(out.dtype).max))


def _nonfinite(out: np.ndarray, ref: np.ndarray, fits: np.ndarray | None) -> int:
    import numpy as np

    o = out.astype(np.float64)
    bad = ~np.isfinite(o)
    if fits is not None:
        bad &= np.isfinite(ref.astype(np.float64)) & fits
    return int(bad.sum())


def _worst(values: list[float | None]) -> float | None:
    if any(v is None for v in values):
        return None
    return max((v for v in values if v is not None), default=0.0)


def _magnitude(refs: list[np.ndarray], fits: list[np.ndarray | None]) -> float:
    """max |reference| over its finite values the output dtype can hold. A NaN or infinite
    reference value is left out: it would make the magnitude NaN or inf, and every error read
    against it NaN or 0 (an atan2 of NaN operands made it NaN, and errors fell back to absolute
    ones)."""
    import numpy as np

    out = 0.0
    for c, f in zip(refs, fits, strict=True):
        r = c.astype(np.float64)
        keep = np.isfinite(r) if f is None else np.isfinite(r) & f
        if keep.any():
            out = max(out, float(np.abs(r[keep]).max()))
    return out


def output_stats(old: Path, new: Path, reference: Path) -> OutputStats:
    from safetensors.numpy import load_file

    o, n, r = load_file(str(old)), load_file(str(new)), load_file(str(reference))
    names = sorted(r)
    if any(k not in o or k not in n for k in names):
        raise ValueError("an output is missing from a side's tensors")
    olds = [o[k] for k in names]
    news = [n[k] for k in names]
    refs = [r[k] for k in names]
    bit_identical = all(
        a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
        for a, b in zip(olds, news, strict=True)
    )
    fits_old = [_representable(a, c) for a, c in zip(olds, refs, strict=True)]
    fits_new = [_representable(b, c) for b, c in zip(news, refs, strict=True)]
    unrepresentable = sum(int((~f).sum()) for f in fits_new if f is not None)
    return OutputStats(
        bit_identical=bit_identical,
        shapes_old=[list(a.shape) for a in olds],
        shapes_new=[list(b.shape) for b in news],
        shapes_ref=[list(c.shape) for c in refs],
        maxabs_old_new=_worst([_maxabs(a, b) for a, b in zip(olds, news, strict=True)]),
        maxabs_old_ref=_worst(
            [_maxabs(a, c, f) for a, c, f in zip(olds, refs, fits_old, strict=True)]
        ),
        maxabs_new_ref=_worst(
            [_maxabs(b, c, f) for b, c, f in zip(news, refs, fits_new, strict=True)]
        ),
        ref_magnitude=_magnitude(refs, fits_new),
        nonfinite_old=sum(
            _nonfinite(a, c, f) for a, c, f in zip(olds, refs, fits_old, strict=True)
        ),
        nonfinite_new=sum(
            _nonfinite(b, c, f) for b, c, f in zip(news, refs, fits_new, strict=True)
        ),
        unrepresentable=unrepresentable,
    )


def side_stats(outputs: Path, reference: Path) -> SideStats:
    """How far one side's stored outputs are from the torch fp32 reference (the same rules as
    `output_stats`: reference values the output dtype cannot hold are set aside)."""
    from safetensors.numpy import load_file

    o, r = load_file(str(outputs)), load_file(str(reference))
    names = sorted(r)
    if any(k not in o for k in names):
        raise ValueError("an output is missing from the side's tensors")
    outs = [o[k] for k in names]
    refs = [r[k] for k in names]
    fits = [_representable(a, c) for a, c in zip(outs, refs, strict=True)]
    return SideStats(
        shapes=[list(a.shape) for a in outs],
        shapes_ref=[list(c.shape) for c in refs],
        maxabs_ref=_worst([_maxabs(a, c, f) for a, c, f in zip(outs, refs, fits, strict=True)]),
        ref_magnitude=_magnitude(refs, fits),
        nonfinite=sum(_nonfinite(a, c, f) for a, c, f in zip(outs, refs, fits, strict=True)),
        unrepresentable=sum(int((~f).sum()) for f in fits if f is not None),
    )
