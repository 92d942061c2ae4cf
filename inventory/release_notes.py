"""`release-notes` and `sweep`: what changes between two converter releases, probe by probe.

release-notes walks the fix records between two releases and runs each fix's regimes; sweep
ignores the records, runs every regime in the library, and then says which changes no record
explains. Both return plain data; renderers live in `inventory/report/`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from inventory.errors import UsageError
from inventory.policy import Policy
from inventory.registry import UNKNOWN, Bundle
from inventory.verdict import ProbeVerdict, judge
from oracle import asset_probe
from oracle.envs import Catalog, version_key
from oracle.fixes import Fix, between
from oracle.load_check import LoadCheck, load_check
from oracle.regimes import Regime, for_constructs
from oracle.results import Identity, ProbeResult
from oracle.runtimes import cores
from oracle.session import Session
from oracle.spec import Pipeline, ProbeSpec

# What asset and pipeline records are probed with: the asset probe, in both float dtypes the
# registry's bundles ship.
ASSET_DTYPES = ("float32", "float16")


def asset_regimes() -> list[Regime]:
    return [Regime(asset_probe.CONSTRUCT, f"asset-probe-{dtype}",
                   ProbeSpec(asset_probe.CONSTRUCT, dict(asset_probe.DEFAULT_PARAMS), dtype,
                             Pipeline()), False, None)
            for dtype in ASSET_DTYPES]


@dataclass(frozen=True)
class RegimeOutcome:
    regime: Regime
    result: ProbeResult
    verdict: ProbeVerdict


@dataclass(frozen=True)
class FixNotes:
    fix: Fix
    outcomes: tuple[RegimeOutcome, ...]
    bundles: tuple[str, ...]  # registry bundles whose traced graph holds a touched construct
    # asset records: (old release's check, new release's check) of the asset probe per dtype
    loads: tuple[tuple[LoadCheck, LoadCheck], ...] = ()


@dataclass(frozen=True)
class ReleaseNotes:
    old: str
    new: str
    fixes: tuple[FixNotes, ...]

    @property
    def runtimes(self) -> tuple[str, ...]:
        return tuple(sorted({o.result.measurement.runtime for f in self.fixes
                             for o in f.outcomes
                             if o.result.measurement and o.result.measurement.ok}))


@dataclass(frozen=True)
class SweepFinding:
    outcome: RegimeOutcome
    explained_by: tuple[str, ...]  # fix ids whose constructs and release range cover it


@dataclass(frozen=True)
class Sweep:
    old: str
    new: str
    probed: int
    changed: tuple[SweepFinding, ...]  # shipped graph differs, or one side cannot convert
    unchanged: int
    # both releases fail the same way: a standing limitation, not a change
    failing_both: tuple[RegimeOutcome, ...] = ()

    @property
    def unexplained(self) -> tuple[SweepFinding, ...]:
        return tuple(f for f in self.changed if not f.explained_by)


def _check_pair(old: str, new: str, catalog: Catalog) -> None:
    catalog.release(old)
    catalog.release(new)
    if version_key(new) <= version_key(old):
        raise UsageError(f"--to {new} must be a later release than --from {old}")


def _run(regimes: list[Regime], old: str, new: str, catalog: Catalog, policy: Policy,
         use_cache: bool, progress: Callable[[str], None]) -> dict[str, RegimeOutcome]:
    out: dict[str, RegimeOutcome] = {}
    with Session(catalog, progress) as session:
        old_env, new_env = session.env(old), session.env(new)
        for i, regime in enumerate(regimes, start=1):
            progress(f"[{i}/{len(regimes)}] {regime.id} under {old} and {new}")
            result = session.compare(regime.spec, old_env, new_env, use_cache=use_cache)
            tuned = Policy(policy.tolerance, policy.override if policy.override is not None
                           else regime.tolerance)
            out[regime.id] = RegimeOutcome(regime, result, judge(result, tuned))
    return out


def _holders(bundles: list[Bundle], constructs: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(b.name for b in bundles if any(i.kind in constructs for i in b.instances))


def _exported_before(bundles: list[Bundle], release: str) -> tuple[str, ...]:
    """An asset or pipeline change concerns every bundle exported before it (or by an exporter
    the registry does not know)."""
    return tuple(b.name for b in bundles if b.exporter.converter == UNKNOWN
                 or version_key(b.exporter.converter) < version_key(release))


def _regimes_of(fix: Fix, regimes: list[Regime]) -> list[Regime]:
    """A lowering's regimes are its constructs'; a pipeline change is probed with the asset
    probe; an asset change by load checks (no program comparison)."""
    if fix.kind == "pipeline":
        return asset_regimes()
    return for_constructs(regimes, fix.constructs)


def _load_checks(old: str, new: str, catalog: Catalog, use_cache: bool,
                 progress: Callable[[str], None]) -> tuple[tuple[LoadCheck, LoadCheck], ...]:
    out = []
    with Session(catalog, progress) as session:
        envs = (session.env(old), session.env(new))
        for regime in asset_regimes():
            progress(f"load checks of {regime.name} written by {old} and {new}")
            old_check, new_check = (load_check(regime.spec, env, cores(catalog), session,
                                               use_cache) for env in envs)
            out.append((old_check, new_check))
    return tuple(out)


def release_notes(old: str, new: str, fixes: list[Fix], regimes: list[Regime],
                  bundles: list[Bundle], catalog: Catalog, policy: Policy,
                  use_cache: bool = True,
                  progress: Callable[[str], None] = lambda _: None) -> ReleaseNotes:
    _check_pair(old, new, catalog)
    chosen = between(fixes, old, new)
    wanted: list[Regime] = []
    for fix in chosen:
        for regime in _regimes_of(fix, regimes):
            if regime not in wanted:
                wanted.append(regime)
    outcomes = _run(wanted, old, new, catalog, policy, use_cache, progress)
    loads = (_load_checks(old, new, catalog, use_cache, progress)
             if any(f.kind == "asset" for f in chosen) else ())
    notes = tuple(
        FixNotes(fix, tuple(outcomes[r.id] for r in _regimes_of(fix, regimes)),
                 _holders(bundles, fix.constructs) if fix.kind == "lowering"
                 else _exported_before(bundles, fix.ships_in),
                 loads if fix.kind == "asset" else ())
        for fix in chosen
    )
    return ReleaseNotes(old, new, notes)


def _failing_both(result: ProbeResult) -> bool:
    return (result.shipped == Identity.BOTH_CANNOT_CONVERT
            and result.old.error == result.new.error)


def _changed(result: ProbeResult) -> bool:
    return result.shipped != Identity.IDENTICAL and not _failing_both(result)


def sweep(old: str, new: str, fixes: list[Fix], regimes: list[Regime], catalog: Catalog,
          policy: Policy, use_cache: bool = True,
          progress: Callable[[str], None] = lambda _: None) -> Sweep:
    _check_pair(old, new, catalog)
    outcomes = _run(regimes, old, new, catalog, policy, use_cache, progress)
    in_range = between(fixes, old, new)
    changed = tuple(
        SweepFinding(o, tuple(f.id for f in in_range if o.regime.construct in f.constructs))
        for o in outcomes.values() if _changed(o.result)
    )
    failing = tuple(o for o in outcomes.values() if _failing_both(o.result))
    return Sweep(old, new, len(outcomes), changed, len(outcomes) - len(changed) - len(failing),
                 failing)
