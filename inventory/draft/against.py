"""`draft --against FILE`: a draft's records beside a curated database's records of the same
release steps, record by record, and how well the draft finds them.

Records are matched by pull request (an id that is a number, an alias, or the pull request an
`upstream` address names) and kind; records without one (a pipeline change without a pull
request, a draft without history) by kind, step and construct. For each pair, what differs:
kind, constructs, and the measured columns (the curated record's are computed from the same
observations: the changes of its constructs in its step, those bisection credits to its pull
requests where the step was bisected). Precision and recall are given for pull requests and for
(pull request, construct) pairs (an asset or pipeline record's "construct" is its kind); and,
since a draft without history names no pull request, for (step, construct) pairs too.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from inventory.draft import columns
from inventory.draft.records import Drafted, StepDraft, held
from oracle.catalog import KINDS, LOWERING, Fix

_PULL = re.compile(r"/pull/(\d+)")


@dataclass(frozen=True)
class Score:
    """Precision and recall of a draft's set against the curated set."""

    drafted: tuple[str, ...]
    curated: tuple[str, ...]

    @property
    def found(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.drafted) & set(self.curated)))

    @property
    def precision(self) -> float | None:
        return len(self.found) / len(set(self.drafted)) if self.drafted else None

    @property
    def recall(self) -> float | None:
        return len(self.found) / len(set(self.curated)) if self.curated else None

    @property
    def extra(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.drafted) - set(self.curated)))

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.curated) - set(self.drafted)))


@dataclass(frozen=True)
class RecordDiff:
    status: str  # "same", "differs", "missing" (curated only), "extra" (drafted only)
    drafted: str | None  # the drafted record's id
    curated: str | None  # the curated record's id
    step: str
    details: tuple[str, ...]


@dataclass(frozen=True)
class Comparison:
    source: str  # the curated database
    diffs: tuple[RecordDiff, ...]
    prs: Score
    pairs: Score  # (pull request, construct or kind)
    constructs: Score  # (step, construct or kind)

    @property
    def differences(self) -> tuple[RecordDiff, ...]:
        return tuple(d for d in self.diffs if d.status != "same")


def prs_of(fix: Fix) -> tuple[str, ...]:
    """The pull requests a curated record stands for: its id (a number), its aliases, and the
    one its upstream address names."""
    out = [i for i in (fix.id, *fix.aliases) if i.isdigit()]
    out += _PULL.findall(fix.upstream)
    return tuple(dict.fromkeys(out))


def _drafted_prs(r: Drafted) -> tuple[str, ...]:
    return tuple(dict.fromkeys((*r.prs, *_PULL.findall(r.upstream))))


def _subjects(kind: str, constructs: Iterable[str]) -> tuple[str, ...]:
    """What a record is about, pairwise: its constructs (a kind that names them), else its
    kind."""
    return tuple(constructs) if KINDS[kind].names_constructs else (f"({kind})",)


def compare(steps: tuple[StepDraft, ...], curated: list[Fix], source: str) -> Comparison:
    diffs: list[RecordDiff] = []
    pr_d: list[str] = []
    pr_c: list[str] = []
    pair_d: list[str] = []
    pair_c: list[str] = []
    con_d: list[str] = []
    con_c: list[str] = []
    for sd in steps:
        o = sd.observed
        mine = [f for f in curated if f.ships_in == o.new]
        drafted = list(sd.records)
        for f in mine:
            pr_c += prs_of(f)
            pair_c += [f"#{p} {s}" for p in prs_of(f) for s in _subjects(f.kind, f.constructs)]
            con_c += [f"{o.label} {s}" for s in _subjects(f.kind, f.constructs)]
        for r in drafted:
            pr_d += _drafted_prs(r)
            pair_d += [
                f"#{p} {s}" for p in _drafted_prs(r) for s in _subjects(r.kind, r.constructs)
            ]
            con_d += [f"{o.label} {s}" for s in _subjects(r.kind, r.constructs)]
        unmatched = list(drafted)
        for f in mine:
            match = _match(f, unmatched)
            if match is None:
                diffs.append(RecordDiff("missing", None, f.id, o.label, (_missing_why(f, sd),)))
                continue
            unmatched.remove(match)
            details = _details(match, f, sd, drafted)
            diffs.append(
                RecordDiff("differs" if details else "same", match.id, f.id, o.label, details)
            )
        for r in unmatched:
            diffs.append(
                RecordDiff(
                    "extra",
                    r.id,
                    None,
                    o.label,
                    (
                        f"{r.kind} record of {', '.join(r.constructs) or r.kind}:"
                        f" {r.grouped_by}; reaches {r.reaches}",
                    ),
                )
            )
    return Comparison(
        source,
        tuple(diffs),
        Score(tuple(pr_d), tuple(pr_c)),
        Score(tuple(pair_d), tuple(pair_c)),
        Score(tuple(con_d), tuple(con_c)),
    )


