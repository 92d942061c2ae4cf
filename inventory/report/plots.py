"""Plots for the HTML report, drawn by matplotlib as inline SVG (no file, no network).

What a reader needs to see of a probe or a region that moved: the fp32 reference and what the
old and the new program compute for the same input, element by element, and how far each lies
from the reference.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_POINTS = 256  # elements drawn per output: enough to see a pattern, small enough to inline


def _figure(width: float = 7.0, height: float = 2.6) -> tuple[ModuleType, Figure, Any]:
    import matplotlib

    matplotlib.use("Agg")  # no display here, and the report must not need one
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(figsize=(width, height))
    return plt, fig, axes


def _svg(plt: ModuleType, fig: Figure) -> str:
    out = io.StringIO()
    fig.tight_layout()
    fig.savefig(out, format="svg")
    plt.close(fig)
    text = out.getvalue()
    return text[text.index("<svg") :]  # the XML prolog is not allowed inside HTML


def values(
    title: str, reference: np.ndarray, old: np.ndarray | None, new: np.ndarray | None
) -> str:
    """One output, over its first elements (flattened): left, the fp32 reference and what the
    old and the new program compute; right, each side's |difference| from the reference (log
    axis), where a change within fp16's rounding shows that the lines on the left overlap."""
    import matplotlib

    matplotlib.use("Agg")  # no display here, and the report must not need one
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(10.0, 2.8))
    n = min(_POINTS, reference.size)
    x = np.arange(n)
    ref = reference.reshape(-1)[:n].astype(np.float64)
    left.plot(x, ref, label="torch fp32 reference", color="#222222", linewidth=1.6)
    for name, data, color, style in (("old", old, "#d62728", "-"), ("new", new, "#1f77b4", "--")):
        if data is None or not data.size:
            continue
        side = data.reshape(-1)[:n].astype(np.float64)
        left.plot(
            x[: side.size],
            side,
            label=f"{name} program",
            color=color,
            linewidth=1.0,
            linestyle=style,
        )
        error = np.abs(side - ref[: side.size])
        shown = np.where(np.isfinite(error), np.maximum(error, 1e-12), np.nan)
        right.plot(
            x[: side.size],
            shown,
            label=f"|{name} - fp32|",
            color=color,
            linewidth=0.9,
            linestyle=style,
        )
    left.set_title(title, fontsize=8)
    right.set_title("distance from the reference", fontsize=8)
    right.set_yscale("log")
    for ax in (left, right):
        ax.set_xlabel(f"element (first {n} of {reference.size})", fontsize=7)
        ax.tick_params(labelsize=7)
        ax.legend(fontsize=7, loc="upper right")
    return _svg(plt, fig)


def drift_bars(title: str, labels: Sequence[str], series: dict[str, Sequence[float | None]]) -> str:
    """Max |difference| per row (an output, a region), one bar per series, on a log axis; a
    missing or non-finite value is drawn at the axis' top and said in the label."""
    plt, fig, ax = _figure(height=max(1.6, 0.42 * len(labels) + 0.9))
    finite = [v for vs in series.values() for v in vs if v is not None and np.isfinite(v) and v > 0]
    top = max(finite, default=1.0) * 10
    floor = min(finite, default=1e-8) / 10
    y = np.arange(len(labels))
    height = 0.8 / max(1, len(series))
    colors = ("#d62728", "#1f77b4", "#9467bd", "#2ca02c")
    for k, (name, vals) in enumerate(series.items()):
        shown = [top if v is None or not np.isfinite(v) else max(v, floor) for v in vals]
        ax.barh(y + k * height, shown, height=height, label=name, color=colors[k % 4])
    ax.set_yticks(y + height * (len(series) - 1) / 2)
    ax.set_yticklabels([label[:60] for label in labels], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlim(floor, top * 1.5)
    ax.set_title(title, fontsize=9)
    ax.tick_params(axis="x", labelsize=7)
    ax.legend(fontsize=7, loc="lower right")
    return _svg(plt, fig)
