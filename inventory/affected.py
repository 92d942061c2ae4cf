"""`inventory affected --fix N`: which shipped bundles does one converter fix change?"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from inventory.policy import Policy
from inventory.registry import UNKNOWN, Bundle, Instance
from inventory.verdict import ProbeVerdict, judge, worst
from oracle.client import Pool
from oracle.compare import ProbeResult, compare
from oracle.envs import Catalog, Env, EnvError, ensure_env, version_key
from oracle.fixes import Fix
from oracle.paths import cache_root
from oracle.probes_catalog import has_probe, probe_params
from oracle.spec import ProbeSpec


class UsageError(Exception):
    """The request cannot be answered as asked; one line for the user."""


@dataclass(frozen=True)
class ProbeAnswer:
    instance: Instance
    spec: ProbeSpec
    result: ProbeResult | None
    verdict: ProbeVerdict


@dataclass(frozen=True)
class BundleAnswer:
    bundle: str
    exporter: str  # the exporter release the answer used
    exporter_recorded: str  # what the registry says (may be "unknown")
    exporter_source: str
    instances: tuple[Instance, ...]
    probes: tuple[ProbeAnswer, ...]
    verdict: str
    reexport: str
    reason: str
    chain: tuple[str, ...]
    runtimes: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class AffectedReport:
    fix: Fix
    to: str
    bundles: tuple[BundleAnswer, ...]

    @property
    def runtimes(self) -> tuple[str, ...]:
        return tuple(sorted({r for b in self.bundles for r in b.runtimes}))

    @property
    def reexport(self) -> str:
        return worst([b.reexport for b in self.bundles])


def _specs(bundle: Bundle, instance: Instance) -> ProbeSpec:
    return ProbeSpec(
        construct=instance.kind,
        params=probe_params(instance.kind, instance.params),
        dtype=instance.dtype or bundle.dtype,
        pipeline=bundle.pipeline,
        values="trained",
    )


def affected(
    fix: Fix,
    bundles: list[Bundle],
    catalog: Catalog,
    policy: Policy,
    to: str | None = None,
    use_cache: bool = True,
    progress: Callable[[str], None] = lambda _: None,
) -> AffectedReport:
    target = to or fix.ships_in
    catalog.release(target)  # unknown releases fail here, before any work
    if version_key(target) < version_key(fix.ships_in):
        raise UsageError(f"--to {target} predates fix #{fix.id}, which ships in {fix.ships_in}")
    oldest = catalog.oldest()
    envs: dict[str, Env] = {}

    def env(version: str) -> Env:
        if version not in envs:
            envs[version] = ensure_env(version, catalog, progress)
        return envs[version]

    answers = []
    with Pool(cache_root() / "logs") as pool:
        for bundle in bundles:
            progress(f"{bundle.name}: checking")
            answers.append(_answer(bundle, fix, target, oldest, catalog, policy, env, pool,
                                   use_cache, progress))
    return AffectedReport(fix, target, tuple(answers))


def _answer(bundle: Bundle, fix: Fix, target: str, oldest: str, catalog: Catalog,
            policy: Policy, env: Callable[[str], Env], pool: Pool, use_cache: bool,
            progress: Callable[[str], None]) -> BundleAnswer:
    recorded = bundle.exporter.converter
    chain: list[str] = []
    if recorded == UNKNOWN:
        exporter = oldest
        chain.append(f"exporter not recorded ({bundle.exporter.source}); assumed the oldest "
                     f"supported release, coreai-torch {oldest}")
    else:
        exporter = recorded
        chain.append(f"exported with coreai-torch {recorded} ({bundle.exporter.source})")
    instances = tuple(i for i in bundle.instances if i.kind in fix.constructs)
    what = " or ".join(fix.constructs)

    def done(verdict: str, reexport: str, reason: str, probes: tuple[ProbeAnswer, ...] = (),
             runtimes: tuple[str, ...] = ()) -> BundleAnswer:
        return BundleAnswer(bundle.name, exporter, recorded, bundle.exporter.source,
                            instances, probes, verdict, reexport, reason,
                            tuple(chain + [reason]), runtimes)

    if not instances:
        chain.append(f"tracing found no {what} in the exported graph "
                     f"({bundle.trace.get('summary', 'see recipes.toml')})")
        return done("not-affected", "no", f"no {what} in this bundle")
    chain.append(f"tracing found {sum(i.count for i in instances)} {what} "
                 f"in {len(instances)} parameter set(s)")
    if exporter not in catalog.releases:
        return done("inconclusive", "inconclusive",
                    f"exporter coreai-torch {exporter} is not a release the oracle can build")
    if version_key(exporter) >= version_key(fix.ships_in):
        return done("not-affected", "no",
                    f"fix #{fix.id} ships in {fix.ships_in}; already in {exporter}")
    missing = sorted({i.kind for i in instances if not has_probe(i.kind)})
    if missing:
        return done("inconclusive", "inconclusive",
                    f"the probe library has no probe for {', '.join(missing)} yet")
    try:
        old_env, new_env = env(exporter), env(target)
    except EnvError as exc:
        return done("inconclusive", "inconclusive", str(exc))
    probes = []
    for instance in instances:
        spec = _specs(bundle, instance)
        progress(f"{bundle.name}: {spec.label()} under {exporter} and {target}")
        result = compare(spec, old_env, new_env, pool, use_cache=use_cache)
        probes.append(ProbeAnswer(instance, spec, result, judge(result, policy)))
    level = worst([p.verdict.reexport for p in probes])
    deciding = next(p for p in probes if p.verdict.reexport == level)
    chain.extend(f"{p.spec.label()}: {p.verdict.verdict} - {p.verdict.reason}" for p in probes)
    runtimes = tuple(sorted({p.result.measurement.runtime for p in probes
                             if p.result and p.result.measurement and p.result.measurement.ok}))
    return done(deciding.verdict.verdict, level, deciding.verdict.reason, tuple(probes),
                runtimes)


def evidence_paths(answer: BundleAnswer) -> list[Path]:
    return [Path(p.result.evidence) for p in answer.probes if p.result is not None]
