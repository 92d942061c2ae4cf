"""How `asset` and `pipeline` fix records are answered for one bundle (`lowering` records are
answered in `affected.py`, per traced construct).

asset: what the saved asset carries besides the program. Answered by the load check (question 2,
`inventory/loads.py`): does the shipped asset load on the bundle's deployment runtimes?
pipeline: what runs around the lowerings (core pin, what to_coreai() returns). Answered with the
asset probe shaped like the bundle, converted at the release step where the change ships,
compared and measured like a lowering probe.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from inventory.affected import BundleAnswer
from inventory.attribution import own_step
from inventory.registry import UNKNOWN, Bundle, Instance
from inventory.verdict import Reexport, Verdict
from oracle import asset_probe
from oracle.envs import EnvError, version_key
from oracle.fixes import Fix
from oracle.spec import ProbeSpec

if TYPE_CHECKING:
    from inventory.affected import Analyzer


def asset_spec(bundle: Bundle) -> ProbeSpec:
    """The asset probe shaped like the bundle: nested modules, its dtype and pipeline."""
    return ProbeSpec(asset_probe.CONSTRUCT, dict(asset_probe.DEFAULT_PARAMS), bundle.dtype,
                     bundle.pipeline)


def asset_instance(bundle: Bundle) -> Instance:
    """How a pipeline record's probe is listed beside traced instances (it is not traced)."""
    return Instance(asset_probe.CONSTRUCT, dict(asset_probe.DEFAULT_PARAMS), 1, bundle.dtype, (),
                    f"not traced: the asset probe ({asset_probe.LABEL}) in the bundle's dtype "
                    f"and pipeline")


def pipeline_answer(analyzer: Analyzer, bundle: Bundle, fix: Fix, exporter: str,
                    chain: list[str], done: Callable[..., BundleAnswer]) -> BundleAnswer:
    """A pipeline change touches every program: the asset probe under both releases."""
    # Compared at the release step where the change ships, so that lowering changes of other
    # steps between the exporter and the target are not attributed to it.
    old, _ = own_step(analyzer.catalog, exporter, fix)
    chain.append(f"a pipeline change: compared at the step where it ships, coreai-torch "
                 f"{old} -> {fix.ships_in}")
    try:
        old_env, new_env = analyzer.session.env(old), analyzer.session.env(fix.ships_in)
    except EnvError as exc:
        return done(Verdict.INCONCLUSIVE, Reexport.INCONCLUSIVE, str(exc))
    answer = analyzer._probe(bundle, asset_instance(bundle), old_env, new_env,  # noqa: SLF001
                             spec=asset_spec(bundle))
    chain.append(f"{answer.spec.label()} (the asset probe: {asset_probe.LABEL}, the bundle's "
                 f"dtype and pipeline): {answer.verdict.verdict} - {answer.verdict.reason}")
    m = answer.result.measurement if answer.result else None
    runtimes = (m.runtime,) if m is not None and m.ok else ()
    return done(answer.verdict.verdict, answer.verdict.reexport, answer.verdict.reason,
                (answer,), runtimes)


def asset_answer(analyzer: Analyzer, bundle: Bundle, fix: Fix, target: str) -> BundleAnswer:
    """An asset change: does the shipped asset load on the bundle's deployment runtimes?"""
    recorded = bundle.exporter.converter
    load = analyzer.load_answer(bundle, target)
    chain = [f"must load on {load.deployment.describe()}"]
    verdict, level, reason = load.verdict, load.reexport, load.reason
    if recorded == UNKNOWN:
        # Never answered as if the oldest release had exported it: conditional, measured.
        chain.insert(0, f"exporter not recorded ({bundle.exporter.source})")
    else:
        chain.insert(0, f"exported with coreai-torch {recorded} ({bundle.exporter.source})")
        if version_key(recorded) >= version_key(fix.ships_in):
            already = f"fix {fix.label} ships in {fix.ships_in}; already in {recorded}"
            if load.verdict == Verdict.LOADS:
                verdict, level, reason = Verdict.NOT_AFFECTED, Reexport.NO, already
                chain.append(f"measured: {load.reason}")
            else:
                reason = f"{load.reason} (not explained by {fix.label}: {already})"
    chain.append(reason)
    chain += [f"remedy: {r}" for r in load.remedies] if level != Reexport.NO else []
    chain.append(f"load checks: {', '.join(load.evidence)}")
    return BundleAnswer(bundle.name, recorded, recorded, bundle.exporter.source, (), (),
                        verdict, level, reason, tuple(chain),
                        tuple(dict.fromkeys(load.deployment.runtimes)), (), load.deployment,
                        load)
