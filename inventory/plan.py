"""`inventory plan --to V`: for each bundle, every fix between its exporter and V, answered."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from inventory.affected import Analyzer, BundleAnswer
from inventory.errors import InputFileError, UsageError
from inventory.ignore import Ignore, in_force, matching, unmatched
from inventory.loads import LoadAnswer, load_answer_record
from inventory.policy import Policy
from inventory.registry import Bundle, exporter_release
from inventory.verdict import IGNORED, Reexport, Verdict, rank, worst
from oracle.envs import Catalog, version_key
from oracle.fixes import Fix, between
from oracle.session import Session

# A plan level and its key in the JSON record, in the record's order.
LEVEL_KEYS = ((Reexport.REQUIRED, "required"), (Reexport.INCONCLUSIVE, "inconclusive"),
              (Reexport.OPTIONAL, "optional"), (Reexport.NO, "not_affected"),
              (IGNORED, "ignored"))


@dataclass(frozen=True)
class PlanItem:
    fix: Fix
    answer: BundleAnswer
    ignored: Ignore | None = None

    @property
    def level(self) -> str:
        return IGNORED if self.ignored else self.answer.reexport

    @property
    def load_failure(self) -> bool:
        """Forced by a runtime refusing the shipped asset: nothing runs, so it comes first."""
        return self.answer.load is not None and self.answer.verdict == Verdict.DOES_NOT_LOAD


@dataclass(frozen=True)
class BundlePlan:
    bundle: str
    exporter: str
    exporter_assumed: bool
    items: tuple[PlanItem, ...]
    # Question 2 for the bundle, whatever the records in range: does its asset load where it
    # ships? An asset record in range carries the same answer as a plan item.
    load: LoadAnswer | None = None

    def by_level(self, level: str) -> tuple[PlanItem, ...]:
        return tuple(i for i in self.items if i.level == level)

    @property
    def load_explained_by(self) -> tuple[str, ...]:
        return tuple(i.fix.id for i in self.items if i.answer.load is not None)

    @property
    def reexport(self) -> Reexport:
        levels = [i.level for i in self.items if i.level != IGNORED]
        if self.load is not None and not self.load_explained_by:
            # A refusal no asset record in range explains still forces a re-export.
            levels.append(self.load.reexport)
        return worst(levels)


@dataclass(frozen=True)
class Plan:
    to: str
    bundles: tuple[BundlePlan, ...]
    warnings: tuple[str, ...]
    baseline: str | None = None  # the baseline file, when only changes since it are kept

    @property
    def reexport(self) -> Reexport:
        return worst(b.reexport for b in self.bundles)


def plan(to: str, bundles: list[Bundle], fixes: list[Fix], catalog: Catalog, policy: Policy,
         ignores: list[Ignore] | None = None, use_cache: bool = True,
         progress: Callable[[str], None] = lambda _: None,
         runtimes: tuple[str, ...] | None = None) -> Plan:
    catalog.release(to)
    active, warnings = in_force(ignores or [])
    seen: set[tuple[str, str]] = set()
    out = []
    with Session(catalog, progress) as session:
        analyzer = Analyzer(session, policy, use_cache, runtimes=runtimes)
        for bundle in bundles:
            exporter, assumed = exporter_release(bundle.exporter, catalog)
            load = analyzer.load_answer(bundle, to)
            items = []
            for fix in between(fixes, exporter, to):
                progress(f"{bundle.name}: fix {fix.label}")
                answer = analyzer.answer(bundle, fix, to)
                ids = {fix.id, *fix.aliases}
                ignored = matching(active, ids, bundle.name)
                seen.update((i, bundle.name) for i in ids)
                items.append(PlanItem(fix, answer, ignored))
            # Correctness first: what forces a re-export (an asset a runtime refuses before
            # anything else), then what cannot be decided.
            items.sort(key=lambda i: (rank(i.level), not i.load_failure,
                                      version_key(i.fix.ships_in)))
            out.append(BundlePlan(bundle.name, exporter, assumed, tuple(items), load))
    warnings += unmatched(active, seen)
    return Plan(to, tuple(out), tuple(warnings))


def plan_record(p: Plan) -> dict:
    """The stable JSON shape of a plan (also what --baseline reads back)."""
    def item(i: PlanItem) -> dict:
        evidence = [pr.result.evidence for pr in i.answer.probes if pr.result]
        if i.answer.load is not None:
            evidence += list(i.answer.load.evidence)
        entry = {"fix": i.fix.id, "kind": i.fix.kind, "title": i.fix.title,
                 "verdict": i.answer.verdict, "reason": i.answer.reason,
                 "chain": list(i.answer.chain),
                 "runtime": "; ".join(i.answer.runtimes) or None,
                 "remedies": list(i.answer.remedies), "evidence": evidence}
        if i.ignored:
            entry["ignored"] = {"reason": i.ignored.reason,
                                "expires": i.ignored.expires.isoformat()
                                if i.ignored.expires else None}
        return entry

    return {
        "to": p.to,
        "reexport": p.reexport,
        "baseline": p.baseline,
        "bundles": [{
            "bundle": b.bundle,
            "exporter": b.exporter,
            "exporter_assumed": b.exporter_assumed,
            "reexport": b.reexport,
            "deployment": b.load.deployment.to_json() if b.load else None,
            "load": load_answer_record(b.load),
            "load_explained_by": list(b.load_explained_by),
            **{key: [item(i) for i in b.by_level(level)] for level, key in LEVEL_KEYS},
        } for b in p.bundles],
    }


def since_baseline(p: Plan, baseline: Path) -> Plan:
    """Keep only the (bundle, fix) answers whose level differs from a previous plan's JSON."""
    try:
        data = json.loads(baseline.read_text())
    except OSError as exc:
        raise InputFileError(f"{baseline}: cannot read: {exc.strerror}") from None
    except ValueError as exc:
        raise InputFileError(f"{baseline}: not a plan JSON ({exc})") from None
    data = data.get("result", data)
    if "bundles" not in data:
        raise UsageError(f"{baseline}: not a plan JSON (no 'bundles')")
    before: dict[tuple[str, str], str] = {}
    for b in data["bundles"]:
        for level, key in LEVEL_KEYS:
            for entry in b.get(key, []):
                before[(b["bundle"], str(entry["fix"]))] = level
    kept = []
    for b in p.bundles:
        items = tuple(i for i in b.items if before.get((b.bundle, i.fix.id)) != i.level)
        kept.append(BundlePlan(b.bundle, b.exporter, b.exporter_assumed, items, b.load))
    return Plan(p.to, tuple(kept), p.warnings, str(baseline))
