"""Trace targets: project modules that build a bundle's model from public packages.

For the shipped bundles these are the stand-ins (`[bundles.X.standin]`): what CI traces where no
recipe checkout exists, held against the recorded recipe trace through their stated differences.
A target returns the module (weights are irrelevant to which constructs appear, so none are
loaded), the recipe's example inputs, and what it mirrors. `TraceTarget` is also what a recipe
builder (`inventory.trace.recipes`) returns. Targets import their upstream packages lazily: they
are an optional extra (`trace`: `python3.11 scripts/setup_venv.py .venv trace`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class TraceTarget:
    module: Any  # torch.nn.Module, in the recipe's dtype
    args: tuple[Any, ...]
    dtype: str
    packages: tuple[str, ...]  # distributions whose versions the trace records
    notes: str  # what is real upstream code, what is reconstructed from the recipe
    kwargs: dict[str, Any] = field(default_factory=dict)
