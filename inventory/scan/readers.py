"""Reading a bundle's program with coreai-core's own parser, in a contained subprocess per
environment: which core reads it first, which next, and what failed on the way."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from inventory.scan.bundles import (
    check_contained,
    check_program,
    core_of_producer,
    file_digests,
    iso_date,
    read_metadata,
)
from inventory.scan.ir import absorb
from inventory.scan.model import BundleError, BundleScan
from oracle.catalog import Catalog, EnvError, RunFault
from oracle.catalog import cores as runtime_catalog
from oracle.clients import ScanWorker
from oracle.envs import Env
from oracle.executors import BundleRead, Call, Ship
from oracle.infra import Progress, cache_root, safe_name
from oracle.session import Session


def core_order(catalog: Catalog) -> list[str]:
    """Distinct coreai-core releases of the catalog, oldest first (the runtime catalog)."""
    return runtime_catalog(catalog)


def reader_plan(producer_core: str | None, catalog: Catalog) -> list[tuple[str, str]]:
    """(core, why) in the order to try them."""
    cores = core_order(catalog)
    if producer_core is None:
        first = cores[0]
        return [(first, f"no producer: a coreai-core {first} era bundle")] + [
            (c, "fallback") for c in cores[1:]
        ]
    if producer_core in cores:
        return [(producer_core, "the producer's own core")] + [
            (c, "fallback") for c in reversed(cores) if c != producer_core
        ]
    return [
        (c, f"producer coreai-core {producer_core} has no environment; fallback")
        for c in reversed(cores)
    ]


class Readers:
    """One scan worker per environment, started when first needed."""

    def __init__(self, catalog: Catalog, progress: Progress, reader: str | None = None) -> None:
        self.catalog = catalog
        self.forced = reader
        self.run = time.strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
        self.log_dir = cache_root() / "logs" / "scan"
        self.session = Session(catalog, progress, self.log_dir, ScanWorker, "scan-worker")
        self.reads = 0  # each read's log folder is its own: a cluster writes it back whole

    def plan(self, producer_core: str | None) -> Iterator[tuple[Env | None, str, str]]:
        """(environment, core, why) in the order to try; an environment is found or built only
        when its turn comes, and one that cannot be built is (None, core, the reason)."""
        if self.forced:
            env = self.session.env(self.forced)
            yield env, env.packages.get("coreai-core", env.core), f"--reader {self.forced}"
            return
        for core, why in reader_plan(producer_core, self.catalog):
            try:
                env = self.session.env_for_core(core)
            except EnvError as exc:
                yield None, core, f"no environment: {exc}"
                continue
            yield env, env.packages.get("coreai-core", env.core), why

    def read(self, bundle: Path, env: Env) -> dict[str, Any]:
        """`env`'s coreai-core reads the bundle (`reads`)."""
        [answer] = self.reads_of([(bundle, env)])
        return answer

    def reads_of(self, items: list[tuple[Path, Env]]) -> list[dict[str, Any]]:
        """Each bundle read by its environment's coreai-core, handed to the run's executor as
        one batch (here one per core at a time; on a cluster the bundles travel to the nodes
        and the reads' logs come back); each read keeps its log in a folder of its own."""
        unbuilt: dict[int, dict[str, Any]] = {}
        for i, (_bundle, env) in enumerate(items):
            try:
                # built now that a read must happen: one that cannot be is this read's
                # failure (the bundle's plan goes on to its next core), never the run's
                self.session.ready(env)
            except RunFault:
                raise  # an environment that cannot run its worker: the run's error
            except EnvError as exc:
                unbuilt[i] = {"ok": False, "stage": "environment", "error": f"{UNBUILT}{exc}"}
        built = [item for i, item in enumerate(items) if i not in unbuilt]
        answered = iter(self._reads(built))
        return [unbuilt[i] if i in unbuilt else next(answered) for i in range(len(items))]

    def _reads(self, items: list[tuple[Path, Env]]) -> list[dict[str, Any]]:
        outs = []
        calls = []
        for bundle, env in items:
            self.reads += 1
            name = f"{self.run}-read{self.reads}-{safe_name(bundle.name)}-{env.name}"
            outs.append(self.log_dir / name)
            request = {"op": "read", "bundle": str(bundle.resolve()), "out": str(outs[-1])}
            calls.append(Call("scan", env, request, ship=(Ship("bundle"),)))
        answers = (
            self.session.calls(calls, BundleRead.decode, self.session.runs_at_once) if calls else []
        )
        return [
            _answered(answer, env, out / "read.log")
            for (_bundle, env), out, answer in zip(items, outs, answers, strict=True)
        ]

    def close(self) -> None:
        self.session.close()


def _answered(answer: BundleRead, env: Env, log: Path) -> dict[str, Any]:
    """A read's answer (the worker's own form, which scan reports from), its failure explained
    by the last error line the core printed."""
    read = answer.envelope
    if read.died:  # the core died reading it, or did not answer
        native = _native_error(log)
        died = str(read.error).split(" (log:")[0].replace(f"{env.name} worker ", "")
        return {
            "ok": False,
            "stage": "native",
            "log": str(log),
            "error": printable(f"{native} ({died})" if native else died),
        }
    out = {k: v for k, v in answer.wire.items() if k != "wall_seconds"}
    if not read.ok:
        native = _native_error(log)
        error = f"{read.error}; {native}" if native else str(read.error)
        out["error"] = printable(error)
    out["log"] = str(log)
    return out


