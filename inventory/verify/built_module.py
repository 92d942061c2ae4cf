"""The module a whole-program check built and exported (`chain._Parts.build`: the build worker's
answer, stored, with the folder it is stored in): its program, seeded inputs and, where it was
asked for, the torch fp32 reference. `from_part` is the one checked read of the stored part (a
build stored by an earlier version may lack a later field: it reads as None); `to_json` its form
in `verify --json`'s `build`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inventory.verify.decode import field, mapping, number, optional

WHAT = "a built module"


@dataclass(frozen=True)
class BuiltModule:
    folder: Path  # where it is stored: every part made from it is keyed by its name
    program: str  # the exported program's file
    inputs_file: str  # its seeded inputs, by the program's input names
    params: int | None
    wall_seconds: float | None
    peak_mb: float | None
    torch: str | None  # the torch it was built and exported on
    inputs: tuple[dict[str, Any], ...]  # each input: its name, how it was seeded, shape, dtype
    weights: dict[str, Any] | None  # the checkpoint loaded into it (--weights)
    nonfinite_state: int | None  # NaN/inf values in its state
    evidence: str | None

    @classmethod
    def from_part(cls, value: object, folder: Path) -> BuiltModule:
        record = mapping(value, WHAT)
        files = mapping(field(record, "files", dict, WHAT), f"{WHAT}'s files")
        inputs = field(record, "inputs", list, WHAT) if "inputs" in record else []
        for i, each in enumerate(inputs):
            mapping(each, f"{WHAT}'s inputs[{i}]")
        weights = record.get("weights")
        return cls(
            folder=folder,
            program=field(files, "program", str, f"{WHAT}'s files"),
            inputs_file=field(files, "inputs", str, f"{WHAT}'s files"),
            params=optional(record, "params", int, WHAT) if "params" in record else None,
            wall_seconds=number(record, "wall_seconds", WHAT),
            peak_mb=number(record, "peak_mb", WHAT),
            torch=optional(record, "torch", str, WHAT) if "torch" in record else None,
            inputs=tuple(inputs),
            weights=None if weights is None else mapping(weights, f"{WHAT}'s weights"),
            nonfinite_state=optional(record, "nonfinite_state", int, WHAT)
            if "nonfinite_state" in record
            else None,
            evidence=optional(record, "evidence", str, WHAT) if "evidence" in record else None,
        )

    @property
    def reference(self) -> Path:
        """The torch fp32 reference's outputs (written when the build was asked for them)."""
        return self.folder / "reference.safetensors"

    def to_json(self) -> dict[str, Any]:
        return {
            "params": self.params,
            "seconds": self.wall_seconds,
            "peak_mb": self.peak_mb,
            "torch": self.torch,
            "inputs": list(self.inputs),
            "weights": self.weights,
            # NaN/inf in the module's state (a -inf attention mask is legitimate; a
            # checkpoint tensor holding one is refused)
            "nonfinite_state": self.nonfinite_state,
            "evidence": self.evidence,
        }


def build_of(record: dict[str, Any]) -> BuiltModule | None:
    """The build a chain record (or its model-level run's record) holds (None: none was made)."""
    build = record.get("build")
    assert build is None or isinstance(build, BuiltModule)  # built by chain.measure
    return build