def _match(f: Fix, drafted: list[Drafted]) -> Drafted | None:
    """The drafted record of the same kind that shares a pull request with `f`; without pull
    requests on either side, the one of the same kind sharing a construct (or, for an asset or
    pipeline record, the one of its kind)."""
    same = [r for r in drafted if r.kind == f.kind]
    mine = set(prs_of(f))
    by_pr = [r for r in same if mine & set(_drafted_prs(r))]
    if by_pr:
        return by_pr[0]
    loose = [r for r in same if not _drafted_prs(r) or not mine]
    if not f.record_kind.names_constructs:
        return loose[0] if loose else None
    shared = [r for r in loose if set(r.constructs) & set(f.constructs)]
    return max(shared, key=lambda r: len(set(r.constructs) & set(f.constructs)), default=None)


def _changes_of(f: Fix, sd: StepDraft) -> list:
    """The step's changes a curated lowering record's constructs hold, narrowed to its pull
    requests where bisection named commits (as attribution reads a bisected step)."""
    prs = set(prs_of(f))
    out = []
    for c in sd.observed.changes:
        if not set(held(c)) & set(f.constructs) or c.stage != LOWERING:
            continue
        if sd.observed.history and c.commits and not prs & set(c.prs):
            continue
        out.append(c)
    return out


def _details(r: Drafted, f: Fix, sd: StepDraft, drafted: list[Drafted]) -> tuple[str, ...]:
    out = []
    if r.kind != f.kind:
        out.append(f"kind: drafted {r.kind}, curated {f.kind}")
    extra = [k for k in r.constructs if k not in f.constructs]
    missing = [k for k in f.constructs if k not in r.constructs]
    if extra:
        out.append(f"constructs only the draft names: {', '.join(extra)}")
    if missing:
        mine = _changes_of(f, sd)
        said = [k for k in missing if not any(k in held(c) for c in mine)]
        why = (
            f" (no change of {', '.join(said)} in {sd.observed.label} is credited to "
            f"{f.label}{' by bisection' if sd.observed.history else ''})"
            if said
            else ""
        )
        out.append(f"constructs only the curated record names: {', '.join(missing)}{why}")
    aliases = [a for a in f.aliases if any(a in d.prs for d in drafted if d is not r)]
    if aliases:
        out.append(
            f"the curated record holds #{', #'.join(aliases)} as aliases; the draft has "
            "a record of each"
        )
    if f.record_kind.names_constructs:
        mine = _changes_of(f, sd)
        values = columns.values(mine)
        if values != r.values:
            out.append(
                f"values: drafted '{r.values}'; the curated record's constructs in its "
                f"step: '{values}'"
            )
        reaches = columns.reaches(mine, f.constructs, sd.observed)
        drafted_reach = columns.reaches(r.changes, f.constructs, sd.observed)
        if reaches != drafted_reach:
            out.append(
                f"reaches (over the curated constructs): drafted '{drafted_reach}'; "
                f"curated '{reaches}'"
            )
    return tuple(out)


def _missing_why(f: Fix, sd: StepDraft) -> str:
    if not f.record_kind.names_constructs:
        return f"a {f.kind} record the draft has none of"
    mine = _changes_of(f, sd)
    if not mine:
        return (
            f"no probe of {', '.join(f.constructs)} changes in {sd.observed.label}"
            + (
                f" at a commit of {', '.join('#' + p for p in prs_of(f))}"
                if sd.observed.history
                else ""
            )
            + ": the instruments see nothing to draft"
        )
    return f"{len(mine)} change(s) of its constructs are drafted under other records"
