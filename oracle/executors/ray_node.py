"""What runs on a cluster node, in the tool's own interpreter: one `NodeAgent` per node (the
driver makes it a Ray actor pinned there; this module never imports ray, so it is plain code).

The agent builds or reuses each release's environment on its node (`ensure_env`, in the node's
own INVENTORY_CACHE) and keeps one long-lived JSON-lines worker per release
(`oracle.clients.worker_pool`), exactly as a local run does. A job is one comparison, computed in
a temp folder of the node (`compare.compute`), or one load check (`asset_checks.make`: the
exporter's asset on each runtime, in the environments the driver names), returned whole,
evidence bytes included: the driver alone writes the store. Before its first job of a release
the agent says what it runs: its host, the tool's code digest and the package versions read
inside that release's environment, so the driver can refuse a node that would compute other
results under the same key.
"""

from __future__ import annotations

import functools
import json
import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from oracle.catalog.releases import EnvError, load_catalog
from oracle.clients.worker_pool import TEMP, EnvironmentFault, Pool, Worker
from oracle.compare.results import ProbeResult
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env, ensure_env
from oracle.executors.answers import Decode
from oracle.executors.asset_checks import make, runtime_identities
from oracle.executors.calls import Call, answered, answered_here, files_of
from oracle.executors.comparison import compute
from oracle.infra.digests import files_digest
from oracle.infra.paths import cache_root, moved
from oracle.store import result_store as store
from oracle.store.load_records import LoadCheck, check_dir, relocated

A = TypeVar("A")

# A job's evidence paths travel relative to this anchor (never a real folder), so the driver
# can put them in its own temp folder: `store.relocated` maps one folder onto another.
ANCHOR = Path("/inventory-job")
_OWN = Path(__file__).resolve().parents[1]  # the whole oracle package
# Read inside an environment: what it really has installed, not what its manifest says.
_VERSIONS = (
    "import importlib.metadata as m, json, sys\n"
    "out = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        out[name] = m.version(name)\n"
    "    except m.PackageNotFoundError:\n"
    "        out[name] = '?'\n"
    "print(json.dumps(out))\n"
)
_PACKAGES = ("coreai-torch", "coreai-core", "torch", "numpy")


@functools.cache
def tool_digest() -> str:
    """sha256 of the oracle's code and data (every .py and .toml under oracle/): a node whose
    copy differs would store other results under the same key."""
    return files_digest(
        _OWN,
        sorted(
            p
            for p in _OWN.rglob("*")
            if p.suffix in (".py", ".toml") and "__pycache__" not in p.parts
        ),
    )[:16]


