"""One asset run on one runtime, on a build's (or a cut's) seeded inputs (`chain._Parts.run`:
`whole.run`'s record, stored when it may repeat). `from_part` is its one checked read."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from inventory.verify.decode import RecordError, field, mapping, number, optional

WHAT = "a runtime's run"


@dataclass(frozen=True)
class RuntimeRun:
    ok: bool
    runtime: str
    stage: str | None  # on failure: where ("worker": it died; "flaky": no lasting answer)
    error: str | None
    outputs_file: Path | None  # what it returned (None unless it ran)
    outputs: tuple[str, ...]  # the asset's output names, in order
    seconds: float | None
    evidence: str | None  # its stored folder; None: not stored

    @classmethod
    def from_part(cls, value: object) -> RuntimeRun:
        record = mapping(value, WHAT)
        ok = field(record, "ok", bool, WHAT)
        outputs: list[object] = field(record, "outputs", list, WHAT) if ok else []
        if not all(isinstance(o, str) for o in outputs):
            raise RecordError(f"{WHAT}: an output name is not a string: {outputs}")
        return cls(
            ok=ok,
            runtime=field(record, "runtime", str, WHAT),
            stage=None if ok else field(record, "stage", str, WHAT),
            error=None if ok else field(record, "error", str, WHAT),
            outputs_file=Path(field(record, "outputs_file", str, WHAT)) if ok else None,
            outputs=tuple(str(o) for o in outputs),
            seconds=number(record, "seconds", WHAT),
            evidence=optional(record, "evidence", str, WHAT) if "evidence" in record else None,
        )

    @property
    def failure(self) -> str:
        return f"{self.stage}: {self.error}"


def runs_of(measurement: dict[str, Any]) -> dict[str, RuntimeRun]:
    """A model-level measurement's runs, by release (none where it did not run them all)."""
    runs = measurement.get("runs") or {}
    assert all(isinstance(r, RuntimeRun) for r in runs.values())  # made by chain._Parts.run
    return dict(runs)
