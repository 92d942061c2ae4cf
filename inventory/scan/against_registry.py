"""A scan next to the registry: match each bundle to its entry (by file name or fingerprint) and
compare exporter, dtype and traced instances, saying what a scan cannot establish."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from inventory.registry import UNKNOWN, Bundle
from inventory.scan.bundle_loads import load_finding, repaired
from inventory.scan.model import BundleScan, Finding, RegistryLink, Status, dtype_name
from inventory.scan.readers import core_order
from oracle import constructs
from oracle.catalog import Catalog, version_key
from oracle.constructs._construct import ScanSeen

# What a scan cannot establish, said in every registry comparison.
CANNOT_ESTABLISH = (
    "lowerings baked into plain ops: how a converter lowered a construct (0.4.1 pre-pads a conv "
    "transpose's input where 0.4.2 passes padding and output_padding; an fp16 batch norm "
    "computed in fp32 or with downcast parameters) leaves plain ops, not a name; "
    "`inventory affected` answers that by converting probes under both releases",
    "constructs without a composite: a layer norm without affine parameters written or "
    "decomposed as reduce_mean/sub/mul/add/rsqrt is plain ops and cannot be counted",
)


def _file_pattern(name: str) -> re.Pattern[str]:
    """A registry file name; `<L>`-style placeholders stand for any text."""
    parts = re.split(r"<[^<>]+>", Path(name).name)
    return re.compile("^" + ".+?".join(re.escape(p) for p in parts) + "$")


def match(scan: BundleScan, bundles: list[Bundle]) -> tuple[Bundle | None, str, str]:
    """(registry entry, registry file, how matched); a conflict is reported as unmatched."""
    by_name = [(b, f) for b in bundles for f in b.files if _file_pattern(f).match(scan.name)]
    fp = scan.weights.get("fingerprint")
    by_fp = [b for b in bundles if fp and fp in b.fingerprints]
    if by_name and by_fp:
        if by_name[0][0].name != by_fp[0].name:
            return (
                None,
                "",
                (f"name matches {by_name[0][0].name}, fingerprint matches {by_fp[0].name}"),
            )
        return by_name[0][0], by_name[0][1], "name and fingerprint"
    if by_name:
        return by_name[0][0], by_name[0][1], "name"
    if by_fp:
        return by_fp[0], "", "fingerprint"
    return None, "", "no registry file name or fingerprint matches"


def _traced(bundle: Bundle) -> bool:
    return bool(bundle.instances) or "summary" in bundle.trace or "packages" in bundle.trace


def _exporter_finding(bundle: Bundle, scans: list[BundleScan], catalog: Catalog) -> Finding:
    recorded = bundle.exporter.core
    traced = (
        f"coreai-torch {bundle.exporter.converter}, coreai-core {recorded}"
        if bundle.exporter.converter != UNKNOWN
        else "unknown"
    )
    cores = core_order(catalog)
    # A bundle `inventory repair` re-saved carries the re-save's producer; what exported it is
    # the producer-less original its metadata names.
    seen = sorted({"none" if repaired(s.metadata) else s.producer_core or "none" for s in scans})
    scanned = ", ".join(f"producer coreai-core {c}" if c != "none" else "no producer" for c in seen)
    if any(repaired(s.metadata) for s in scans):
        scanned = scanned.replace(
            "no producer", "no producer before `inventory repair` re-saved it"
        )
    pins = {
        c: sorted((v for v, r in catalog.releases.items() if r.core == c), key=version_key)
        for c in cores
    }
    implied = set()
    for c in seen:
        core = cores[0] if c == "none" else c
        implied.add(core)
    if len(implied) > 1:
        return Finding(
            "exporter",
            Status.DISAGREE,
            traced,
            scanned,
            "the registry's files were written by different cores",
        )
    core = implied.pop()
    releases = ", ".join(pins.get(core, [])) or "no supported release"
    why_none = (
        f"a bundle without a producer points to coreai-core {cores[0]}, which stamps none"
        if "none" in seen
        else f"coreai-core {core} is pinned by coreai-torch {releases}"
    )
    if recorded == UNKNOWN:
        return Finding(
            "exporter",
            Status.INFO,
            traced,
            scanned,
            f"the registry records no exporter; {why_none} (coreai-torch {releases})",
        )
    if recorded == core:
        return Finding("exporter", Status.AGREE, traced, scanned, why_none)
    return Finding(
        "exporter",
        Status.DISAGREE,
        traced,
        scanned,
        f"the registry records coreai-core {recorded}; {why_none}",
    )


def _dtype_finding(bundle: Bundle, scans: list[BundleScan]) -> Finding:
    weights: Counter[str] = Counter()
    for s in scans:
        for dt, n in (s.weights.get("dtypes") or {}).items():
            weights[dtype_name(dt)] += n
    floats = {k: v for k, v in weights.items() if k in ("float16", "bfloat16", "float32")}
    scanned = ", ".join(f"{k} {v}" for k, v in sorted(floats.items())) or "no float weights"
    if not floats:
        return Finding(
            "dtype",
            Status.CANNOT_TELL,
            bundle.dtype,
            scanned,
            "no floating-point weight to compare",
        )
    dominant = max(floats, key=lambda k: floats[k])
    if bundle.dtype in floats and floats[bundle.dtype] > 0:
        status = Status.AGREE if dominant == bundle.dtype else Status.INFO
        reason = (
            "the weights are mostly "
            + dominant
            + ("" if status == Status.AGREE else f"; {bundle.dtype} weights present too")
        )
        return Finding("dtype", status, bundle.dtype, scanned, reason)
    return Finding(
        "dtype",
        Status.DISAGREE,
        bundle.dtype,
        f"weights: {scanned}",
        f"no {bundle.dtype} weight in the scanned file(s)",
    )


def traced_kinds() -> set[str]:
    """The construct kinds `inventory trace` detects."""
    return {c.kind for c in constructs.detected()}


def _instance_findings(
    bundle: Bundle, scans: list[BundleScan], files_missing: list[str]
) -> list[Finding]:
    if not _traced(bundle):
        return [
            Finding(
                "instances",
                Status.NOT_TRACED,
                "not traced",
                "-",
                "the registry holds no trace of this bundle yet (inventory trace "
                f"{bundle.name} --write); nothing to compare",
            )
        ]
    traced: Counter[str] = Counter()
    for inst in bundle.instances:
        traced[inst.kind] += inst.count
    findings = []
    # What a scan counts per kind: call sites of a composite declaration, or plain ops by name.
    composite_of = {
        c.kind: c.scan.composite for c in constructs.all_constructs() if c.scan.composite
    }
    ops_of = {c.kind: c.scan.ops for c in constructs.all_constructs() if c.scan.ops}
    kinds = (
        set(traced)
        | {k for k, comp in composite_of.items() if any(s.composite_uses(comp) for s in scans)}
        | {k for k, frags in ops_of.items() if any(s.op_count(f) for s in scans for f in frags)}
    )
    detected = traced_kinds()
    seen_besides = ScanSeen(
        optimized=bundle.pipeline.optimize,
        decompositions=bundle.pipeline.decompositions,
        stamped=any(s.producer_core is not None for s in scans),
        op_count=lambda fragment: sum(s.op_count(fragment) for s in scans),
    )
    for kind in sorted(kinds):
        want = traced.get(kind, 0)
        if kind in composite_of:
            seen = sum(s.composite_uses(composite_of[kind]) for s in scans)
            what = f"{seen} {composite_of[kind]} composite call site(s)"
        elif kind in ops_of:
            seen = sum(s.op_count(f) for s in scans for f in ops_of[kind])
            what = f"{seen} {'/'.join(ops_of[kind])} op(s)"
        else:
            findings.append(
                Finding(
                    kind,
                    Status.CANNOT_TELL,
                    f"{want}x {kind}",
                    "-",
                    f"a scan has no signature for {kind}",
                )
            )
            continue
        label = f"{want}x {kind}" if want else "none traced"
        if seen == want:
            findings.append(Finding(kind, Status.AGREE, label, what, "same count"))
            continue
        if seen > want:
            if want == 0 and kind not in detected:
                findings.append(
                    Finding(
                        kind,
                        Status.INFO,
                        label,
                        what,
                        f"present in the bundle; the tracer does not detect "
                        f"{kind}, so the registry cannot say",
                    )
                )
                continue
            findings.append(
                Finding(
                    kind,
                    Status.DISAGREE,
                    label,
                    what,
                    "the bundle holds more than the trace recorded: a stale "
                    "trace, or another export than the recipe traced",
                )
            )
            continue
        reasons = []
        if files_missing:
            reasons.append(
                f"{len(files_missing)} file(s) of the bundle not scanned "
                f"({', '.join(files_missing)})"
            )
        # How a lowering or the pipeline hides instances from the count is the construct's
        # own knowledge (its ScanSignature.fewer), so a new construct brings its reasoning.
        fewer = constructs.get(kind).scan.fewer
        if fewer is not None:
            reasons += fewer(seen_besides)
        if reasons:
            findings.append(
                Finding(
                    kind,
                    Status.CANNOT_TELL,
                    label,
                    what,
                    f"{want - seen} not seen; " + "; ".join(reasons),
                )
            )
        else:
            findings.append(
                Finding(
                    kind,
                    Status.DISAGREE,
                    label,
                    what,
                    f"{want - seen} traced instance(s) missing from the bundle",
                )
            )
    return findings


def link_registry(
    scans: list[BundleScan],
    bundles: list[Bundle],
    registry: Path,
    catalog: Catalog,
    runtimes: tuple[str, ...] | None = None,
) -> list[RegistryLink]:
    groups: dict[str, list[tuple[BundleScan, str, str]]] = {}
    links: list[RegistryLink] = []
    known = {b.name: b for b in bundles}
    for s in scans:
        if not s.ok:
            continue
        entry, file, how = match(s, bundles)
        if entry is None:
            links.append(
                RegistryLink(
                    None,
                    [s.path],
                    {s.path: how},
                    [],
                    [Finding("registry", Status.INFO, "-", s.name, how)],
                    [],
                )
            )
            continue
        groups.setdefault(entry.name, []).append((s, file, how))
    for name, members in groups.items():
        bundle = known[name]
        group = [m[0] for m in members]
        scanned_files = {f for _s, f, _h in members if f}
        missing = [f for f in bundle.files if f not in scanned_files]
        if any(not f for _s, f, _h in members):
            missing = []  # matched by fingerprint: which file it is is not known
        findings = [_exporter_finding(bundle, group, catalog), _dtype_finding(bundle, group)]
        if any(s.loads for s in group):
            findings.append(load_finding(bundle, group, catalog, runtimes))
        findings += _instance_findings(bundle, group, missing)
        cannot = []
        cores = {s.producer_core for s in group}
        for core in sorted(c for c in cores if c):
            pins = sorted(
                (v for v, r in catalog.releases.items() if r.core == core), key=version_key
            )
            if len(pins) > 1:
                cannot.append(
                    f"which coreai-torch release exported it: coreai-core {core} is "
                    f"pinned by coreai-torch {' and '.join(pins)}"
                )
        if not cannot:
            cannot.append(
                "which coreai-torch release exported it: the producer names "
                "coreai-core only (and a 1.0.0b1 bundle has none)"
            )
        cannot += CANNOT_ESTABLISH
        links.append(
            RegistryLink(
                name,
                [s.path for s in group],
                {s.path: h for s, _f, h in members},
                missing,
                findings,
                cannot,
            )
        )
    return links
