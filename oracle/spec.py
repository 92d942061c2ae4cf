"""What to probe: a construct, its parameters, and the export pipeline of the model it came from."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Pipeline:
    """How the model was exported: decomposition table, whether `optimize()` ran, shapes."""

    decompositions: str = "coreai"  # "coreai" (get_decomp_table()), "default", "none"
    optimize: bool = True
    shapes: str = "static"

    def to_json(self) -> dict[str, Any]:
        return {"decompositions": self.decompositions, "optimize": self.optimize,
                "shapes": self.shapes}


@dataclass(frozen=True)
class ProbeSpec:
    construct: str
    params: dict[str, Any]
    dtype: str = "float32"
    pipeline: Pipeline = field(default_factory=Pipeline)
    values: str = "trained"  # "init", "trained", "adversarial": how parameters are filled
    seed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "construct": self.construct,
            "params": self.params,
            "dtype": self.dtype,
            "pipeline": self.pipeline.to_json(),
            "values": self.values,
            "seed": self.seed,
        }

    def key(self) -> str:
        canonical = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def label(self) -> str:
        from oracle.constructs import label

        return label(self.construct, self.params, self.dtype)
