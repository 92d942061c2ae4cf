"""Question 2 of a re-export decision: does the asset a bundle ships load where it ships?

Answered from load checks (`oracle/load_check.py`): the asset the bundle's exporter release
writes for a probe shaped like the bundle, loaded and run on each deployment runtime, with the
asset the target release writes as the control. A runtime that refuses the shipped asset forces
a re-export (nothing runs), and the answer names both remedies: re-export with a release whose
assets load, or, when what the runtime refused are debug locations, `inventory repair`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from inventory.deployment import Deployment
from inventory.registry import UNKNOWN, Bundle
from inventory.shell_commands import repair_command, scan_command
from inventory.verdict import Reexport, Verdict
from oracle.catalog import Catalog, version_key
from oracle.store import LoadCheck, RuntimeOutcome
from oracle.workers import LABEL

# What `inventory repair` rewrites: a runtime refusing an asset's locations is what it repairs.
REPAIRABLE = "versioned location"


@dataclass(frozen=True)
class LoadFinding:
    """One release's asset on the deployment runtimes."""

    release: str
    check: LoadCheck
    cores: tuple[str, ...]

    def outcomes(self) -> tuple[RuntimeOutcome, ...]:
        found = (self.check.on(c) for c in self.cores)
        return tuple(o for o in found if o is not None)

    def failing(self) -> tuple[RuntimeOutcome, ...]:
        return tuple(o for o in self.outcomes() if o.outcome in ("fails-to-load", "crashes"))

    @property
    def status(self) -> str:
        """loads | does-not-load | unknown (a runtime could not be tried)."""
        if self.failing():
            return "does-not-load"
        outcomes = self.outcomes()
        if len(outcomes) == len(self.cores) and all(o.loads for o in outcomes):
            return "loads"
        return "unknown"

    def summary(self) -> str:
        """`loads on coreai-core 1.0.0b2, 1.0.0b3` or what failed, grouped by message."""
        if self.status == "loads":
            return f"loads on coreai-core {', '.join(self.cores)}"
        if self.status == "unknown":
            missing = [o for o in self.outcomes() if not o.loads]
            what = "; ".join(f"coreai-core {o.core}: {o.describe()}" for o in missing)
            return f"could not be checked ({what or 'no outcome'})"
        groups: dict[str, list[str]] = {}
        for o in self.failing():
            groups.setdefault(o.describe(), []).append(o.core)
        return "does not load on " + "; ".join(
            f"coreai-core {', '.join(cs)}: {why}" for why, cs in groups.items()
        )


@dataclass(frozen=True)
class LoadAnswer:
    """The bundle-level answer to question 2."""

    verdict: Verdict  # loads | does-not-load | depends-on-exporter | inconclusive
    reexport: Reexport  # no | required | inconclusive
    reason: str
    deployment: Deployment
    findings: tuple[LoadFinding, ...]  # the exporter's (or each candidate's), then controls
    remedies: tuple[str, ...] = ()
    # unknown exporter: (releases, re-export if the bundle was exported with one of them, why)
    by_exporter: tuple[tuple[tuple[str, ...], Reexport, str], ...] = field(default=())

    @property
    def evidence(self) -> tuple[str, ...]:
        return tuple(f.check.evidence for f in self.findings)


Checker = Callable[[str], LoadCheck]


def remedies(bundle: Bundle, failing: LoadFinding, fixed: list[LoadFinding]) -> tuple[str, ...]:
    """Re-export with the first release whose asset loads everywhere it must (measured), and the
    in-place repair when what the runtime refused are debug locations."""
    out = []
    if fixed:
        measured = " and ".join(f.release for f in fixed)
        out.append(
            f"re-export with coreai-torch {fixed[0].release} or later (measured here: "
            f"what coreai-torch {measured} write{'s' if len(fixed) == 1 else ''} loads "
            f"on coreai-core {', '.join(fixed[0].cores)})"
        )
    if any(REPAIRABLE in o.error for o in failing.failing()):
        out.append(
            f"or repair the shipped asset in place, without re-exporting: "
            f"`{repair_command(bundle.files)}` (in the folder that holds the shipped "
            "bundles) rewrites its debug locations and verifies the result (loads on "
            "every runtime in the catalog, weights byte-identical, outputs bit-identical "
            "on the exporter's own runtime)"
        )
    return tuple(out)


def _later(catalog: Catalog, after: str, upto: str) -> list[str]:
    return sorted(
        (v for v in catalog.releases if version_key(after) < version_key(v) <= version_key(upto)),
        key=version_key,
    )


