"""Trace targets: one module per bundle that builds its model the way the export recipe does.

A target returns the module (weights are irrelevant to which constructs appear, so none are
loaded), the recipe's example inputs, and what it mirrors. Targets import their upstream
packages lazily: they are an optional extra (`pip install -e .[trace]`).
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
