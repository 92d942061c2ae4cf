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
    # aten overloads taken out of the table before decomposing ("aten.reflection_pad1d.default"),
    # as users and the converter's own tests do to keep an op whole for its lowering
    keep: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # read back from JSON as a list; a tuple keeps the spec hashable and its key canonical
        object.__setattr__(self, "keep", tuple(sorted(self.keep)))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "decompositions": self.decompositions,
            "optimize": self.optimize,
            "shapes": self.shapes,
        }
        # only when set: a pipeline that keeps nothing out keys its results as before
        if self.keep:
            out["keep"] = list(self.keep)
        return out

    def table(self) -> str:
        """The decomposition table in words (`default - aten.x.default`)."""
        return " - ".join((self.decompositions, *self.keep))


@dataclass(frozen=True)
class ProbeSpec:
    construct: str
    params: dict[str, Any]
    dtype: str = "float32"
    pipeline: Pipeline = field(default_factory=Pipeline)
    # "init", "trained", "adversarial": how parameters are filled; "checkpoint": from `tensors`
    values: str = "trained"
    seed: int = 0
    # values "checkpoint": {probe tensor: {"name", "sha256"}} read from the file `checkpoint`
    tensors: dict[str, dict[str, str]] = field(default_factory=dict)
    checkpoint: str = ""

    def to_json(self) -> dict[str, Any]:
        out = {
            "construct": self.construct,
            "params": self.params,
            "dtype": self.dtype,
            "pipeline": self.pipeline.to_json(),
            "values": self.values,
            "seed": self.seed,
        }
        if self.tensors:
            out["tensors"] = self.tensors
            out["checkpoint"] = self.checkpoint
        return out

    def key_json(self) -> dict[str, Any]:
        """What a result depends on: the spec, with its tensors' contents (their sha256) but not
        the path of the file they were read from."""
        out = self.to_json()
        out.pop("checkpoint", None)
        return out

    def key(self) -> str:
        canonical = json.dumps(self.key_json(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def label(self) -> str:
        from oracle.constructs import label

        return label(self.construct, self.params, self.dtype)