def printable(text: str) -> str:
    """A core's error line as it may reach a terminal: what it quotes from the bundle (an asset
    version, a name) can hold control characters, which are escaped, never printed raw."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _native_error(log: Path) -> str:
    """The last `error:` line coreai-core printed while reading one bundle."""
    try:
        with open(log, "rb") as handle:
            text = handle.read(1 << 20).decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if ln.startswith("error:") or ": error:" in ln]
    pick = (
        errors[-1]
        if errors
        else next(
            (ln for ln in reversed(lines) if ln.startswith(("what():", "terminate called"))), ""
        )
    )
    pick = pick.split(": error:", 1)[-1].removeprefix("error:").strip()
    return pick[:200]


# A read that could not happen because its environment could not be built (a lock held too
# long, a failed download): no answer about the bundle, so the scan is inconclusive, not a
# bundle that cannot be read
UNBUILT = "environment not built: "


def scan_bundles(bundles: list[Path], readers: Readers) -> list[BundleScan]:
    """Each bundle checked as files, then read: every bundle's first choice of core in one
    batch; a bundle that core cannot read is tried with the next ones, one after another."""
    scans = [_checked(bundle) for bundle in bundles]
    plans = {i: readers.plan(s.producer_core) for i, s in enumerate(scans) if s.error is None}
    failures: dict[int, list[tuple[str, str]]] = {i: [] for i in plans}
    firsts: dict[int, tuple[Env, str, str]] = {}
    for i, plan in plans.items():
        for env, core, why in plan:
            if env is not None:
                firsts[i] = (env, core, why)
                break
            failures[i].append((core, why))
    answers = readers.reads_of([(bundles[i], env) for i, (env, _c, _w) in firsts.items()])
    for (i, (env, core, why)), answer in zip(firsts.items(), answers, strict=True):
        if _took(scans[i], bundles[i], answer, env, core, why, failures[i]):
            continue
        for env_next, core_next, why_next in plans[i]:  # the rest of its plan
            if env_next is None:
                failures[i].append((core_next, why_next))
                continue
            again = readers.read(bundles[i], env_next)
            if _took(scans[i], bundles[i], again, env_next, core_next, why_next, failures[i]):
                break
    for i in plans:
        if not scans[i].reader and scans[i].error is None:
            scans[i].attempts = [f"coreai-core {c}: {e}" for c, e in failures[i]]
            scans[i].error = _read_failure(bundles[i], failures[i])
            scans[i].unbuilt = all(e.startswith(UNBUILT) for _c, e in failures[i])
    return scans


def _checked(bundle: Path) -> BundleScan:
    """What the bundle's files say (metadata, integrity, digests, producer), read here before
    any core reads it; `error` set when they cannot be read."""
    scan = BundleScan(path=str(bundle), name=bundle.name)
    try:
        check_contained(bundle)  # before any file is read here or by a core
        scan.metadata = read_metadata(bundle)
        scan.integrity = check_program(bundle)
        scan.files = file_digests(bundle)
    except BundleError as exc:
        scan.error = str(exc)
        return scan
    producer = scan.metadata.get("producer")
    scan.producer = producer if isinstance(producer, str) and producer else None
    scan.producer_core = core_of_producer(scan.producer)
    scan.asset_version = (
        str(scan.metadata["assetVersion"]) if "assetVersion" in scan.metadata else None
    )
    scan.created = iso_date(scan.metadata.get("creationDate"))
    if scan.producer is None:
        scan.notes.append(
            "no producer in metadata.json: written by coreai-core 1.0.0b1 "
            "(coreai-torch 0.4.0), which stamps none, or edited afterwards"
        )
    if scan.created is None:
        scan.notes.append("no creationDate in metadata.json")
    if "no main.hash" in scan.integrity:
        scan.notes.append(scan.integrity)
    return scan


def _took(
    scan: BundleScan,
    bundle: Path,
    answer: dict[str, Any],
    env: Env,
    core: str,
    why: str,
    failures: list[tuple[str, str]],
) -> bool:
    """Whether `core` read the bundle: then its answer fills the scan; else its error joins
    `failures`."""
    if not answer.get("ok"):
        failures.append((core, str(answer.get("error", "failed"))))
        return False
    own = scan.producer_core
    scan.reader = {"core": core, "env": env.name, "why": why, "log": answer.get("log")}
    scan.attempts = [f"coreai-core {c}: {e}" for c, e in failures]
    if own and core != own and any(c == own for c, _e in failures):
        scan.notes.append(
            f"the producer names coreai-core {own}, which cannot read "
            f"it; metadata.json may have been edited"
        )
    try:
        absorb(scan, answer)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        scan.error = (
            f"{bundle}: coreai-core {core} gave an answer this scanner does "
            f"not understand ({type(exc).__name__}: {exc})"
        )
    return True


def _read_failure(bundle: Path, failures: list[tuple[str, str]]) -> str:
    errors = {e for _c, e in failures}
    cores = ", ".join(c for c, _e in failures)
    if len(errors) == 1:
        detail = errors.pop()
        hint = ": truncated or corrupt" if "parse" in detail or "bytecode" in detail else ""
        return f"{bundle / 'main.mlirb'}: coreai-core {cores} cannot read it: {detail}{hint}"
    detail = "; ".join(f"{c}: {e}" for c, e in failures)
    return f"{bundle / 'main.mlirb'}: no coreai-core could read it ({detail})"
