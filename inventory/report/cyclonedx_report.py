"""CycloneDX 1.6 (`-f cyclonedx`): the inventory as an ML-BOM, the per-fix answers as VEX.

`scan` gives the bundles as they are: each a `machine-learning-model` component (its files with
SHA-256, producer, exporter, asset version, entry points, weights fingerprint, where it loads)
depending on the converter that wrote it and the coreai-core it was written for. `plan` and
`affected` give the converter's fixes as `vulnerabilities`, one entry per (fix, bundle) with a
VEX `analysis`, because the analysis of one CycloneDX vulnerability is one state and bundles
differ. The mapping of re-export levels to states and severities (docs/reports.md says why):

    level         state / justification          severity  response
    required      exploitable                    high      update   the shipped program is
                                                                    wrong, or its asset does not
                                                                    load where it ships
    optional      not_affected                   low       -        the fix reaches the bundle
                  requires_configuration                            and its program changes,
                                                                    within the policy's
                                                                    tolerance: not urgent
    inconclusive  in_triage                      unknown   -        not answered (the reason
                                                                    says why)
    no            not_affected code_not_present  none      -        no instance of the construct
                  not_affected code_not_reachable                   the construct is there, its
                                                                    program the same

`scan` gives each bundle that does not load on a deployment runtime as an `asset-load` entry
too (exploitable, high): nothing runs there. An ignored finding keeps its measured state and
says so (`inventory:ignored`, response `will_not_fix`). Every entry's `detail` holds the level,
the reason and its evidence ids; its rating says why the level has its severity. The document
is built with cyclonedx-python-lib and validated by its own JSON validator before it is written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from cyclonedx.model import HashAlgorithm, HashType, Property, XsUri
from cyclonedx.model.bom import Bom
from cyclonedx.model.component import Component, ComponentType
from cyclonedx.model.impact_analysis import (
    ImpactAnalysisJustification,
    ImpactAnalysisResponse,
    ImpactAnalysisState,
)
from cyclonedx.model.vulnerability import (
    BomTarget,
    Vulnerability,
    VulnerabilityAnalysis,
    VulnerabilityRating,
    VulnerabilityScoreSource,
    VulnerabilitySeverity,
    VulnerabilitySource,
)
from cyclonedx.output.json import JsonV1Dot6
from cyclonedx.schema import SchemaVersion
from cyclonedx.validation.json import JsonStrictValidator
from packageurl import PackageURL

from inventory.coverage import Coverage
from inventory.report.document import Document
from inventory.report.evidence import evidence_id
from inventory.report.record_facts import detours, exporter_assumed, exporter_label
from inventory.version import version

UPSTREAM = "apple/coreai-torch"
LEVELS = ("required", "inconclusive", "unchecked", "optional", "no")


@dataclass(frozen=True)
class _Vex:
    """How a re-export level reads to a VEX consumer: a state, a severity, and why."""

    state: ImpactAnalysisState
    severity: VulnerabilitySeverity
    why: str  # the rating's justification; an optional finding's detail says it too


_VEX = {
    "required": _Vex(
        ImpactAnalysisState.EXPLOITABLE,
        VulnerabilitySeverity.HIGH,
        "re-export required: the shipped program computes what the fix corrects, beyond the "
        "policy's tolerance, or its asset does not load where it ships",
    ),
    # CycloneDX has no state for "affected, not urgent": `exploitable` reads as a crash does,
    # while an optional finding needs no action. Its program changes within the tolerance, so
    # what the fix corrects would matter only under another setting (a tighter tolerance, or
    # weights meeting a condition the reason names): `requires_configuration`.
    "optional": _Vex(
        ImpactAnalysisState.NOT_AFFECTED,
        VulnerabilitySeverity.LOW,
        "not urgent, re-export optional: the fix reaches the bundle and changes its program, "
        "within the policy's tolerance (or only in shapes or speed); it would be required under "
        "a tighter tolerance, or where a condition the reason names holds of the weights",
    ),
    "inconclusive": _Vex(
        ImpactAnalysisState.IN_TRIAGE,
        VulnerabilitySeverity.UNKNOWN,
        "not answered: the detail says why and what decides it",
    ),
    # nothing found that moves, but the bundle's own program was not checked: still in triage,
    # never `not_affected`, which a VEX consumer reads as a pass
    "unchecked": _Vex(
        ImpactAnalysisState.IN_TRIAGE,
        VulnerabilitySeverity.UNKNOWN,
        "not checked on the bundle's own program: nothing found that moves where it looked; "
        "the detail names the command that checks the rest",
    ),
    "no": _Vex(
        ImpactAnalysisState.NOT_AFFECTED,
        VulnerabilitySeverity.NONE,
        "re-export not needed: the fix does not change the bundle's program",
    ),
}
# a bundle a scan finds not loading on a runtime it is deployed to: no fix record is involved
_NOT_LOADING = _Vex(
    ImpactAnalysisState.EXPLOITABLE,
    VulnerabilitySeverity.HIGH,
    "the shipped asset does not load on a runtime it is deployed to: nothing runs there",
)
# the tool that rates every entry (its source)
_RATER = VulnerabilitySource(name="inventory")
# verdicts of a "no" that hold no instance of the construct; any other "no" holds one
_ABSENT = {"not-affected", "not-present"}


class BomError(Exception):
    """The document did not validate as CycloneDX 1.6 (a defect of this renderer)."""


def upstream_url(fix: str) -> str | None:
    """A numbered record is the converter's pull request of that number."""
    return f"https://github.com/{UPSTREAM}/pull/{fix}" if fix.isdigit() else None


