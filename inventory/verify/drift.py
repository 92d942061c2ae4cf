"""Model-level drift: each output of both whole programs against the torch fp32 reference."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from safetensors import safe_open
from safetensors.numpy import load_file


def _outputs(path: Path) -> dict[str, np.ndarray]:
    """A run's `main/output:<name>` tensors (the asset worker's layout: [dtype, shape] in the
    metadata, raw bytes for a dtype safetensors lacks), in the function's output order."""
    out: dict[str, np.ndarray] = {}
    with safe_open(str(path), framework="numpy") as handle:
        meta = handle.metadata() or {}
        for key in handle.keys():  # noqa: SIM118 - safe_open has no __iter__
            if "/output:" not in key:
                continue
            array = handle.get_tensor(key)
            dtype, shape = json.loads(meta[key])
            if str(array.dtype) != dtype:
                array = array.view(np.dtype(dtype)).reshape(shape)
            out[key.split("/output:", 1)[1]] = array
    return out


def _maxabs(a: np.ndarray, b: np.ndarray) -> float | None:
    if a.shape != b.shape:
        return None
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
    finite = np.isfinite(diff)
    return float(diff[finite].max()) if finite.any() else (0.0 if not diff.size else None)


def per_output(
    old: Path, new: Path, reference: Path, names: list[str], labels: list[str] | None = None
) -> list[dict[str, Any]]:
    """Per output, in order: max abs error and relative error (max abs / max |reference|) of
    each side, how far the sides are apart, and non-finite values where the reference is
    finite. `labels`: the recipe's output names, when it names as many as the program has (the
    program's own names are the converter's, e.g. `mul_87`)."""
    labels = labels if labels and len(labels) == len(names) else list(names)
    o, n, r = _outputs(old), _outputs(new), load_file(str(reference))
    rows = []
    for i, name in enumerate(names):
        ref = r[f"out{i}"].astype(np.float64)
        magnitude = float(np.abs(ref[np.isfinite(ref)]).max()) if np.isfinite(ref).any() else 0.0
        row: dict[str, Any] = {
            "output": labels[i],
            "graph_name": name,
            "shape": list(ref.shape),
            "ref_nonfinite": int((~np.isfinite(ref)).sum()),
            "dtype": str(n[name].dtype),
            "ref_magnitude": magnitude,
            "bit_identical": o[name].tobytes() == n[name].tobytes(),
        }
        for side, values in (("old", o[name]), ("new", n[name])):
            err = _maxabs(values, ref)
            row[f"maxabs_{side}"] = err
            row[f"rel_{side}"] = (
                (err / magnitude if magnitude > 0 else err) if err is not None else None
            )
            bad = (
                ~np.isfinite(values.astype(np.float64)) & np.isfinite(ref)
                if values.shape == ref.shape
                else np.zeros(0, dtype=bool)
            )
            row[f"nonfinite_{side}"] = int(bad.sum())
        row["maxabs_old_new"] = _maxabs(o[name], n[name])
        rows.append(row)
    return rows
