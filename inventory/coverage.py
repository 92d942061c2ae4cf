"""What an answer rests on, per bundle: each op kind of the bundle's traced program is covered by
a construct probe at this bundle's instances, by a stored whole-program check of the steps the
answer spans, or by nothing.

The program's ops are the census `inventory trace NAME --write` records with the registry entry
(`[bundles.X.trace.facts.ops]`, `inventory.trace.facts`); a bundle whose entry was traced before
the census was kept has none, and its coverage says so ("ops not counted") and names the trace
that counts them. The op kinds a probe covers are read from the probe's own exported graph, the
`aten.txt` its stored result keeps beside the programs: never a hand list. An op kind counts as
probed when the exported graph of a probe at one of the bundle's instances holds it (all of its
count: a kind-level answer, said so in the docs); a whole-program check of every step covers
every op. The stand-in asset probe is at none of the bundle's instances and covers nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PROBED, WHOLE, NOT_COVERED = "probed", "whole-program", "not covered"
# an operator node of an exported graph as `str(ep.graph)` prints it (aten.txt)
_CALL = re.compile(r"call_function\[target=torch\.ops\.([\w.]+)\]")
# uncovered op kinds a line names, largest count first
TOP = 3


@dataclass(frozen=True)
class Coverage:
    """One bundle's ops over the steps an answer spans, in three classes, {op kind: count}."""

    census: dict[str, int] | None  # None: the registry records no op census for the bundle
    probed: dict[str, int]
    whole: dict[str, int]
    not_covered: dict[str, int]
    steps: tuple[str, ...]  # the release steps the answer spans ("0.4.0->0.4.1")
    command: str  # the one command that covers what is not covered (or counts the ops)
    # a stored whole-program check holds every step: every op is covered, counted or not
    checked_whole: bool = False

    @property
    def total(self) -> int:
        return sum(self.census.values()) if self.census is not None else 0

    @property
    def complete(self) -> bool:
        """Every op probed or checked whole (without a census: only a whole-program check
        says so)."""
        if self.census is None:
            return self.checked_whole
        return not self.not_covered

    def share(self, part: dict[str, int]) -> float:
        return sum(part.values()) / self.total if self.total else 0.0

    def uncovered_top(self) -> list[tuple[str, int]]:
        return sorted(self.not_covered.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]

    def cell(self) -> str:
        """The table's cell: `41% probed, 0% whole, 59% not covered of 2661 ops`."""
        if self.census is None:
            return "ops not counted, all checked whole" if self.checked_whole else "ops not counted"
        return (
            f"{self.share(self.probed):.0%} probed, {self.share(self.whole):.0%} whole, "
            f"{self.share(self.not_covered):.0%} not covered of {self.total} ops"
        )

    def line(self, bundle: str) -> str:
        """The sentence under the table: the uncovered kinds (top by count) and the command."""
        if self.census is None and self.checked_whole:
            return f"{bundle}: coverage: every op checked whole (its ops not counted)"
        if self.census is None:
            return (
                f"{bundle}: coverage: the registry records no op census for it; "
                f"`{self.command}` counts its ops"
            )
        if not self.not_covered:
            return f"{bundle}: coverage: every op probed or checked whole ({self.cell()})"
        kinds = ", ".join(f"{short(k)} x{n}" for k, n in self.uncovered_top())
        more = len(self.not_covered) - TOP
        return (
            f"{bundle}: coverage: {self.cell()}; not covered: {kinds}"
            f"{f' and {more} more kind(s)' if more > 0 else ''}; `{self.command}` checks them"
        )

    @classmethod
    def from_json(cls, record: dict[str, Any]) -> Coverage:
        """A record `to_json` wrote (the formats that render from the JSON document)."""
        classes = record.get("classes") or {}
        probed, whole, rest = (dict(classes.get(k) or {}) for k in (PROBED, WHOLE, NOT_COVERED))
        census = {**probed, **whole, **rest} if record.get("counted") else None
        steps = tuple(record.get("steps") or ())
        checked = bool(record.get("checked_whole"))
        return cls(census, probed, whole, rest, steps, str(record.get("command")), checked)

    def to_json(self) -> dict[str, Any]:
        return {
            "counted": self.census is not None,
            "ops": self.total if self.census is not None else None,
            "steps": list(self.steps),
            "classes": {PROBED: self.probed, WHOLE: self.whole, NOT_COVERED: self.not_covered},
            "complete": self.complete,
            "checked_whole": self.checked_whole,
            "command": self.command,
        }


def coverage_cell(c: Coverage | None) -> str:
    """A table's cell: "-" where no step is compared."""
    return c.cell() if c is not None else "-"


def short(kind: str) -> str:
    """`aten.mm.default` as `mm`, `aten.add.Tensor` as `add.Tensor`."""
    ns, _, rest = kind.partition(".")
    name, _, overload = rest.partition(".")
    if ns != "aten":
        return kind
    return name if overload in ("", "default") else f"{name}.{overload}"


def census(trace: dict[str, Any]) -> dict[str, int] | None:
    """The op census a trace recorded (`[bundles.X.trace.facts.ops]`), or None."""
    ops = trace.get("facts", {}).get("ops")
    if not isinstance(ops, dict):
        return None
    return {str(k): int(v) for k, v in ops.items() if isinstance(v, int)}


def graph_ops(aten: Path) -> set[str]:
    """The operator kinds of one exported graph (`aten.txt`), as the census names them."""
    try:
        text = aten.read_text()
    except OSError:
        return set()
    return set(_CALL.findall(text))


def coverage(
    trace: dict[str, Any],
    probed_kinds: set[str],
    whole: bool,
    steps: tuple[str, ...],
    command: str,
    count_command: str,
) -> Coverage:
    """The bundle's census split three ways. `whole`: a stored whole-program check holds every
    step in `steps`; `command`: what covers the rest; `count_command`: the trace that records
    the census when there is none."""
    ops = census(trace)
    if ops is None:
        return Coverage(None, {}, {}, {}, steps, count_command, whole)
    probed = {k: n for k, n in ops.items() if k in probed_kinds}
    rest = {k: n for k, n in ops.items() if k not in probed_kinds}
    if whole:
        return Coverage(ops, probed, rest, {}, steps, command, True)
    return Coverage(ops, probed, {}, rest, steps, command)