def upstream_ref(fix: str) -> str:
    return f"{UPSTREAM}#{fix}" if fix.isdigit() else fix


def _converter(release: str) -> Component:
    return Component(
        name="coreai-torch",
        version=release,
        type=ComponentType.LIBRARY,
        bom_ref=f"pkg:pypi/coreai-torch@{release}",
        purl=PackageURL("pypi", name="coreai-torch", version=release),
    )


def _runtime(core: str) -> Component:
    return Component(
        name="coreai-core",
        version=core,
        type=ComponentType.LIBRARY,
        bom_ref=f"pkg:pypi/coreai-core@{core}",
        purl=PackageURL("pypi", name="coreai-core", version=core),
    )


def _props(pairs: Iterable[tuple[str, Any]]) -> list[Property]:
    return [
        Property(name=f"inventory:{k}", value=str(v)) for k, v in pairs if v not in (None, "", [])
    ]


def _bom(command: str) -> Bom:
    bom = Bom()
    bom.metadata.tools.components.add(
        Component(
            name="inventory",
            version=version(),
            type=ComponentType.APPLICATION,
            description=f"inventory {command}: does a new coreai-torch release change the bundles "
            f"you shipped?",
        )
    )
    return bom


def _add(bom: Bom, seen: dict[str, Component], c: Component) -> Component:
    key = str(c.bom_ref.value)
    if key not in seen:
        seen[key] = c
        bom.components.add(c)
    return seen[key]


def _release_of(exporter: str | None) -> str | None:
    """`coreai-torch 0.4.0 (no producer ...)` or `0.4.1` -> the release."""
    if not exporter:
        return None
    m = re.search(r"(\d+\.\d+\.\d+\S*)", exporter)
    return m.group(1) if m else None


# ---- scan: the bundles as they are ------------------------------------------------------------


