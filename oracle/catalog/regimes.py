"""The probe regimes (`regimes.toml`): every probe the library runs, independent of fix records.

A fix names the constructs it touches; its regimes are those of its constructs. `sweep` runs all
regimes whatever the fix records say, so a change nobody wrote down still shows up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oracle.catalog.schema import DECOMPOSITIONS, SHAPES, VALUES, Fields
from oracle.compare.spec import Pipeline, ProbeSpec
from oracle.errors import OracleUserError
from oracle.infra.tomlfile import read_toml

REGIMES_FILE = Path(__file__).with_name("regimes.toml")


class RegimeError(OracleUserError):
    """The regimes file is malformed; one line naming the file and the problem."""


@dataclass(frozen=True)
class Regime:
    construct: str
    name: str
    spec: ProbeSpec
    control: bool
    tolerance: float | None

    @property
    def id(self) -> str:
        return f"{self.construct}/{self.name}"


_KEYS = (
    "construct",
    "name",
    "dtype",
    "params",
    "values",
    "seed",
    "control",
    "tolerance",
    "pipeline",
)
_PIPELINE = ("decompositions", "optimize", "shapes", "keep")


def load_regimes(path: Path = REGIMES_FILE) -> list[Regime]:
    """Every regime, each value checked (oracle.catalog.schema): an unknown construct or dtype, a
    value
    of the wrong type or a misspelt key is one line naming the regime and the key."""
    data = read_toml(path, RegimeError)
    fields = Fields(path, RegimeError)
    fields.keys(data, ("regime",), "the file")
    regimes: list[Regime] = []
    seen: set[str] = set()
    for where, raw in fields.tables(data, "regime"):
        fields.keys(raw, _KEYS, where)
        construct = fields.kind(raw, "construct", where)
        pipe = fields.table(raw, "pipeline", where)
        fields.keys(pipe, _PIPELINE, f"{where} pipeline")
        spec = ProbeSpec(
            construct=construct,
            params=dict(fields.table(raw, "params", where)),
            dtype=fields.dtype(raw, "dtype", where, "float32"),
            pipeline=Pipeline(
                fields.choice(
                    pipe, "decompositions", f"{where} pipeline", DECOMPOSITIONS, "coreai"
                ),
                fields.boolean(pipe, "optimize", f"{where} pipeline", True),
                fields.choice(pipe, "shapes", f"{where} pipeline", SHAPES, "static"),
                fields.aten_overloads(pipe, "keep", f"{where} pipeline"),
            ),
            values=fields.choice(raw, "values", where, VALUES, "trained"),
            seed=fields.integer(raw, "seed", where, 0, 0, 2**32 - 1),
        )
        regime = Regime(
            construct,
            fields.line(raw, "name", where),
            spec,
            fields.boolean(raw, "control", where, False),
            fields.number(raw, "tolerance", where, None, positive=True)
            if "tolerance" in raw
            else None,
        )
        if regime.id in seen:
            raise RegimeError(f"{path}: regime {regime.id} is defined twice")
        seen.add(regime.id)
        regimes.append(regime)
    return regimes


def for_constructs(regimes: list[Regime], constructs: tuple[str, ...]) -> list[Regime]:
    return [r for r in regimes if r.construct in constructs]
