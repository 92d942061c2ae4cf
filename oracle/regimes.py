"""The probe regimes (`regimes.toml`): every probe the library runs, independent of fix records.

A fix names the constructs it touches; its regimes are those of its constructs. `sweep` runs all
regimes whatever the fix records say, so a change nobody wrote down still shows up.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oracle.spec import Pipeline, ProbeSpec
from oracle.tomlfile import read_toml

REGIMES_FILE = Path(__file__).with_name("regimes.toml")


class RegimeError(Exception):
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


def load_regimes(path: Path = REGIMES_FILE) -> list[Regime]:
    data = read_toml(path, RegimeError)
    regimes: list[Regime] = []
    seen: set[str] = set()
    for i, raw in enumerate(data.get("regime", []), start=1):
        try:
            pipe = raw.get("pipeline", {})
            spec = ProbeSpec(
                construct=raw["construct"],
                params=dict(raw.get("params", {})),
                dtype=raw.get("dtype", "float32"),
                pipeline=Pipeline(pipe.get("decompositions", "coreai"),
                                  bool(pipe.get("optimize", True)),
                                  pipe.get("shapes", "static")),
                values=raw.get("values", "trained"),
                seed=int(raw.get("seed", 0)),
            )
            regime = Regime(raw["construct"], raw["name"], spec, bool(raw.get("control", False)),
                            float(raw["tolerance"]) if "tolerance" in raw else None)
        except (KeyError, TypeError, ValueError) as exc:
            raise RegimeError(f"{path}: regime {i} is malformed ({exc})") from None
        if regime.id in seen:
            raise RegimeError(f"{path}: regime {regime.id} is defined twice")
        seen.add(regime.id)
        regimes.append(regime)
    return regimes


def for_constructs(regimes: list[Regime], constructs: tuple[str, ...]) -> list[Regime]:
    return [r for r in regimes if r.construct in constructs]