def scan_bom(result: dict[str, Any]) -> Bom:
    bom = _bom("scan")
    seen: dict[str, Component] = {}
    not_loading = {n["bundle"]: n for n in result.get("not_loading") or []}
    for b in result.get("bundles", []):
        if b.get("error"):
            continue
        entries = b.get("entries") or []
        model = Component(
            name=b["name"],
            type=ComponentType.MACHINE_LEARNING_MODEL,
            bom_ref=f"bundle:{b['name']}",
            hashes=[
                HashType(alg=HashAlgorithm.SHA_256, content=f["sha256"])
                for f in b.get("files", [])
                if len(b.get("files", [])) == 1
            ],
            properties=_props(
                [
                    ("producer", b.get("producer") or "none"),
                    ("exporter", b.get("exporter")),
                    ("asset_version", b.get("asset_version")),
                    ("weights", (b.get("weights") or {}).get("fingerprint")),
                    ("dtype", ",".join(sorted((b.get("weights") or {}).get("dtypes", {})))),
                    *[(f"entry_point:{e['name']}", _signature(e)) for e in entries],
                    *[(f"loads:{o['runtime']}", o["outcome"]) for o in b.get("loads", [])],
                ]
            ),
            components=[
                Component(
                    name=f["path"],
                    type=ComponentType.FILE,
                    bom_ref=f"bundle:{b['name']}/{f['path']}",
                    hashes=[HashType(alg=HashAlgorithm.SHA_256, content=f["sha256"])],
                )
                for f in b.get("files", [])
            ],
        )
        _add(bom, seen, model)
        needs = []
        release = _release_of(b.get("exporter"))
        if release:
            needs.append(_add(bom, seen, _converter(release)))
        core = b.get("producer_core") or (b.get("reader") or {}).get("core")
        if core:
            needs.append(_add(bom, seen, _runtime(core)))
        if needs:
            bom.register_dependency(model, needs)
        if b["name"] in not_loading:
            _not_loading(bom, model, not_loading[b["name"]], b)
    return bom


def _not_loading(bom: Bom, model: Component, found: dict[str, Any], b: dict[str, Any]) -> None:
    """A bundle that does not load on a deployment runtime is a finding of the scan: nothing
    runs there. One `asset-load` entry, exploitable and rated as a required re-export is, its
    detail each refusing runtime's outcome and error, as the table says it."""
    failing = {r["core"] for r in found.get("runtimes", [])}
    said = [
        f"coreai-core {o['core']} {_describe(o)}"
        for o in b.get("loads", [])
        if o["core"] in failing
    ]
    vex = _NOT_LOADING
    bom.vulnerabilities.add(
        Vulnerability(
            bom_ref=f"asset-load/{model.bom_ref.value}",
            id="asset-load",
            description="the shipped asset on its deployment runtimes",
            ratings=[_rating(vex)],
            analysis=VulnerabilityAnalysis(
                state=vex.state,
                responses=[ImpactAnalysisResponse.UPDATE],
                detail=f"does not load on a deployment runtime "
                f"({found.get('deployment_source')}): {', '.join(said)}",
            ),
            affects=[BomTarget(ref=str(model.bom_ref.value))],
            properties=_props(
                [
                    ("deployment", ", ".join(found.get("deployment") or [])),
                    *[(f"loads:{o['runtime']}", o["outcome"]) for o in b.get("loads", [])],
                ]
            ),
        )
    )


def _describe(outcome: dict[str, Any]) -> str:
    """`crashes (SIGABRT): error: ...` (oracle.store.RuntimeOutcome.describe, from its record)."""
    head = outcome["outcome"]
    if outcome.get("signal"):
        head += f" ({outcome['signal']})"
    return f"{head}: {outcome['error']}" if outcome.get("error") else head


def _signature(entry: dict[str, Any]) -> str:
    def io(ts: list[dict[str, Any]]) -> str:
        return ", ".join(
            f"{t.get('name') or '-'} {t.get('dtype')} {t.get('shape')}"
            for t in ts
            if t.get("kind") != "token"
        )

    return f"({io(entry.get('inputs', []))}) -> ({io(entry.get('outputs', []))})"


# ---- plan and affected: the fixes as VEX ---------------------------------------------------------