def installed(env: Env, timeout: float = 120) -> dict[str, str]:
    """The versions of the packages a result is keyed on, read inside the environment."""
    try:
        proc = subprocess.run(
            [str(env.python), "-c", _VERSIONS, *_PACKAGES],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise EnvError(f"{env.name}: cannot read its package versions ({exc})") from None
    if proc.returncode != 0:
        raise EnvError(
            f"{env.name}: cannot read its package versions "
            f"({(proc.stderr.strip().splitlines() or ['?'])[-1]})"
        )
    return json.loads(proc.stdout)


@dataclass(frozen=True)
class Job:
    """One comparison: a probe under a release pair, and the store key the driver expects."""

    spec: ProbeSpec
    old: str
    new: str
    key: str


@dataclass(frozen=True)
class LoadJob:
    """One load check: the asset `exporter` writes for `spec`, on each runtime of `cores`, run
    in the environment of the release the driver chose for it (`runtimes`: core -> release), or
    not run where the driver has none (`unavailable`: core -> why); the key the driver expects."""

    spec: ProbeSpec
    exporter: str
    cores: tuple[str, ...]
    runtimes: tuple[tuple[str, str], ...]
    unavailable: tuple[tuple[str, str], ...]
    key: str

    @property
    def releases(self) -> set[str]:
        return {self.exporter, *(release for _, release in self.runtimes)}


@dataclass(frozen=True)
class CallJob:
    """One call (`oracle/executors/calls.py`) of a whole-program check: the worker, the release
    whose environment runs it, its request, the fields naming its inputs (whose files come as
    the job's arguments: `file` the name of a shipped file, empty for a folder), and a key of
    its own for the ledger and retries (a call is stored by its caller, not by key)."""

    worker: str
    release: str
    request: dict[str, Any]
    inputs: tuple[tuple[str, str], ...]  # (field, file name or "" for a folder)
    timeout: float | None
    key: str
    faults: bool = False  # Call.faults: an environment fault comes back with the answer


class _JobRuntimes:
    """A load job's runtimes on this node: each core in the environment of the release the
    driver chose (so both key the check alike), the agent's workers."""

    def __init__(self, agent: NodeAgent, job: LoadJob) -> None:
        self.agent = agent
        self.runtimes = dict(job.runtimes)
        self.unavailable = dict(job.unavailable)

    def env_for_core(self, core: str) -> Env:
        if core in self.unavailable:
            raise EnvError(self.unavailable[core])
        return self.agent.env(self.runtimes[core])

    def ready(self, env: Env) -> Env:
        return env  # the agent's environments are built when it takes them (`env_for_core`)

    def pool_of(self, worker: type[Worker], log_suffix: str) -> Pool:
        return self.agent.pool_of(worker, log_suffix)

    def calls(self, calls: Sequence[Call], decode: Decode[A], at_once: int = 1) -> list[A]:
        """A check's runs, by this node's workers (the job is already on its node)."""
        return [decode(answer) for answer in answered_here(calls, self, at_once)]


def written(files: dict[str, bytes], work: Path) -> None:
    for rel, data in files.items():
        target = (work / rel).resolve()
        if not target.is_relative_to(work.resolve()):  # a path from elsewhere stays out
            raise EnvError(f"a node returned a file outside its job folder: {rel}")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)


def pack_check(check: LoadCheck, work: Path) -> tuple[LoadCheck, dict[str, bytes]]:
    """A check made in `work`, its paths moved under ANCHOR, and every file's bytes."""
    return relocated(check, work, ANCHOR), files_of(work, "**/*")


def unpack_check(check: LoadCheck, files: dict[str, bytes], work: Path) -> LoadCheck:
    """The files written into `work` (the driver's temp folder), the check pointing there."""
    written(files, work)
    return relocated(check, ANCHOR, work)


def pack(result: ProbeResult, work: Path) -> tuple[ProbeResult, dict[str, bytes]]:
    """A result computed in `work`, with its paths moved under ANCHOR, and every file's bytes."""
    return store.relocated(result, work, ANCHOR), files_of(work, "**/*")


def unpack(result: ProbeResult, files: dict[str, bytes], work: Path) -> ProbeResult:
    """The files written into `work` (the driver's temp folder), the result pointing there."""
    written(files, work)
    return store.relocated(result, ANCHOR, work)


