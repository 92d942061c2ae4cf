"""The torch a bundle's whole program was built and exported on, beside the one the registry
says the recipe ran. Built by `inventory.verify.service.torch_of`; `to_json` is its JSON form
(`verify --json`'s `torch`) and `from_json` its checked read by a format that renders from the
JSON document."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory.verify.decode import field, mapping, optional

WHAT = "a whole-program check's torch"


@dataclass(frozen=True)
class TorchCheck:
    built: str
    recipe: str | None  # None: the registry records no torch for the recipe
    recipe_source: str | None
    same: bool | None  # the same release as the recipe's (None: the recipe's is not recorded)
    sensitivity: str | None  # the measured sensitivity to the shared torch, in one line

    def to_json(self) -> dict[str, Any]:
        return {
            "built": self.built,
            "recipe": self.recipe,
            "recipe_source": self.recipe_source,
            "same": self.same,
            "sensitivity": self.sensitivity,
        }

    @classmethod
    def from_json(cls, value: object) -> TorchCheck | None:
        """None where nothing was built (the field is null)."""
        if value is None:
            return None
        record = mapping(value, WHAT)
        return cls(
            built=field(record, "built", str, WHAT),
            recipe=optional(record, "recipe", str, WHAT),
            recipe_source=optional(record, "recipe_source", str, WHAT),
            same=optional(record, "same", bool, WHAT),
            sensitivity=optional(record, "sensitivity", str, WHAT),
        )