def _finding(
    bom: Bom,
    bundle: Component,
    fix: str,
    title: str,
    level: str,
    item: dict[str, Any],
    ignored: str | None,
) -> None:
    verdict = item.get("verdict", "")
    vex = _VEX[level]
    justification = None
    if level == "no":
        justification = (
            ImpactAnalysisJustification.CODE_NOT_PRESENT
            if verdict in _ABSENT
            else ImpactAnalysisJustification.CODE_NOT_REACHABLE
        )
    elif level == "optional":
        justification = ImpactAnalysisJustification.REQUIRES_CONFIGURATION
    responses = []
    if level == "required":
        responses.append(ImpactAnalysisResponse.UPDATE)
    if ignored:
        responses.append(ImpactAnalysisResponse.WILL_NOT_FIX)
    evidence = [evidence_id(e) for e in _evidence(item)]
    detail = f"{level}: {verdict}: {item.get('reason', '')}"
    if level == "optional":  # a state of not_affected says why in its detail (the spec's word)
        detail += f" ({vex.why})"
    if ignored:
        detail += f" (ignored: {ignored})"
    if evidence:
        detail += f" (evidence: {', '.join(evidence)})"
    url = upstream_url(fix)
    bom.vulnerabilities.add(
        Vulnerability(
            bom_ref=f"{upstream_ref(fix)}/{bundle.bom_ref.value}",
            id=upstream_ref(fix),
            description=title,
            source=VulnerabilitySource(name=UPSTREAM, url=XsUri(url)) if url else None,
            recommendation="; ".join(item.get("remedies") or []) or None,
            ratings=[_rating(vex)],
            analysis=VulnerabilityAnalysis(
                state=vex.state, justification=justification, responses=responses, detail=detail
            ),
            affects=[BomTarget(ref=str(bundle.bom_ref.value))],
            properties=_props(
                [
                    ("level", level),
                    ("verdict", verdict),
                    ("ignored", ignored),
                    ("kind", item.get("kind")),
                    # the runtime the values come from, and why it is not the first one tried
                    ("runtime", item.get("runtime")),
                    *[("measured_after", line) for line in detours(item)],
                ]
            ),
        )
    )


def _rating(vex: _Vex) -> VulnerabilityRating:
    return VulnerabilityRating(
        source=_RATER,
        severity=vex.severity,
        method=VulnerabilityScoreSource.OTHER,
        justification=vex.why,
    )


def _evidence(item: dict[str, Any]) -> list[str]:
    """The item's evidence and its probes', each once (affected's item already lists its
    probes')."""
    found = item.get("evidence")
    if isinstance(found, str):
        return [found]
    out = list(found or [])
    out += [p["evidence"] for p in item.get("probes", []) or [] if p.get("evidence")]
    return list(dict.fromkeys(out))


def _whole_program_torch(verify: dict[str, Any] | None) -> list[tuple[str, Any]]:
    """The torch a whole-program check built the module on, and the recipe's when it differs
    (the programs compared are then not the ones the recipe exported)."""
    torch = (verify or {}).get("torch")
    if not torch:
        return []
    out: list[tuple[str, Any]] = [("whole_program_torch", torch["built"])]
    if torch["same"] is False:
        out.append(("whole_program_recipe_torch", torch["recipe"]))
    return out


def _coverage(bundle: str, record: dict[str, Any] | None) -> str | None:
    return Coverage.from_json(record).line(bundle) if record else None


