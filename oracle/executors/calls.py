"""A call: one request to an in-environment worker that is not a probe comparison (for `verify`:
a whole program converted, an asset run, regions cut out of a program; for `scan`: a bundle read,
an asset loaded on each runtime; for `repair`: an asset's locations rewritten, re-saved and run),
handed to the session's executor like a comparison, so a cluster runs it on a node.

The request names its input files by path; `ship` says which fields those are, so an executor
that runs it elsewhere can send their bytes with it (`ray_node.CallJob`) and write the files the
worker leaves in `out` back there. Here, each call is answered by a worker of the session's
pools, several at once when the caller allows it. A worker that dies or does not answer is an
answer too (`stage: worker`), as each caller stored it before calls went through the executor.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from oracle.clients.worker_clients import AssetWorker, CutWorker, ProgramWorker, ScanWorker
from oracle.clients.worker_pool import Pool, Worker, WorkerFailure
from oracle.envs.environment import Env

# a call's worker -> its client class, its log suffix and the ledger's name for its jobs
WORKERS: dict[str, tuple[type[Worker], str, str]] = {
    "program": (ProgramWorker, "program", "program-conversion"),
    "asset": (AssetWorker, "asset", "asset-run"),
    "cut": (CutWorker, "cut", "region-cut"),
    "scan": (ScanWorker, "scan-worker", "bundle-read"),
}


class Pools(Protocol):
    """Where a call's worker comes from (a session, a node agent)."""

    def pool_of(self, worker: type[Worker], log_suffix: str) -> Pool: ...


@dataclass(frozen=True)
class Ship:
    """A request field naming an input: a file, or a folder of which only the files matching
    `glob` are read (an asset run reads a folder's `*.inputs.safetensors`, not its program)."""

    name: str
    glob: str = "**/*"


@dataclass(frozen=True)
class Call:
    worker: str  # a key of WORKERS
    env: Env
    request: dict[str, Any]  # the worker's request; `out` is where it writes
    ship: tuple[Ship, ...] = ()
    timeout: float | None = None
    # after a failure, ask whether the environment itself cannot run the worker: its answer
    # then carries `environment_fault`, which a caller raises rather than report as an outcome
    faults: bool = False

    @property
    def out(self) -> Path:
        return Path(self.request["out"])

    def shipped(self) -> tuple[Ship, ...]:
        """The shipped fields this request sets (an asset run without seeded inputs has none)."""
        return tuple(s for s in self.ship if self.request.get(s.name) is not None)


def worker_failure(error: str) -> dict[str, Any]:
    """The answer of a call whose worker died, did not answer, or never ran it."""
    return {"ok": False, "stage": "worker", "error": error}


def answered(call: Call, pools: Pools) -> dict[str, Any]:
    """One call run by a worker of its environment from `pools`, with the seconds it took
    (`wall_seconds`: a batch's calls each measured on their own)."""
    client, suffix, _kind = WORKERS[call.worker]
    start = time.perf_counter()
    pool = pools.pool_of(client, suffix)
    try:
        answer = pool.worker(call.env).call(call.request, timeout=call.timeout)
    except WorkerFailure as exc:
        answer = worker_failure(str(exc))
    if call.faults and not answer.get("ok"):
        fault = pool.first(call.env).environment_fault()
        if fault is not None:
            answer = {**answer, "environment_fault": fault}
    return {**answer, "wall_seconds": time.perf_counter() - start}


def answered_here(
    calls: Sequence[Call],
    pools: Pools,
    at_once: int,
    each: Callable[[int, Call], dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Each call answered by this machine's workers, up to `at_once` at a time (each in its own
    environment's worker: a batch's calls name distinct environments where they run at once).
    `each(i, call)`: how the i-th is answered (the local executor's, which keeps a ledger)."""
    one = each or (lambda _i, c: answered(c, pools))
    if at_once <= 1 or len(calls) <= 1:
        return [one(i, c) for i, c in enumerate(calls)]
    with ThreadPoolExecutor(max_workers=min(at_once, len(calls))) as ex:
        return list(ex.map(one, range(len(calls)), calls))


# ---- a call's files, to send them to another machine ---------------------------------------------


def files_of(path: Path, glob: str) -> dict[str, bytes]:
    """The bytes a shipped field names: a file's (under its own name), or a folder's files
    matching `glob` (relative to it)."""
    if path.is_file():
        return {path.name: path.read_bytes()}
    if not path.is_dir():
        return {}
    return {
        str(p.relative_to(path)): p.read_bytes() for p in sorted(path.glob(glob)) if p.is_file()
    }
