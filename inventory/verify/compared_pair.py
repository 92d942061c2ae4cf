"""Two sides of the chain compared (`chain._Parts.pair`): a release step, or the exporter against
the target. Each stage (emitted, shipped) is identical, differs (in how many lines, with a diff),
cannot be compared because a side does not convert, or is not comparable. `from_part` is the one
checked read of the stored comparison; `StageCompared.to_json` is a stage as it is stored and
`summary` its form in `verify --json` (no normalised texts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from inventory.verify.decode import field, mapping, optional

WHAT = "a compared pair"

DIFFERS = "differs"
IDENTICAL = "identical"
CANNOT_CONVERT = "cannot-convert"


@dataclass(frozen=True)
class StageCompared:
    identity: str  # identical, differs, cannot-convert, not-comparable
    changed_lines: int | None = None
    normalised: dict[str, str] | None = None  # "old" / "new" -> its normalised text's path
    diff: str | None = None  # where the diff is kept (only when it differs)

    @classmethod
    def from_json(cls, value: object, what: str) -> StageCompared:
        record = mapping(value, what)
        identity = field(record, "identity", str, what)
        normalised = None
        if identity in (IDENTICAL, DIFFERS):  # both texts were compared and are kept
            texts = mapping(field(record, "normalised", dict, what), f"{what}'s normalised")
            normalised = {s: field(texts, s, str, f"{what}'s normalised") for s in ("old", "new")}
        return cls(
            identity=identity,
            changed_lines=optional(record, "changed_lines", int, what)
            if "changed_lines" in record
            else None,
            normalised=normalised,
            diff=optional(record, "diff", str, what) if "diff" in record else None,
        )

    def summary(self) -> dict[str, Any]:
        """Its identity, changed lines and diff, as `verify --json` gives a stage."""
        out: dict[str, Any] = {"identity": self.identity}
        if self.changed_lines is not None:
            out["changed_lines"] = self.changed_lines
        if self.diff is not None:
            out["diff"] = self.diff
        return out

    def to_json(self) -> dict[str, Any]:
        """As `whole.compared` stores it."""
        head = {} if self.normalised is None else {"normalised": dict(self.normalised)}
        return {**head, **self.summary()}


@dataclass(frozen=True)
class ComparedPair:
    old: str  # the older release ("from")
    new: str  # the newer ("to")
    emitted: StageCompared
    shipped: StageCompared
    evidence: str | None  # its stored folder; None: not stored

    @property
    def label(self) -> str:
        return f"{self.old}->{self.new}"

    @property
    def differs(self) -> bool:
        """Its shipped programs differ: what makes the chain run."""
        return self.shipped.identity == DIFFERS

    def stage(self, name: str) -> StageCompared:
        if name == "emitted":
            return self.emitted
        if name == "shipped":
            return self.shipped
        raise ValueError(f"no stage {name!r}")

    @classmethod
    def from_part(cls, value: object, old: str, new: str) -> ComparedPair:
        record = mapping(value, WHAT)
        return cls(
            old=old,
            new=new,
            emitted=StageCompared.from_json(
                field(record, "emitted", dict, WHAT), f"{WHAT}'s emitted"
            ),
            shipped=StageCompared.from_json(
                field(record, "shipped", dict, WHAT), f"{WHAT}'s shipped"
            ),
            evidence=optional(record, "evidence", str, WHAT) if "evidence" in record else None,
        )

    def to_json(self) -> dict[str, Any]:
        """Its stages as stored, its evidence (the run form's pairs keep this form)."""
        return {
            "emitted": self.emitted.to_json(),
            "shipped": self.shipped.to_json(),
            "evidence": self.evidence,
        }


def pairs_of(chain: dict[str, Any]) -> tuple[list[ComparedPair], ComparedPair | None]:
    """The chain record's steps and its exporter-to-target pair (None: the check ended before
    comparing)."""
    steps, overall = chain.get("steps") or [], chain.get("overall")
    assert all(isinstance(s, ComparedPair) for s in steps)  # built by chain.measure
    assert overall is None or isinstance(overall, ComparedPair)
    return list(steps), overall