def _bundle_component(bom: Bom, seen: dict[str, Component], b: dict[str, Any]) -> Component:
    model = _add(
        bom,
        seen,
        Component(
            name=b["bundle"],
            type=ComponentType.MACHINE_LEARNING_MODEL,
            bom_ref=f"bundle:{b['bundle']}",
            properties=_props(
                [
                    ("exporter", exporter_label(b) if b.get("exporter") else None),
                    ("exporter_source", b.get("exporter_source")),
                    ("reexport", b.get("reexport")),
                    # affected: how its step's changes no record explains were had
                    ("unrecorded_state", b.get("unrecorded_state")),
                    # what the answer rests on: each op probed, checked whole, or not covered
                    ("coverage", _coverage(b["bundle"], b.get("coverage"))),
                    *_whole_program_torch(b.get("verify")),
                ]
            ),
        ),
    )
    needs = []
    # an assumed exporter is not a dependency the bundle is known to have: its property says it
    if b.get("exporter") and not exporter_assumed(b):
        needs.append(_add(bom, seen, _converter(str(b["exporter"]))))
    deployment = (b.get("load") or {}).get("deployment") or b.get("deployment") or {}
    needs += [_add(bom, seen, _runtime(c)) for c in deployment.get("cores", [])]
    if needs:
        bom.register_dependency(model, needs)
    return model


def plan_bom(result: dict[str, Any]) -> Bom:
    bom = _bom("plan")
    seen: dict[str, Component] = {}
    target = _add(bom, seen, _converter(str(result["to"])))
    bom.metadata.component = Component(
        name="re-export plan",
        type=ComponentType.APPLICATION,
        version=str(result["to"]),
        bom_ref="plan",
    )
    bom.register_dependency(bom.metadata.component, [target])
    for b in result.get("bundles", []):
        model = _bundle_component(bom, seen, b)
        levels = {
            "required": "required",
            "inconclusive": "inconclusive",
            "unchecked": "unchecked",
            "optional": "optional",
            "not_affected": "no",
        }
        for key, level in levels.items():
            for item in b.get(key) or []:
                _finding(bom, model, str(item["fix"]), item.get("title", ""), level, item, None)
        for item in b.get("ignored") or []:  # measured at its own level, ignored by the user
            _finding(
                bom,
                model,
                str(item["fix"]),
                item.get("title", ""),
                item["ignored"]["level"],
                item,
                item["ignored"]["reason"],
            )
        load = b.get("load") or {}
        if load.get("reexport") not in (None, "no") and not b.get("load_explained_by"):
            # the asset does not load where it ships, and no record explains it: still a finding
            _finding(
                bom,
                model,
                "asset-load",
                "the shipped asset on its deployment runtimes",
                load["reexport"],
                load,
                None,
            )
        for u in b.get("unexplained") or []:  # a change no fix record explains: still a finding
            _finding(
                bom,
                model,
                f"unrecorded:{u['probe']}@{u['step']}",
                f"{u['construct']} changes in {u['step']} (no fix record explains it)",
                u["reexport"],
                u,
                None,
            )
    return bom


def affected_bom(result: dict[str, Any]) -> Bom:
    bom = _bom("affected")
    seen: dict[str, Component] = {}
    fix = str(result["fix"])
    for b in result.get("bundles", []):
        model = _bundle_component(bom, seen, b)
        ignored = (b.get("ignored") or {}).get("reason")
        item = {
            **b,
            "kind": result.get("kind"),
            "evidence": [p["evidence"] for p in b.get("probes", []) if p.get("evidence")],
        }
        _finding(bom, model, fix, result.get("title", ""), b["reexport"], item, ignored)
    return bom


BUILDERS = {"scan": scan_bom, "plan": plan_bom, "affected": affected_bom}


def render_cyclonedx(command: str, result: dict[str, Any], warnings: Iterable[str] = ()) -> str:
    """The command's answer as a CycloneDX 1.6 JSON document, validated before it is given; the
    run's warnings as `inventory:warning` properties of its metadata."""
    bom = BUILDERS[command](result)
    for w in warnings:
        bom.metadata.properties.add(Property(name="inventory:warning", value=w))
    text = JsonV1Dot6(bom).output_as_string(indent=2)
    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(text)
    if error is not None:
        raise BomError(f"the CycloneDX document does not validate: {error}")
    return text + "\n"


def write(document: Document[Any]) -> str:
    """The `-f cyclonedx` writer (inventory/output.py)."""
    return render_cyclonedx(document.command, document.record(), document.warnings)
