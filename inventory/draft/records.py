"""A release step's observations grouped into drafted fix records.

With the converter's history (`--repo`), a change belongs to the commit bisection names for it:
one record per pull request (a commit without one: `commit-<sha>`), its title the merge
message's subject, its constructs those of the probes it changes. Without history, a change
belongs to its construct: one record per construct (`draft-<old>-<new>-<construct>`), said so.
Either way:

- a change the optimizer makes (a probe or region whose emitted programs are the same, or whose
  two shipped programs are of two stages) is a pipeline change: it joins the record of the
  coreai-core pin the step moves (`core-<release>`, with the pin commit's pull request), or one
  pipeline record of the step (`draft-<old>-<new>-pipeline`) when the pin does not move;
- an asset the new release's runtime refuses when the old release wrote it, and loads when the
  new one did, is an asset record (the pull request of the commit from which it loads, with
  history);
- a whole-program region joins the records naming one of its constructs; a region of the
  lowering stage no detector names cannot be drafted (a lowering record names constructs): it is
  listed in the draft's notes, with its aten targets, for a person to write.

Nothing here is a verdict: the columns are measured (`inventory.draft.columns`), the grouping is
the instruments' (bisection, stage), and every record says how it was grouped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from inventory.draft import columns
from inventory.draft.observe import Change, Observed
from inventory.gitrepo import Commit
from oracle.catalog import DEFAULT_KIND, LOWERING, OPTIMIZER, Asset, Lowering, Pipeline
from oracle.constructs import kinds as construct_kinds
from oracle.store import LoadCheck
from oracle.workers import asset_probe

DRAFTED = "drafted"
_SUBJECT_PR = re.compile(r"\s*\(#\d+\)\s*$")


@dataclass(frozen=True)
class Drafted:
    """One drafted record: the keys of a `[[fix]]` table and its `[fix.draft]` table."""

    id: str
    title: str
    ships_in: str
    kind: str
    upstream: str
    constructs: tuple[str, ...]
    touches: tuple[str, ...]
    step: str
    stage: str
    grouped_by: str
    reaches: str
    values: str
    conditions: tuple[str, ...]
    evidence: tuple[str, ...]
    prs: tuple[str, ...] = ()  # the pull requests it stands for (its id, when one)
    changes: tuple[Change, ...] = field(default=(), compare=False)

    def table(self) -> dict[str, Any]:
        """The record as a `[[fix]]` table of a fix database (what `--fixes` reads)."""
        out: dict[str, Any] = {"id": self.id, "title": self.title, "ships_in": self.ships_in}
        if self.kind != DEFAULT_KIND:
            out["kind"] = self.kind
        out["upstream"] = self.upstream
        if self.constructs:
            out["constructs"] = list(self.constructs)
        if self.touches:
            out["touches"] = list(self.touches)
        out["checked"] = DRAFTED
        out["draft"] = {
            "step": self.step,
            "stage": self.stage,
            "grouped_by": self.grouped_by,
            "reaches": self.reaches,
            "values": self.values,
            "conditions": list(self.conditions),
            "evidence": list(self.evidence),
        }
        return out


@dataclass(frozen=True)
class StepDraft:
    observed: Observed
    records: tuple[Drafted, ...]
    notes: tuple[str, ...]  # what the draft could not make a record of, or says of itself


@dataclass
class _Group:
    key: str
    kind: str
    commit: Commit | None = None
    constructs: list[str] = field(default_factory=list)
    changes: list[Change] = field(default_factory=list)
    regions: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def held(change: Change) -> tuple[str, ...]:
    """The constructs a change's probe holds: its own, or for the asset probe those it is built
    of (a lowering record naming one of them explains its change)."""
    construct = change.regime.construct
    return asset_probe.HOLDS if construct == asset_probe.CONSTRUCT else (construct,)


def _id(result: str) -> str:
    """A stored result by its id in the store (its folder's name): names no machine."""
    return result.rstrip("/").rsplit("/", 1)[-1] if result else ""


def _upstream(repo_url: str, pr: str | None) -> str:
    return f"{repo_url}/pull/{pr}" if repo_url and pr else ""


def group(observed: Observed, repo_url: str = "") -> StepDraft:
    """The step's records. `repo_url`: the repository's address on its forge (its pull
    requests are `<repo_url>/pull/N`), when known."""
    groups: dict[str, _Group] = {}
    notes: list[str] = []
    step = f"{observed.old}-{observed.new}"

    def get(key: str, kind: str, commit: Commit | None = None) -> _Group:
        return groups.setdefault(key, _Group(key, kind, commit))

    pipeline_key = "pin" if observed.pin else f"draft-{step}-pipeline"
    for change in observed.changes:
        if change.stage != LOWERING:
            get(pipeline_key, Pipeline.name).changes.append(change)
            continue
        targets: list[_Group] = []
        if observed.history and change.commits:
            for commit in dict.fromkeys(change.commits):
                targets.append(
                    get(
                        f"pr-{commit.pr}" if commit.pr else f"commit-{commit.short}",
                        Lowering.name,
                        commit,
                    )
                )
        else:
            target = get(f"construct-{held(change)[0]}", Lowering.name)
            if observed.history:
                target.notes.append(
                    f"{change.regime.id}: bisection named no commit "
                    f"({change.problem or 'not bisected'})"
                )
            targets.append(target)
        for g in targets:
            g.changes.append(change)
            g.constructs += [k for k in held(change) if k not in g.constructs]
    for bundle, region in observed.regions:
        _place_region(bundle, region, groups, get, pipeline_key, notes)
    if observed.asset is not None:
        search = observed.asset.search
        get("asset", Asset.name, search.commit if search is not None else None)
    if observed.pin is not None:
        get("pin", Pipeline.name, observed.pin.commit)
    records = [_record(g, observed, groups, repo_url) for g in _ordered(groups)]
    return StepDraft(observed, tuple(_unique(records)), tuple(notes))


def _place_region(
    bundle: str,
    region: dict[str, Any],
    groups: dict[str, _Group],
    get: Any,
    pipeline_key: str,
    notes: list[str],
) -> None:
    where = (
        f"{bundle} @{region['graph']} ({', '.join(region['modules'][:2]) or 'no module'}"
        f"{' ...' if region.get('module_count', 0) > 2 else ''})"
    )
    if region["stage"] == OPTIMIZER:
        get(pipeline_key, Pipeline.name).regions.append((bundle, region))
        return
    kinds = [
        k for k in (*region["constructs"], region.get("composite") or "") if k in construct_kinds()
    ]
    joined = [
        g for g in groups.values() if g.kind == Lowering.name and set(kinds) & set(g.constructs)
    ]
    if not joined and kinds:
        g = get(f"construct-{kinds[0]}", Lowering.name)
        g.constructs += [k for k in kinds if k not in g.constructs]
        g.notes.append(
            f"{where}: a {', '.join(kinds)} region changes in the whole program "
            "and no probe of it does"
        )
        joined = [g]
    if not joined:
        ops = ", ".join(region.get("ops", [])[:6]) or "no aten target located"
        notes.append(
            f"not drafted: {where}, lowering stage, {region['changed_lines']} changed "
            f"line(s), no construct detector names it (aten targets: {ops}; Core AI "
            f"ops: {', '.join(region.get('coreai_ops', [])[:6]) or 'none'}): a record "
            "naming it needs a construct, or `touches` written by hand"
        )
        return
    for g in joined:
        g.regions.append((bundle, region))


def _ordered(groups: dict[str, _Group]) -> list[_Group]:
    """Pipeline and asset records first (they concern every bundle exported before the step),
    then lowering records by pull request number, then by construct."""

    def key(g: _Group) -> tuple[int, int, str]:
        rank = {"pin": 0, "asset": 1}.get(g.key, 2 if g.kind == Pipeline.name else 3)
        pr = int(g.commit.pr) if g.commit and g.commit.pr else 10**9
        return rank, pr, g.key

    return sorted(groups.values(), key=key)


def _unique(records: list[Drafted]) -> list[Drafted]:
    """An id used twice (an asset change and a lowering change in one pull request's commit)
    keeps the first; the next takes its kind as a suffix."""
    seen: set[str] = set()
    out = []
    for r in records:
        if r.id in seen:
            r = Drafted(**{**r.__dict__, "id": f"{r.id}-{r.kind}"})
        seen.add(r.id)
        out.append(r)
    return out


def _record(g: _Group, observed: Observed, groups: dict[str, _Group], repo_url: str) -> Drafted:
    step = f"{observed.old}-{observed.new}"
    label = observed.label
    if g.kind == Asset.name:
        return _asset_record(g, observed, repo_url)
    if g.kind == Pipeline.name:
        return _pipeline_record(g, observed, repo_url)
    commit = g.commit
    if commit is not None:
        rid = commit.pr or f"commit-{commit.short}"
        title = _SUBJECT_PR.sub("", commit.subject) or commit.short
        grouped = (
            f"commit {commit.label()} of {observed.repo}, bisected: the commit that "
            f"changes each of its probes"
        )
    else:
        kind = g.key.removeprefix("construct-")
        rid = f"draft-{step}-{kind}"
        title = f"{kind} lowering changes in coreai-torch {observed.old} -> {observed.new}"
        grouped = f"construct {kind}, lowering stage: " + (
            "no commit named by bisection"
            if observed.history
            else "no history was available (no --repo): grouped by construct and stage, "
            "not by pull request"
        )
    others = {
        c.regime.id: ", ".join(f"#{p}" for p in c.prs) or "another commit"
        for other in groups.values()
        if other is not g
        for c in other.changes
    }
    conditions = columns.conditions(g.changes, g.constructs, observed, others) + tuple(g.notes)
    return Drafted(
        rid,
        title,
        observed.new,
        Lowering.name,
        _upstream(repo_url, commit.pr if commit else None),
        tuple(g.constructs),
        _touches(g),
        label,
        LOWERING,
        grouped,
        columns.reaches(g.changes, g.constructs, observed, g.regions),
        columns.values(g.changes),
        conditions,
        _evidence(g),
        (commit.pr,) if commit and commit.pr else (),
        tuple(g.changes),
    )


def _touches(g: _Group) -> tuple[str, ...]:
    """The aten targets of the record's whole-program regions that its constructs' detectors
    read (a region holding one is then explained by it, `inventory verify`'s rule c)."""
    from oracle.constructs import get

    read = {op for k in g.constructs for reader in get(k).readers for op in reader.ops}
    return tuple(sorted({op for _, r in g.regions for op in r.get("ops", []) if op in read}))


def _evidence(g: _Group) -> tuple[str, ...]:
    ids = [_id(c.outcome.result.evidence) for c in g.changes]
    ids += [_id(str(r.get("evidence") or "")) for _, r in g.regions]
    return tuple(i for i in dict.fromkeys(ids) if i)


def _pipeline_record(g: _Group, observed: Observed, repo_url: str) -> Drafted:
    step = f"{observed.old}-{observed.new}"
    pin = observed.pin
    commit = pin.commit if pin is not None and g.key == "pin" else None
    if pin is not None and g.key == "pin":
        rid = f"core-{pin.new}"
        title = f"coreai-core pin {pin.old} -> {pin.new}"
        if commit is not None:
            title += f" ({_SUBJECT_PR.sub('', commit.subject)})"
        grouped = f"the coreai-core pin: {pin.how}"
    else:
        rid = f"draft-{step}-pipeline"
        title = (
            f"what runs around the lowerings changes in coreai-torch {observed.old} -> "
            f"{observed.new} (optimizer-stage changes; the coreai-core pin does not move)"
        )
        grouped = "the optimizer stage, no coreai-core pin change: one record for the step"
    stages = sorted({c.stage for c in g.changes} | {r["stage"] for _, r in g.regions})
    conditions = [f"{c.regime.id}: {c.stage} ({c.outcome.verdict.verdict})" for c in g.changes]
    conditions += [
        f"{b} @{r['graph']}: {r['stage']} stage, {r['changed_lines']} line(s), "
        f"{', '.join(r.get('coreai_ops', [])[:4]) or 'no op'}"
        for b, r in g.regions
    ]
    if not g.changes and not g.regions:
        conditions.append("no probe or region of the step changes at the optimizer stage")
    return Drafted(
        rid,
        title,
        observed.new,
        Pipeline.name,
        _upstream(repo_url, commit.pr if commit else None),
        (),
        (),
        observed.label,
        ", ".join(stages) or OPTIMIZER,
        grouped,
        columns.reaches(g.changes, (), observed, g.regions),
        columns.values(g.changes),
        tuple(conditions),
        _evidence(g),
        (commit.pr,) if commit and commit.pr else (),
        tuple(g.changes),
    )


def _loads_line(check: LoadCheck) -> str:
    return ", ".join(
        f"{o.core} {o.outcome}" + (f" ({o.signal})" if o.signal else "") for o in check.outcomes
    )


def _asset_record(g: _Group, observed: Observed, repo_url: str) -> Drafted:
    change = observed.asset
    assert change is not None
    search = change.search
    commit = search.commit if search is not None else None
    step = f"{observed.old}-{observed.new}"
    if search is not None and commit is not None:
        rid = commit.pr or f"commit-{commit.short}"
        title = _SUBJECT_PR.sub("", commit.subject) or commit.short
        grouped = (
            f"commit {commit.label()} of {observed.repo}: the first whose asset probe "
            f"loads on coreai-core {change.core} (binary search over the step's "
            f"first-parent line, {len(search.tested)} check(s))"
        )
    else:
        rid = f"draft-{step}-asset"
        title = (
            f"Assets written by coreai-torch {observed.old} do not load on coreai-core "
            f"{change.core}; those of {observed.new} do"
        )
        why = (
            search.problem
            if search is not None and search.problem
            else "no history was available (no --repo)"
        )
        grouped = f"the load checks of the asset probe: {why}"
    conditions = [
        f"asset probe {a.spec.dtype}: written by {observed.old}: {_loads_line(a)}; "
        f"written by {observed.new}: {_loads_line(b)}"
        for a, b in change.checks
    ]
    errors = sorted({o.error for a, _ in change.checks for o in a.outcomes if o.error})
    conditions += [f"refused with: {e}" for e in errors[:2]]
    evidence = [_id(a.evidence) for a, _ in change.checks] + [
        _id(b.evidence) for _, b in change.checks
    ]
    if search is not None:
        evidence += [_id(e) for _, _, e in search.tested]
    return Drafted(
        rid,
        title,
        observed.new,
        Asset.name,
        _upstream(repo_url, commit.pr if commit else None),
        (),
        (),
        observed.label,
        "load",
        grouped,
        f"yes: the asset the old release writes does not load on coreai-core "
        f"{change.core}, the runtime {observed.new} pins",
        f"does not load: {observed.old}'s asset on {change.core}; loads: {observed.new}'s",
        tuple(conditions),
        tuple(i for i in dict.fromkeys(evidence) if i),
        (commit.pr,) if commit and commit.pr else (),
    )
