"""The stated re-export policy: per-dtype tolerances against the torch fp32 reference."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oracle.catalog import PROBE_DTYPES, DataFileError, Fields
from oracle.infra import read_toml

POLICY_FILE = Path(__file__).with_name("policy.toml")


@dataclass(frozen=True)
class Policy:
    tolerance: dict[str, float]
    override: float | None = None
    # an `unchecked` answer exits 0 instead of 5; the answer says the policy accepted it
    accept_unchecked: bool = False

    def tolerance_for(self, dtype: str) -> float:
        if self.override is not None:
            return self.override
        return self.tolerance.get(dtype, self.tolerance["float32"])


def load_policy(override: float | None = None, path: Path = POLICY_FILE) -> Policy:
    """The tolerances, each a finite number above 0 for a probe dtype, float32 required (the
    fallback of every other dtype); one line otherwise (oracle.catalog.schema)."""
    data = read_toml(path, DataFileError)
    fields = Fields(path, DataFileError)
    fields.keys(data, ("tolerance", "levels"), "the file")
    table = fields.table(data, "tolerance", "", required=True)
    fields.keys(table, PROBE_DTYPES, "[tolerance]")
    fields.need(table, "float32", "[tolerance]")
    levels = fields.table(data, "levels", "", required=False)
    fields.keys(levels, ("accept_unchecked",), "[levels]")
    accept = fields.boolean(levels, "accept_unchecked", "[levels]", False)
    return Policy(
        {k: fields.number(table, k, "[tolerance]", None, positive=True) for k in table},
        override,
        accept,
    )


def accepted_unchecked(policy: Policy, bundles: list[str]) -> list[str]:
    """The line an answer carries when the policy lets its unchecked bundles pass (exit 0)."""
    if not policy.accept_unchecked or not bundles:
        return []
    return [
        f"unchecked, accepted by the policy (accept_unchecked = true in {POLICY_FILE.name}): "
        f"{', '.join(bundles)}; exit 0 although part of what ships was not checked"
    ]
