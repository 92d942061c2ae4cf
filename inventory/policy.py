"""The stated re-export policy: per-dtype tolerances against the torch fp32 reference."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

POLICY_FILE = Path(__file__).with_name("policy.toml")


@dataclass(frozen=True)
class Policy:
    tolerance: dict[str, float]
    override: float | None = None

    def tolerance_for(self, dtype: str) -> float:
        if self.override is not None:
            return self.override
        return self.tolerance.get(dtype, self.tolerance["float32"])


def load_policy(override: float | None = None, path: Path = POLICY_FILE) -> Policy:
    data = tomllib.loads(path.read_text())
    return Policy({k: float(v) for k, v in data["tolerance"].items()}, override)
