"""`inventory trace`: re-derive a bundle's construct instances and record them in the registry."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w

from inventory.errors import InventoryError
from inventory.registry import Bundle, exporter_release
from oracle.envs import Catalog, Env, ensure_env, site_packages

HEADER = """\
# The registry of shipped bundles. Facts about each bundle (files, dtype, exporter and the source
# of that fact, export pipeline, recipe provenance) are written by hand from the recipe sources;
# `trace` and `instances` are written by `inventory trace BUNDLE --write` and checked by
# `inventory trace --check`. Never edit instances by hand.

"""


class TraceError(InventoryError):
    """A trace could not run; one line for the user."""


@dataclass(frozen=True)
class TraceResult:
    bundle: str
    target: str
    dtype: str
    notes: str
    decompositions: str
    packages: dict[str, str]
    aten_ops: int
    instances: list[dict[str, Any]]  # registry-shaped instance tables
    detected: list[str]  # the construct kinds the trace looked for


def _decomp_env(bundle: Bundle, catalog: Catalog, progress: Any) -> Env:
    version, _assumed = exporter_release(bundle.exporter, catalog)
    if version not in catalog.releases:  # decompose as the oldest release does
        version = catalog.oldest()
    return ensure_env(version, catalog, progress)


def trace_bundle(bundle: Bundle, catalog: Catalog, progress: Any = lambda _: None) -> TraceResult:
    target = bundle.trace.get("target")
    if not target:
        raise TraceError(f"bundle {bundle.name!r} has no trace target in the registry")
    env = _decomp_env(bundle, catalog, progress)
    progress(f"tracing {bundle.name} ({target})")
    proc = subprocess.run(
        [sys.executable, "-m", "inventory.trace.worker", target, str(site_packages(env.python))],
        capture_output=True, text=True, cwd=Path(__file__).resolve().parents[2],
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        detail = lines[-1] if lines else f"exit code {proc.returncode}"
        raise TraceError(f"tracing {bundle.name} failed: {detail}")
    data = json.loads(proc.stdout)
    source = (f"traced: inventory trace {bundle.name} (torch.export, "
              f"{data['decompositions']}, aten graph read node by node)")
    instances = [
        {"kind": g["kind"], "count": g["count"], "dtype": g["dtype"],
         "modules": list(g["modules"]), "params": g["params"], "source": source}
        for g in data["instances"]
    ]
    return TraceResult(bundle.name, target, data["dtype"], data["notes"], data["decompositions"],
                       data["packages"], data["aten_ops"], instances, data["detected"])


def trace_bundles(registry: Path, bundles: list[Bundle], catalog: Catalog, *, write: bool,
                  check: bool, progress: Any = lambda _: None,
                  ) -> Iterator[tuple[TraceResult, list[str]]]:
    """Trace each bundle in turn: its result and, with `check`, what the registry records that
    the trace does not reproduce; with `write`, the registry is updated after each."""
    for bundle in bundles:
        result = trace_bundle(bundle, catalog, progress)
        stale = differences(raw_bundle(registry, bundle.name), result) if check else []
        if write:
            write_trace(registry, result)
        yield result, stale


def _trace_table(result: TraceResult, previous: dict[str, Any]) -> dict[str, Any]:
    kinds = sorted({i["kind"] for i in result.instances})
    summary = (f"{sum(i['count'] for i in result.instances)} instance(s) of "
               f"{', '.join(kinds) or 'no tracked construct'} among {result.aten_ops} aten ops")
    return {**previous, "target": result.target, "decompositions": result.decompositions,
            "packages": result.packages, "notes": result.notes, "summary": summary,
            "detected": result.detected}


def differences(bundle_raw: dict[str, Any], result: TraceResult) -> list[str]:
    """What the registry records that a fresh trace does not reproduce, one line each."""
    recorded = bundle_raw.get("instances", [])
    out = []

    def key(i: dict[str, Any]) -> str:
        return json.dumps({k: i.get(k) for k in ("kind", "count", "dtype", "params")},
                          sort_keys=True)

    rec = {key(i) for i in recorded}
    new = {key(i) for i in result.instances}
    out += [f"{result.bundle}: recorded but not traced: {k}" for k in sorted(rec - new)]
    out += [f"{result.bundle}: traced but not recorded: {k}" for k in sorted(new - rec)]
    old_detected = bundle_raw.get("trace", {}).get("detected", [])
    if old_detected != result.detected:
        out.append(f"{result.bundle}: recorded trace looked for {old_detected}, "
                   f"the tracer now detects {result.detected}")
    old_pkgs = bundle_raw.get("trace", {}).get("packages", {})
    if old_pkgs and old_pkgs != result.packages:
        out.append(f"{result.bundle}: traced with {old_pkgs}, now {result.packages}")
    return out


def write_trace(registry: Path, result: TraceResult) -> None:
    data = tomllib.loads(registry.read_text())
    raw = data["bundles"][result.bundle]
    raw["trace"] = _trace_table(result, raw.get("trace", {}))
    raw["instances"] = result.instances
    text = HEADER + tomli_w.dumps(data, multiline_strings=False)
    tmp = registry.with_suffix(".toml.tmp")
    tmp.write_text(text)
    tmp.replace(registry)


def raw_bundle(registry: Path, name: str) -> dict[str, Any]:
    return tomllib.loads(registry.read_text())["bundles"][name]
