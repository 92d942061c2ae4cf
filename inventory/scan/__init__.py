"""`inventory scan`: read shipped `.aimodel` bundles and say what a bundle can and cannot tell.

A bundle is data. This process reads `metadata.json` as JSON and checks `main.mlirb` against
`main.hash`; the program itself is parsed by coreai-core's own bindings in a converter
environment (`oracle/workers/scan_worker.py`), in a subprocess whose native abort is
contained. Nothing from a bundle is ever run or imported. Then each runtime loads it
(`bundle_loads.py`: compiled and loaded, never run), and the exporter its producer stamp points
to is named.

Which core reads a bundle: the one its `producer` names; a bundle without a producer is of the
1.0.0b1 era (coreai-torch 0.4.0 stamps none), and 1.0.0b2/b3 abort on such an asset, so it is read
with 1.0.0b1 first. When the first choice fails the other cores are tried, and the answer says
which core read it and what failed before.

The op histogram of an entry point resolves every `coreai.invoke`: a callee with a composite
declaration counts as one call site of that composite, however many call sites share one body
after the optimizer deduplicated identical bodies; a callee without one is inlined.
"""

from __future__ import annotations

from pathlib import Path

from inventory.registry import Bundle
from inventory.scan.against_registry import link_registry
from inventory.scan.bundle_loads import check_loads, inferred_exporter
from inventory.scan.bundles import find_bundles, outside_roots
from inventory.scan.ir import resolve_entry
from inventory.scan.model import (
    BundleError,
    BundleScan,
    Composite,
    Entry,
    Finding,
    RegistryLink,
    ScanError,
    ScanReport,
    Status,
)
from inventory.scan.readers import Readers, scan_bundles
from oracle.catalog import Catalog, EnvError, at_or_above, cores
from oracle.infra import Progress


def deployed_on(
    s: BundleScan, catalog: Catalog, runtimes: tuple[str, ...] | None
) -> tuple[tuple[str, ...], str]:
    """The runtimes a scanned bundle must load on, and why those: --runtime, else every runtime
    from the core its producer stamp names (none: the oldest core's era, as its exporter is
    inferred), else every runtime tried."""
    if runtimes:
        return tuple(runtimes), "--runtime"
    core = s.producer_core or cores(catalog)[0]
    if core in cores(catalog):
        why = "its producer" if s.producer_core else "no producer stamp: the oldest core's era"
        return (
            tuple(at_or_above(catalog, core)),
            f"every runtime at or above coreai-core {core}, {why}",
        )
    return tuple(o.core for o in s.loads), "every runtime tried (its producer core is unknown)"


def scan(
    paths: list[Path],
    catalog: Catalog,
    *,
    reader: str | None = None,
    registry: tuple[Path, list[Bundle]] | None = None,
    progress: Progress = lambda _: None,
    runtimes: tuple[str, ...] | None = None,
    loads: bool = True,
) -> ScanReport:
    """Scan every bundle under `paths` and load it on each runtime (`runtimes`, default every
    runtime in the catalog); with a registry, link each to its entry."""
    found = find_bundles(paths)
    escaped = outside_roots(paths, found)
    if reader is not None:
        catalog.release(reader)  # an unknown release is a usage error (EnvError)
    readers = Readers(catalog, progress, reader)
    inside = [b for b in found if b not in escaped]
    if inside:
        progress(f"reading {len(inside)} bundle(s)")
    try:
        read = dict(zip(inside, scan_bundles(inside, readers), strict=True))
    finally:
        readers.close()
    scans = [
        read[bundle]
        if bundle in read
        else BundleScan(
            path=str(bundle),
            name=bundle.name,
            error=(
                f"{bundle}: is a symlink out of the scanned folder {escaped[bundle]}; "
                f"a folder's bundles are read only from inside it"
            ),
        )
        for bundle in found
    ]
    for s in scans:
        if s.ok:
            s.exporter = inferred_exporter(s.producer_core, catalog, s.metadata)
    if loads:
        check_loads(scans, catalog, runtimes, progress)
        for s in scans:
            s.deployment, s.deployment_source = deployed_on(s, catalog, runtimes)
    links = None
    if registry is not None:
        links = link_registry(scans, registry[1], registry[0], catalog, runtimes)
    warnings = [
        f"{s.name}: read with coreai-core {s.reader['core']} after: {'; '.join(s.attempts)}"
        for s in scans
        if s.ok and s.attempts and s.reader.get("why") == "fallback"
    ]
    return ScanReport(scans, links, str(registry[0]) if registry else None, warnings)


__all__ = [
    "BundleError",
    "BundleScan",
    "Composite",
    "Entry",
    "EnvError",
    "Finding",
    "RegistryLink",
    "ScanError",
    "ScanReport",
    "Status",
    "find_bundles",
    "resolve_entry",
    "scan",
]
