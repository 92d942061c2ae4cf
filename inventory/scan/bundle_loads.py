"""What `scan` says about a real bundle as a deployable asset: which runtimes load it, and which
exporter its producer stamp points to.

Each runtime loads the bundle (and every function in it) in a contained subprocess
(`oracle/workers/asset_worker.py`): a runtime that aborts natively is reported with its signal and
the
first error line it printed, and the next runtime is tried. The program is compiled and loaded,
never run. Logs stay in `$INVENTORY_CACHE/logs/scan/`.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from inventory.deployment import deployment
from inventory.registry import Bundle
from inventory.scan.model import BundleScan, Finding, Status
from oracle.catalog import Catalog, cores, releases_pinning
from oracle.infra import Progress, cache_root, safe_name
from oracle.load_check import Run, runs_on
from oracle.session import Session
from oracle.store import RuntimeOutcome

REPAIR_KEY = "inventory.repair"  # set by `inventory repair` in the creator-defined metadata


def repaired(metadata: dict | None) -> str | None:
    """What `inventory repair` recorded in a bundle's metadata.json, if it repaired it."""
    custom = (metadata or {}).get("creatorDefinedMetadata") or {}
    return str(custom[REPAIR_KEY]) if isinstance(custom, dict) and REPAIR_KEY in custom else None


def inferred_exporter(
    producer_core: str | None, catalog: Catalog, metadata: dict | None = None
) -> str:
    """The coreai-torch release(s) whose assets carry this producer stamp (none: the oldest
    core's releases, which stamp none); a repaired asset says so in its metadata."""
    note = repaired(metadata)
    if note is not None:
        oldest = releases_pinning(catalog, cores(catalog)[0])
        return (
            f"coreai-torch {' or '.join(oldest)}, repaired by `inventory repair` "
            f"({REPAIR_KEY}: {note}); the producer stamp is the re-save's"
        )
    core = producer_core or cores(catalog)[0]
    releases = releases_pinning(catalog, core)
    if not releases:
        return f"unknown (producer coreai-core {core} is pinned by no release in the catalog)"
    names = " or ".join(releases)
    why = (
        "no producer in metadata.json" if producer_core is None else f"producer coreai-core {core}"
    )
    return f"coreai-torch {names} ({why})"


def check_loads(
    scans: list[BundleScan], catalog: Catalog, wanted: tuple[str, ...] | None, progress: Progress
) -> None:
    """Fill each readable scan's `loads`: the outcome on every runtime of `wanted` (default:
    every runtime in the catalog). Every bundle's loads go to the executor as one batch."""
    chosen = list(wanted or cores(catalog))
    run = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
    root = cache_root() / "logs" / "scan"
    readable = [(i, s) for i, s in enumerate(scans) if s.ok]
    # each its own folder, even for two bundles of one name (a cluster writes it back whole)
    runs = [
        Run(Path(s.path).resolve(), core, root / f"{run}-{i}-{safe_name(s.name)}-{core}", False)
        for i, s in readable
        for core in chosen
    ]
    if not runs:
        return
    progress(
        f"loading {len(readable)} bundle(s) on coreai-core {', '.join(chosen)}: {len(runs)} load(s)"
    )
    with Session(catalog, progress, root) as session:
        outcomes = iter(runs_on(runs, session, session.runs_at_once))
        for _i, s in readable:
            s.loads.extend(next(outcomes) for _core in chosen)


def load_finding(
    entry: Bundle, group: list[BundleScan], catalog: Catalog, override: tuple[str, ...] | None
) -> Finding:
    """agree when every scanned file loads on every runtime the registry expects it to load on;
    disagree when one fails; cannot-tell when a runtime could not be tried."""
    expected = deployment(entry, catalog, None, override)
    expects = f"loads on coreai-core {', '.join(expected.cores)} ({expected.source})"
    failing: list[tuple[str, RuntimeOutcome]] = []
    missing: list[str] = []
    for s in group:
        for core in expected.cores:
            outcome = next((o for o in s.loads if o.core == core), None)
            if outcome is None or outcome.outcome in ("not-run", "flaky"):
                missing.append(f"{s.name} on {core}" + (f" ({outcome.error})" if outcome else ""))
            elif not outcome.loads:
                failing.append((s.name, outcome))
    if failing:
        seen = "; ".join(f"{name}: coreai-core {o.core} {o.describe()}" for name, o in failing)
        return Finding(
            "loads",
            Status.DISAGREE,
            expects,
            seen,
            "the registry expects the bundle to load there; re-export with a release "
            "whose assets load, or `inventory repair` when the runtime refused its "
            "debug locations",
        )
    if missing:
        return Finding(
            "loads", Status.CANNOT_TELL, expects, "-", f"not tried: {'; '.join(missing)}"
        )
    return Finding(
        "loads",
        Status.AGREE,
        expects,
        "loads on each",
        "every deployment runtime loaded every function",
    )
