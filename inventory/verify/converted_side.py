"""One release's conversion of a whole program (or of a cut of it): a side of the chain, as its
part was stored (`chain._Parts.conversions`: the program worker's answer, the converter and
packages that made it, the digest of its shipped program). `from_part` is the one checked read
of that stored record; `to_json` its form in `verify --json`'s `sides`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory.verify.decode import RecordError, field, mapping, number, optional

WHAT = "a converted side"

# the files a conversion writes (`program_worker.convert_program`), by the name a stage reads
FILES = ("emitted", "emitted_located", "shipped", "located", "nodes", "asset", "log")


@dataclass(frozen=True)
class ConvertedSide:
    converter: str
    ok: bool
    stage: str | None  # on failure: where it failed
    error: str | None
    files: dict[str, str]  # FILES -> its path; empty unless it converted
    emitted_is_optimized: bool  # the release's to_coreai() returned the optimized program
    shipped_digest: str | None  # its shipped program, normalised (None unless it converted)
    wall_seconds: float | None
    peak_mb: float | None
    packages: dict[str, str]
    evidence: str | None  # its stored folder; None: not stored (told, measured again)

    @classmethod
    def from_part(cls, value: object) -> ConvertedSide:
        record = mapping(value, WHAT)
        ok = field(record, "ok", bool, WHAT)
        files: dict[str, str] = {}
        if ok:
            stored = mapping(field(record, "files", dict, WHAT), f"{WHAT}'s files")
            files = {name: field(stored, name, str, f"{WHAT}'s files") for name in FILES}
        packages = mapping(field(record, "packages", dict, WHAT), f"{WHAT}'s packages")
        if not all(isinstance(v, str) for v in packages.values()):
            raise RecordError(f"{WHAT}: a package's version is not a string: {packages}")
        return cls(
            converter=field(record, "converter", str, WHAT),
            ok=ok,
            stage=None if ok else field(record, "stage", str, WHAT),
            error=None if ok else field(record, "error", str, WHAT),
            files=files,
            emitted_is_optimized=bool(optional(record, "emitted_is_optimized", bool, WHAT))
            if "emitted_is_optimized" in record
            else False,
            shipped_digest=optional(record, "shipped_digest", str, WHAT)
            if "shipped_digest" in record
            else None,
            wall_seconds=number(record, "wall_seconds", WHAT),
            peak_mb=number(record, "peak_mb", WHAT),
            packages=dict(packages),
            evidence=optional(record, "evidence", str, WHAT) if "evidence" in record else None,
        )

    @property
    def failure(self) -> str:
        """Where and why it did not convert, in one line."""
        return f"{self.stage}: {self.error}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "converter": self.converter,
            "ok": self.ok,
            "seconds": self.wall_seconds,
            "peak_mb": self.peak_mb,
            "packages": self.packages,
        }
        if not self.ok:
            out["error"] = self.failure
        return out


def sides_of(chain: dict[str, Any]) -> dict[str, ConvertedSide]:
    """The chain record's sides, by release (none where the check ended before converting)."""
    sides = chain.get("sides") or {}
    assert all(isinstance(s, ConvertedSide) for s in sides.values())  # built by chain.measure
    return dict(sides)