class NodeAgent:
    """A node's side of the executor: its environments, its workers, its jobs one at a time."""

    def __init__(self) -> None:
        self.catalog = load_catalog()
        self.pool = Pool(cache_root() / "logs", Worker, "ray-worker")
        self.pools: dict[type[Worker], Pool] = {}  # the asset worker's, for load checks
        self.envs: dict[str, Env] = {}
        # named `<pid>-...` like a worker's: a killed agent's folder is reclaimed by the next run
        self.root = cache_root() / TEMP / f"{os.getpid()}-ray-{secrets.token_hex(4)}"

    def env(self, release: str) -> Env:
        if release not in self.envs:
            self.envs[release] = ensure_env(release, self.catalog)
        return self.envs[release]

    def pool_of(self, worker: type[Worker], log_suffix: str) -> Pool:
        if worker is Worker:
            return self.pool
        if worker not in self.pools:
            self.pools[worker] = Pool(cache_root() / "logs", worker, f"ray-{log_suffix}")
        return self.pools[worker]

    def identity(self, releases: list[str]) -> dict[str, Any]:
        """What this node runs: host, pid, the tool's digests, and per release the packages
        read inside its environment (built here first if need be)."""
        return {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "tool": tool_digest(),
            "code": store.code_digest(),
            "packages": {r: installed(self.env(r)) for r in releases},
        }

    def run(self, job: Job | LoadJob | CallJob, *shipped: dict[str, bytes]) -> dict[str, Any]:
        """One comparison, load check or call: the result and its evidence, or why it could not
        run (an environment fault, said as the local executor says it). `shipped`: a call's
        input files, one mapping per input field (Ray passes them as their own objects, so a
        program several calls read crosses to a node once)."""
        started = time.monotonic()
        work = self.root / secrets.token_hex(6)
        work.mkdir(parents=True)
        try:
            if isinstance(job, CallJob):
                return self._call(job, shipped, work, started)
            if isinstance(job, LoadJob):
                return self._load_check(job, work, started)
            old, new = self.env(job.old), self.env(job.new)
            key = store.result_dir(job.spec, old, new).name
            if key != job.key:
                return {
                    "ok": False,
                    "kind": "mismatch",
                    "error": f"this node keys the result {key}, the driver {job.key}",
                }
            result, files = pack(compute(job.spec, old, new, self.pool, work), work)
            return {
                "ok": True,
                "result": result,
                "files": files,
                "seconds": time.monotonic() - started,
            }
        except EnvironmentFault as exc:
            return {"ok": False, "kind": "environment", "error": str(exc)}
        except EnvError as exc:
            return {"ok": False, "kind": "env", "error": str(exc)}
        finally:
            shutil.rmtree(work, ignore_errors=True)

    def _call(
        self, job: CallJob, shipped: tuple[dict[str, bytes], ...], work: Path, started: float
    ) -> dict[str, Any]:
        """The request run with its inputs written in `work/in` and its outputs in `work/out`;
        the answer's paths moved under ANCHOR, the outputs' bytes returned (also those a
        worker wrote before it died: a run's caller reads them)."""
        request = dict(job.request)
        back: dict[str, str] = {}
        for (name, file), files in zip(job.inputs, shipped, strict=True):
            folder = work / "in" / name
            folder.mkdir(parents=True)
            written(files, folder)
            here = folder / file if file else folder
            request[name] = str(here)
            back[str(here)] = (
                str(ANCHOR / "in" / name / file) if file else str(ANCHOR / "in" / name)
            )
        out = work / "out"
        out.mkdir()
        request["out"] = str(out)
        back[str(out)] = str(ANCHOR / "out")
        call = Call(
            job.worker, self.env(job.release), request, timeout=job.timeout, faults=job.faults
        )
        answer = moved(answered(call, self), back)
        if not answer.get("ok") and answer.get("stage") == "worker":
            # the worker's log it names is a file of this node, not of the driver's machine
            answer["error"] = f"{answer.get('error')} on {socket.gethostname()}"
        return {
            "ok": True,
            "answer": answer,
            "files": files_of(out, "**/*"),
            "seconds": time.monotonic() - started,
        }

    def _load_check(self, job: LoadJob, work: Path, started: float) -> dict[str, Any]:
        exporter, runtimes = self.env(job.exporter), _JobRuntimes(self, job)
        cores = list(job.cores)
        ids = runtime_identities(cores, runtimes)
        assert ids is not None  # only a legacy identity waits for a build
        key = check_dir(job.spec, exporter, ids).name
        if key != job.key:
            return {
                "ok": False,
                "kind": "mismatch",
                "error": f"this node keys the load check {key}, the driver {job.key}",
            }
        check, files = pack_check(make(job.spec, exporter, cores, runtimes, work), work)
        return {"ok": True, "check": check, "files": files, "seconds": time.monotonic() - started}

    def close(self) -> None:
        self.pool.close()
        for pool in self.pools.values():
            pool.close()
        shutil.rmtree(self.root, ignore_errors=True)
