"""Which op kinds a bundle's construct probes cover, read from the probes' own exported graphs:
the `aten.txt` each stored comparison keeps beside its programs (`inventory.coverage` counts the
bundle's census against them). Read from the run or the store, never converted."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from inventory.coverage import graph_ops
from inventory.instances import instance_spec
from inventory.registry import Bundle
from oracle.compare import ProbeResult
from oracle.constructs import has_probe
from oracle.session import Session
from oracle.workers import asset_probe


def probe_ops(results: Iterable[ProbeResult | None]) -> set[str]:
    """The op kinds the probes' own exported graphs hold (each side's, as it was exported for
    its release); the asset probe, at none of the bundle's instances, adds nothing."""
    out: set[str] = set()
    for r in results:
        if r is None or r.spec.construct == asset_probe.CONSTRUCT:
            continue
        for side in (r.old, r.new):
            name = side.files.get("aten")
            if name:
                path = Path(name)
                out |= graph_ops(path if path.is_absolute() else Path(r.evidence) / path)
    return out


def swept_results(
    session: Session, bundle: Bundle, steps: Iterable[tuple[str, str]]
) -> list[ProbeResult | None]:
    """The comparisons of the bundle's probed instances at each step, as the run or the store
    holds them (the registry sweep's, `plan`'s or `sweep --registry`'s): read, never made."""
    specs = [instance_spec(bundle, i) for i in bundle.instances if has_probe(i.kind)]
    asks = []
    for old, new in steps:
        a, b = session.had(old), session.had(new)
        if a is None or b is None:
            continue
        asks += [(spec, a, b) for spec in specs]
    return session.stored_all(asks)