def answer_load(
    bundle: Bundle, deployment: Deployment, target: str, catalog: Catalog, check: Checker
) -> LoadAnswer:
    """Does the bundle's shipped asset load on its deployment runtimes?"""
    cores = deployment.cores

    def finding(release: str) -> LoadFinding:
        return LoadFinding(release, check(release), cores)

    if bundle.exporter.converter == UNKNOWN:
        return _unknown_exporter(bundle, deployment, target, catalog, finding)
    exporter = bundle.exporter.converter
    own = finding(exporter)
    what = (
        f"(measured with the asset coreai-torch {exporter} writes for a probe shaped like "
        f"the bundle: {LABEL}, {bundle.dtype})"
    )
    reason = f"its asset {own.summary()} {what}"
    if own.status == "loads":
        return LoadAnswer(Verdict.LOADS, Reexport.NO, reason, deployment, (own,))
    if own.status == "unknown":
        return LoadAnswer(Verdict.INCONCLUSIVE, Reexport.INCONCLUSIVE, reason, deployment, (own,))
    controls = [finding(r) for r in _later(catalog, exporter, target)]
    fixed = [f for f in controls if f.status == "loads"]
    if not controls or controls[-1].status != "loads":
        last = controls[-1] if controls else own
        why = (
            f"; a coreai-torch {last.release} asset {last.summary()} too: re-exporting "
            f"with {target} does not help"
            if controls
            else ""
        )
        return LoadAnswer(
            Verdict.INCONCLUSIVE, Reexport.INCONCLUSIVE, reason + why, deployment, (own, *controls)
        )
    return LoadAnswer(
        Verdict.DOES_NOT_LOAD,
        Reexport.REQUIRED,
        reason,
        deployment,
        (own, *controls),
        remedies(bundle, own, fixed),
    )


def _unknown_exporter(
    bundle: Bundle,
    deployment: Deployment,
    target: str,
    catalog: Catalog,
    finding: Callable[[str], LoadFinding],
) -> LoadAnswer:
    """Every release the bundle could have been exported with, measured: the answer is
    conditional on the exporter, and says how to find it out."""
    candidates = sorted(
        (v for v in catalog.releases if version_key(v) <= version_key(target)), key=version_key
    )
    found = [finding(r) for r in candidates]
    groups: dict[str, list[LoadFinding]] = {}
    for f in found:
        groups.setdefault(f.status, []).append(f)
    if set(groups) == {"loads"}:
        return LoadAnswer(
            Verdict.LOADS,
            Reexport.NO,
            f"exporter not recorded; an asset of every release up to {target} {found[0].summary()}",
            deployment,
            tuple(found),
        )
    fixed = groups.get("loads", [])
    by_exporter = []
    parts = []
    level = {
        "does-not-load": Reexport.REQUIRED,
        "loads": Reexport.NO,
        "unknown": Reexport.INCONCLUSIVE,
    }
    for status in ("does-not-load", "unknown", "loads"):
        members = groups.get(status, [])
        if not members:
            continue
        releases = tuple(f.release for f in members)
        why = members[0].summary()
        by_exporter.append((releases, level[status], why))
        parts.append(
            f"{level[status]} if it was exported with coreai-torch "
            f"{' or '.join(releases)} (such an asset {why})"
        )
    no_producer = [
        f.release
        for f in found
        if catalog.releases[f.release].core == catalog.releases[candidates[0]].core
    ]
    decide = (
        f"to decide, `{scan_command(bundle.files)}`: a metadata.json without "
        f"`producer` means coreai-torch {' or '.join(no_producer)} (it stamps none), "
        "and the producer's core names the others; then record the exporter in the "
        "registry"
    )
    reason = "exporter not recorded: " + "; ".join(parts) + "; " + decide
    failing = groups.get("does-not-load", [])
    rem = remedies(bundle, failing[0], fixed) if failing else ()
    return LoadAnswer(
        Verdict.DEPENDS_ON_EXPORTER,
        Reexport.INCONCLUSIVE,
        reason,
        deployment,
        tuple(found),
        rem,
        tuple(by_exporter),
    )


# ---- the JSON form (shared by `affected`, `plan` and the renderers) ---------------------------


def load_finding_record(f: LoadFinding) -> dict[str, Any]:
    """One release's asset on the deployment runtimes, per runtime, with its evidence."""
    c = f.check
    return {
        "exporter": f.release,
        "status": f.status,
        "summary": f.summary(),
        "probe": c.spec.to_json(),
        "exporter_packages": c.exporter_packages,
        "converted": c.converted,
        "convert_error": c.convert_error or None,
        "outcomes": [
            {
                "core": o.core,
                "runtime": o.runtime,
                "outcome": o.outcome,
                "stage": o.stage or None,
                "error": o.error or None,
                "signal": o.signal or None,
                "deployment": o.core in f.cores,
                "log": o.files.get("log"),
            }
            for o in c.outcomes
        ],
        "cached": c.cached,
        "evidence": c.evidence,
    }


def load_answer_record(a: LoadAnswer | None) -> dict[str, Any] | None:
    """Question 2 for one bundle: does its asset load where it ships?"""
    if a is None:
        return None
    return {
        "verdict": a.verdict,
        "reexport": a.reexport,
        "reason": a.reason,
        "deployment": a.deployment.to_json(),
        "checks": [load_finding_record(f) for f in a.findings],
        "remedies": list(a.remedies),
        "by_exporter": [
            {"exporters": list(r), "reexport": lv, "because": why} for r, lv, why in a.by_exporter
        ],
    }
