"""The Ray executor: a run's comparisons and load checks on the nodes of a Ray cluster, results
stored here.

The driver (this process) keys every job as a local run would (`store.result_dir`, from its own
environments' packages and the oracle's code) and dispatches only jobs whose result is not
stored. A job is one comparison (or one load check: `load_check`), run by a `NodeAgent` actor
(`ray_node.py`) pinned to a node: one agent per node (per two CPUs of a larger node), each with
one long-lived worker per release in that release's environment on its node. At most
`IN_FLIGHT` jobs wait per agent, so the queue stays with the driver and a dying node takes few
jobs with it. The result comes back with
its evidence, and the driver publishes it with the store's atomic rename: one writer, no lock
spanning machines.

Faults: an agent that dies (its node lost, killed) or exceeds its job limit has its jobs sent to
the other agents (at most `ATTEMPTS` tries each); a job no agent could run is answered as a
worker failure (inconclusive) and not stored. A head node that is gone (its GCS port refuses
connections while jobs wait) ends the dispatch: every job not answered is inconclusive, said in
one line, and no later job is sent (Ray would otherwise retry the lost head for minutes). An
agent that cannot get ready within its limit (an environment build can hang rather than fail) is
left out. A node whose code or packages differ from the driver's is refused in one line: it
would store other results under the same key. An error of Ray's own on the driver (its object
store full, its disk over Ray's threshold, an object lost) is a fault of the cluster: one line,
`ExecutorError`. Every wait has a limit
(`INVENTORY_RAY_SETUP_TIMEOUT`, `INVENTORY_RAY_JOB_TIMEOUT`).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import logging
import os
import secrets
import signal
import socket
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oracle.catalog.releases import EnvError, base_version
from oracle.clients.worker_pool import EnvironmentFault, Pool
from oracle.compare.results import Identity, ProbeResult, Side
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.envs.installer import extra_command
from oracle.executors.api import (
    Comparison,
    ExecutorError,
    Landed,
    LoadRequest,
    Oracle,
    no_follow_ups,
)
from oracle.executors.api import (
    Job as Asked,
)
from oracle.executors.calls import WORKERS, Call, Pools, files_of, worker_failure
from oracle.executors.ray_address import check_gcs, given
from oracle.executors.ray_errors import remote_error
from oracle.executors.ray_node import (
    ANCHOR,
    CallJob,
    Job,
    LoadJob,
    NodeAgent,
    tool_digest,
    unpack,
    unpack_check,
    written,
)
from oracle.infra.paths import moved, runs_dir
from oracle.infra.progress import Progress
from oracle.infra.settings import seconds
from oracle.store import result_store as store
from oracle.store.load_records import LoadCheck, RuntimeOutcome

if TYPE_CHECKING:
    from oracle.executors.asset_checks import Runtimes

AnyJob = Job | LoadJob | CallJob

IN_FLIGHT = 2  # jobs sent to one agent at a time: one running, one waiting behind it
ATTEMPTS = 3  # tries of one job, on different agents, before it is answered inconclusive
NAMESPACE = "inventory"


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise ExecutorError(
            f"--executor ray needs the ray extra (in the checkout: {extra_command('ray')}): {exc}"
        ) from None
    return ray


_connected: str | None = None
# ray.init retries an address 20 times (RAY_NUM_REDIS_GET_RETRIES, each attempt up to 35 s on a
# server that is not a GCS); the address answered as a gRPC server just before, so one attempt
# is enough, unless the user set the budget (RAY_gcs_server_port_wait_time_s) themselves
_ATTEMPTS_VAR = "RAY_gcs_server_port_wait_time_s"


def connect(address: str | None) -> str:
    """Join the cluster once per process; ExecutorError (one line) when the address is not one
    (its form, checked before Ray is imported), the extra is missing, or no Ray GCS answers
    there within the bounds of `ray_address.check_gcs`."""
    global _connected
    address = given(address, "ray")
    assert address is not None  # given() refuses a ray run without one
    ray = _import_ray()
    if _connected == address:
        return address
    joined = _auto(address) if address == "auto" else address
    check_gcs(joined)
    try:
        with _joining(ray):
            ray.init(
                address=joined,
                namespace=NAMESPACE,
                log_to_driver=False,
                logging_level=logging.ERROR,
                configure_logging=False,
            )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ExecutorError(f"cannot join the Ray cluster at {address}: {line}") from None
    _connected = address
    _messages_to_the_ledger()
    atexit.register(_shutdown)
    return address


def _auto(address: str) -> str:
    """The address `auto` stands for (the cluster this machine started last), as Ray finds it;
    checked like any other before Ray joins it (a cluster gone leaves its address behind)."""
    try:
        from ray._private.services import canonicalize_bootstrap_address_or_die

        return str(canonicalize_bootstrap_address_or_die(address))
    except ImportError:
        return address  # where Ray moved it, ray.init finds it itself
    except (ConnectionError, ValueError) as exc:
        line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ExecutorError(f"cannot join the Ray cluster at {address}: {line}") from None


@contextlib.contextmanager
def _joining(ray: Any) -> Iterator[None]:
    """ray.init with one attempt at the GCS (see _ATTEMPTS_VAR) and the run's own SIGTERM
    handler kept: Ray installs one of its own (`sys.exit(15)`, no line, workers left to their
    watchdog) while it joins and for the rest of the run; the run's (`inventory.signals`: exit
    143, one line, every worker killed) stays in place throughout."""
    utils = getattr(getattr(ray, "_private", None), "utils", None)
    setter = getattr(utils, "set_sigterm_handler", None)
    if callable(setter):
        utils.set_sigterm_handler = lambda handler: None  # type: ignore[union-attr]
    main = threading.current_thread() is threading.main_thread()
    handler = signal.getsignal(signal.SIGTERM) if main else None
    unset = _ATTEMPTS_VAR not in os.environ
    if unset:
        os.environ[_ATTEMPTS_VAR] = "1"
    try:
        yield
    finally:
        if unset:
            os.environ.pop(_ATTEMPTS_VAR, None)
        if callable(setter):
            utils.set_sigterm_handler = setter  # type: ignore[union-attr]
        if handler is not None:
            signal.signal(signal.SIGTERM, handler)


def _messages_to_the_ledger() -> None:
    """Ray's driver prints the cluster's error messages (a dead raylet's last 20 log lines, 46
    lines in all) to standard output whatever `log_to_driver` says: they go to the run's
    ledger folder instead (`runs/ray/<run>.messages.log`, counted in the ledger). Where Ray
    moved that function, `inventory.output.document_only` still keeps them off the document."""
    try:
        from ray._private import worker as ray_worker
    except ImportError:
        return
    if not callable(getattr(ray_worker, "print_to_stdstream", None)):
        return
    path = runs_dir() / "ray" / f"{_started}-{os.getpid()}.messages.log"

    def keep(data: dict[str, Any], ignore_prefix: bool = False) -> None:
        del ignore_prefix
        lines = [ln for item in data.get("lines", []) for ln in str(item).splitlines()]
        _ledger["messages"] += len(lines)
        _ledger["messages_file"] = str(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with path.open("a") as handle:
                handle.writelines(f"({data.get('pid', '?')}) {line}\n" for line in lines)
        except OSError:
            pass  # a record of the run, never needed for an answer

    ray_worker.print_to_stdstream = keep


@dataclass
class _Agent:
    """One NodeAgent actor as the driver tracks it."""

    node: str  # Ray node id
    address: str  # the node's IP
    handle: Any
    index: int = 0
    host: str = ""
    checked: set[str] = field(default_factory=set)  # releases whose identity was checked
    load: int = 0  # jobs sent, not yet answered
    done: int = 0
    deadline: float = 0.0  # when the last job sent to it must be answered by
    alive: bool = True

    @property
    def label(self) -> str:
        return f"node {self.node[:8]} ({self.address}{f' #{self.index}' if self.index else ''})"


_agents: dict[str, _Agent] = {}  # agent name -> agent, for the process's whole run
_dropped: set[str] = set()  # agents left out (dead, not ready): not made again in this run
_head_gone = ""  # why the cluster's head is known gone: nothing more is asked of Ray
# What this process dispatched, where and how long each took: written to runs/ray/.
_ledger: dict[str, Any] = {
    "dispatched": 0,
    "from_store": 0,
    "retried": 0,
    "lost": 0,
    "nodes": {},
    "jobs": [],
    "left_out": [],
    "messages": 0,
}
_started = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
# where the ledger was written (`RayOracle.close`), and the cluster's address: written again at
# exit, once Ray is shut down, since Ray's messages of a lost node can still arrive after it
_written: dict[str, str] = {}
# One dispatch at a time per process: the agents' queues and the ledger are shared state.
_dispatching = threading.Lock()


def ledger() -> dict[str, Any]:
    return _ledger


def _shutdown() -> None:
    """At exit: each agent closes its workers and temp folder, then is killed (an agent is
    never left behind; Ray would also end it with its driver)."""
    ray = _import_ray()
    live = [a for a in _agents.values() if a.alive]
    _agents.clear()
    if _head_gone:  # nothing to close on a cluster without its head; its nodes end the actors
        live = []
    try:
        refs = [a.handle.close.remote() for a in live]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=10)
        for agent in live:
            ray.kill(agent.handle)
    except Exception:  # noqa: BLE001 - a cluster already gone ends its actors itself
        pass
    ray.shutdown()
    if _written:  # now no more of Ray's messages arrive: the ledger counts every one kept
        _write_ledger(Path(_written["path"]), _written["address"])


def _write_ledger(path: Path, address: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"address": address, **_ledger}, indent=2))
        tmp.replace(path)
    except OSError:
        pass  # the ledger is a record of the run, never needed for an answer


def _kind(job: AnyJob) -> str:
    """A job's kind in the ledger."""
    if isinstance(job, CallJob):
        return WORKERS[job.worker][2]
    return "load-check" if isinstance(job, LoadJob) else "comparison"


def job_limit(job: AnyJob, limit: float) -> float:
    """How long a job may take on its agent: `limit` (INVENTORY_RAY_JOB_TIMEOUT), or a call's
    own worker timeout and a minute to move its files when that is longer (a whole program's
    conversion may take INVENTORY_VERIFY_CONVERT_TIMEOUT, an hour by default): an agent is never
    dropped for a call its worker is still allowed to answer."""
    if isinstance(job, CallJob) and job.timeout is not None:
        return max(limit, job.timeout + 60.0)
    return limit


def check_identity(where: str, ident: dict[str, Any], envs: dict[str, Env]) -> None:
    """A node's report (`NodeAgent.identity`) against this process: the same code, and per
    release the same packages as the driver's environment (the versions a result is keyed on).
    ExecutorError, one line, otherwise: its results would be stored under keys they do not
    match."""
    if ident.get("tool") != tool_digest() or ident.get("code") != store.code_digest():
        raise ExecutorError(
            f"{where} runs other inventory code (digest {ident.get('tool')}, here "
            f"{tool_digest()}): refusing, its results would poison the store"
        )
    for release, env in envs.items():
        # what a key is made of (`key_identity`), the driver's environment possibly not built
        ours = {k: v for k, v in store.key_identity(env).items() if k != "environment"}
        held = ident.get("packages", {}).get(release, {})
        theirs = {k: base_version(held[k]) if k == "torch" else held[k] for k in ours if k in held}
        if theirs != ours:
            diff = ", ".join(
                f"{k} {theirs.get(k, '?')} (here {v})"
                for k, v in ours.items()
                if theirs.get(k) != v
            )
            raise ExecutorError(
                f"{where} has other packages for coreai-torch {release}: "
                f"{diff}; refusing, its results would poison the store"
            )


def call_answer(c: Call, job: CallJob, payload: dict[str, Any]) -> dict[str, Any]:
    """A call's answer from its node: the files its worker wrote, in the call's `out`, and
    its paths moved back from the node's to this machine's."""
    c.out.mkdir(parents=True, exist_ok=True)
    written(payload["files"], c.out)
    back = {str(ANCHOR / "out"): str(c.out)}
    for name, file in job.inputs:
        back[str(ANCHOR / "in" / name / file if file else ANCHOR / "in" / name)] = str(
            c.request[name]
        )
    return moved(payload["answer"], back)


class RayOracle(Oracle):
    name = "ray"

    def __init__(
        self, pool: Pool, progress: Progress, address: str | None, notice: Progress = lambda _: None
    ) -> None:
        del pool  # the driver converts nothing itself
        self.progress = progress
        self.notice = notice
        self.address = connect(address)
        self.ray = _import_ray()
        self._made: dict[str, ProbeResult] = {}  # result folder name -> made in this session
        self._asked: dict[str, Comparison] = {}  # result folder name -> its comparison
        # a load check's key -> the store's temp folder its files come back into (one asked
        # for alone), where it is stored (one of a batch), and the check
        self._check_work: dict[str, Path] = {}
        self._check_final: dict[str, Path] = {}
        self._checked: dict[str, LoadCheck] = {}
        # a call's key -> the call, its input files (Ray objects, put once per file and
        # session), and its answer once it landed
        self._calls: dict[str, Call] = {}
        self._shipped: dict[str, list[Any]] = {}
        self._objects: dict[tuple[str, str, int, int], Any] = {}
        self._answers: dict[str, dict[str, Any]] = {}

    # -- the agents ------------------------------------------------------------------------
    def _make_agents(self) -> None:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = self.ray.remote(NodeAgent)
        for node in self.ray.nodes():
            cpus = int(node.get("Resources", {}).get("CPU", 0))
            if not node.get("Alive") or cpus < 1:
                continue
            for index in range(max(1, cpus // 2)):  # a job keeps two worker processes busy
                name = f"inventory-{os.getpid()}-{node['NodeID'][:12]}-{index}"
                if name in _agents or name in _dropped:
                    continue
                handle = remote.options(
                    name=name,
                    namespace=NAMESPACE,
                    num_cpus=1,
                    max_concurrency=1,
                    max_restarts=0,
                    max_task_retries=0,
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False),
                ).remote()
                _agents[name] = _Agent(
                    node["NodeID"], node.get("NodeManagerAddress", "?"), handle, index
                )

    def _drop(self, name: str, why: str) -> None:
        agent = _agents.pop(name)
        agent.alive = False
        _dropped.add(name)
        with contextlib.suppress(Exception):  # an agent whose node is gone is gone already
            self.ray.kill(agent.handle)
        # one line even in a quiet run (never in the answer's document), and kept in the ledger
        self.notice(f"ray: {agent.label} left out: {why}")
        _ledger["left_out"].append(
            {
                "node": agent.node,
                "address": agent.address,
                "agent": name,
                "why": why,
                "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            }
        )

    def _ready(self, envs: dict[str, Env]) -> list[tuple[str, _Agent]]:
        """The agents ready for these releases: each says what it runs (checked against this
        process) before its first job of a release; one that cannot within the limit is left
        out, one that runs other code or packages refuses the run."""
        self._make_agents()
        wanted = set(envs)
        asks = {
            a.handle.identity.remote(sorted(wanted)): name
            for name, a in _agents.items()
            if not wanted <= a.checked
        }
        if asks:
            limit = seconds("INVENTORY_RAY_SETUP_TIMEOUT")
            self.progress(f"ray: {len(asks)} agent(s) getting {', '.join(sorted(wanted))} ready")
            ready, late = self.ray.wait(list(asks), num_returns=len(asks), timeout=limit)
            for ref in late:
                self._drop(asks[ref], f"not ready within {limit:g} s (INVENTORY_RAY_SETUP_TIMEOUT)")
            for ref in ready:
                try:
                    ident = self.ray.get(ref)
                except Exception as exc:  # noqa: BLE001 - any failure leaves this agent out
                    self._drop(asks[ref], remote_error(exc))
                    continue
                self._check(_agents[asks[ref]], ident, envs)
        live = [(n, a) for n, a in _agents.items() if a.alive and wanted <= a.checked]
        if not live:
            raise ExecutorError(
                f"no node of the Ray cluster at {self.address} could get "
                f"{', '.join(sorted(wanted))} ready"
            )
        return live

    def _check(self, agent: _Agent, ident: dict[str, Any], envs: dict[str, Env]) -> None:
        agent.host = ident.get("host", "?")
        check_identity(f"{agent.label} on {agent.host}", ident, envs)
        agent.checked |= set(envs)

    # -- the jobs --------------------------------------------------------------------------
    def _dispatch(
        self,
        jobs: Sequence[AnyJob],
        envs: dict[str, Env],
        use_cache: bool,
        landed: Landed = no_follow_ups,
    ) -> None:
        """Run the jobs on the cluster and publish each result; every job ends answered. `envs`:
        the driver's environment of every release the jobs name."""
        with _dispatching:
            self._dispatch_now(jobs, envs, use_cache, landed)

    def _head_alive(self) -> bool:
        """The cluster's GCS still accepts connections (checked while jobs wait)."""
        host, _, port = self.address.rpartition(":")
        if not host or not port.isdigit():
            return True  # `auto`: Ray alone knows where the head is
        try:
            with socket.create_connection((host, int(port)), timeout=2):
                return True
        except OSError:
            return False

    def _head_lost(self, jobs: list[AnyJob], envs: dict[str, Env]) -> int:
        global _head_gone
        _head_gone = f"the cluster's head at {self.address} is gone"
        _ledger["head_lost"] = True
        self.notice(
            f"ray: {_head_gone}: {len(jobs)} job(s) not answered are inconclusive, "
            "none stored; no more jobs are sent"
        )
        for job in jobs:
            self._lost(job, envs, _head_gone)
        return len(jobs)

    def _dispatch_now(
        self, jobs: Sequence[AnyJob], envs: dict[str, Env], use_cache: bool, landed: Landed
    ) -> None:
        if _head_gone:
            for job in jobs:
                self._lost(job, envs, _head_gone)
            return
        agents = dict(self._ready(envs))
        queue: deque[AnyJob] = deque(jobs)
        tries: dict[str, int] = {}
        flying: dict[Any, tuple[AnyJob, str, float]] = {}
        limit = seconds("INVENTORY_RAY_JOB_TIMEOUT")
        total, done, said = len(jobs), 0, ""
        checked = time.monotonic()  # when the head was last known alive
        while queue or flying:
            live = {n: a for n, a in agents.items() if a.alive}
            if not live and not flying:
                for job in queue:
                    self._lost(job, envs, "no agent of the cluster is left to run it")
                    done += 1
                queue.clear()
                break
            now = time.monotonic()
            for _ in range(IN_FLIGHT):  # round by round: every agent gets one before any two
                for name, agent in live.items():
                    if agent.load < IN_FLIGHT and queue:
                        job = queue.popleft()
                        agent.deadline = max(now, agent.deadline) + job_limit(job, limit)
                        shipped = self._shipped.get(job.key, ())
                        flying[agent.handle.run.remote(job, *shipped)] = (job, name, agent.deadline)
                        agent.load += 1
                        _ledger["dispatched"] += 1
            ready, _ = self.ray.wait(list(flying), num_returns=1, timeout=1.0)
            if not ready and time.monotonic() - checked > 2:
                if not self._head_alive():
                    done += self._head_lost([j for j, _, _ in flying.values()] + list(queue), envs)
                    flying.clear()
                    queue.clear()
                    break
                checked = time.monotonic()
            for ref in ready:
                job, name, _ = flying.pop(ref)
                agent = agents[name]
                agent.load -= 1
                try:
                    payload = self.ray.get(ref)
                except (
                    self.ray.exceptions.RayActorError,
                    self.ray.exceptions.ActorUnavailableError,
                ) as exc:
                    if agent.alive:
                        self._drop(name, f"died ({remote_error(exc)}); its jobs go to the others")
                    done += self._again(job, queue, tries, envs, remote_error(exc))
                    continue
                except self.ray.exceptions.RayError as exc:
                    # a node's own exception, or Ray's (its object store full, the disk over
                    # its threshold, the result lost): a fault of the cluster, one line
                    raise ExecutorError(f"{agent.label}: {remote_error(exc)}") from None
                self._publish(job, payload, agent, envs, use_cache)
                done += 1
                # what its result calls for (a change located step by step) joins the queue
                # now, where every release it names is one these agents are ready for
                more = self._follow_ups(job, envs, use_cache, landed)
                queue.extendleft(reversed(more))
                total += len(more)
            now = time.monotonic()
            for late, name, deadline in list(flying.values()):
                if now > deadline and agents[name].alive:
                    # its answers never come: killing it fails its jobs, which go elsewhere
                    self._drop(
                        name,
                        f"a job took over {job_limit(late, limit):g} s (INVENTORY_RAY_JOB_TIMEOUT"
                        f"{', or a call its own timeout' if isinstance(late, CallJob) else ''})",
                    )
            line = f"ray: {done}/{total} jobs · " + " · ".join(
                f"{a.label}: {a.done} done, {a.load} in flight" for a in agents.values()
            )
            if line != said:  # a line when something changed, not one a second
                self.progress(line)
                said = line

    def _again(
        self,
        job: AnyJob,
        queue: deque[AnyJob],
        tries: dict[str, int],
        envs: dict[str, Env],
        why: str,
    ) -> int:
        """A job whose agent was lost: sent again (to another agent), or after ATTEMPTS tries
        answered inconclusive. Returns 1 when it is answered."""
        tries[job.key] = tries.get(job.key, 1) + 1
        if tries[job.key] > ATTEMPTS:
            self._lost(job, envs, f"{ATTEMPTS} agents were lost running it ({why})")
            return 1
        _ledger["retried"] += 1
        queue.appendleft(job)
        return 0

    def _publish(
        self,
        job: AnyJob,
        payload: dict[str, Any],
        agent: _Agent,
        envs: dict[str, Env],
        use_cache: bool,
    ) -> None:
        if not payload.get("ok"):
            kind, error = payload.get("kind"), payload.get("error", "?")
            if kind == "environment":
                raise EnvironmentFault(f"{agent.label}: {error}")
            if kind == "mismatch":
                raise ExecutorError(
                    f"{agent.label}: {error}: refusing, its results would poison the store"
                )
            raise EnvError(f"{agent.label}: {error}")
        if isinstance(job, CallJob):
            self._answers[job.key] = call_answer(self._calls[job.key], job, payload)
        elif isinstance(job, LoadJob) and job.key in self._check_work:
            # into the store's temp folder `load_check` holds: it stores the check, as a
            # check made here is stored
            work = self._check_work[job.key]
            self._checked[job.key] = unpack_check(payload["check"], payload["files"], work)
        elif isinstance(job, LoadJob):  # one of a batch: stored now, as a comparison is
            from oracle.executors.asset_checks import kept

            final = self._check_final.pop(job.key)
            with store.building(final) as work:
                made = unpack_check(payload["check"], payload["files"], work)
                self._checked[job.key] = kept(made, work, final, use_cache)
        else:
            final = store.result_dir(job.spec, envs[job.old], envs[job.new])
            with store.building(final) as work:
                result = unpack(payload["result"], payload["files"], work)
                self._made[final.name] = store.publish(
                    result, work, final, replace_stored=not use_cache
                )
        agent.done += 1
        node = _ledger["nodes"].setdefault(
            agent.node, {"address": agent.address, "host": agent.host, "jobs": 0}
        )
        node["jobs"] += 1
        _ledger["jobs"].append(
            {
                "key": job.key,
                "kind": _kind(job),
                "node": agent.node,
                "seconds": round(payload.get("seconds", 0.0), 3),
            }
        )

    def _lost(self, job: AnyJob, envs: dict[str, Env], why: str) -> None:
        """Answered, never dropped: a worker failure on both sides (inconclusive), or a load
        check run on no runtime; not stored."""
        _ledger["lost"] += 1
        if isinstance(job, CallJob):
            self._answers[job.key] = worker_failure(f"not run on the Ray cluster: {why}")
            return
        if isinstance(job, LoadJob):
            text = f"not run on the Ray cluster: {why}"
            self._checked[job.key] = LoadCheck(
                job.spec,
                job.exporter,
                store.env_identity(envs[job.exporter]),
                False,
                text,
                tuple(RuntimeOutcome(c, "not-run", "cluster", text) for c in job.cores),
                "",
            )
            return
        old, new = envs[job.old], envs[job.new]
        # one text for both sides: they fail alike, a probe not run, never a change
        sides = [
            Side(
                env.converter,
                store.env_identity(env),
                False,
                "worker",
                f"not run on the Ray cluster: {why}",
            )
            for env in (old, new)
        ]
        self._made[job.key] = ProbeResult(
            job.spec,
            sides[0],
            sides[1],
            Identity.BOTH_CANNOT_CONVERT,
            Identity.BOTH_CANNOT_CONVERT,
            None,
            "",
        )

    # -- the Oracle interface ---------------------------------------------------------------
    def _wanted(
        self, batch: list[Comparison], use_cache: bool
    ) -> tuple[list[Job], dict[str, Comparison]]:
        """The jobs of a batch not made in this session nor stored, and each job's comparison
        by key (its follow-ups). A stored result whose follow-ups are wanted is read now and
        they are added to the batch."""
        jobs: dict[str, Job] = {}
        asked: dict[str, Comparison] = {}
        todo = list(batch)
        while todo:
            c = todo.pop(0)
            final = store.result_dir(c.spec, c.old, c.new)
            if final.name in self._made or final.name in jobs:
                continue
            cached = store.stored(final, store.load_result) if use_cache else None
            if cached is not None:
                # read (and counted) when the caller asks for it; its follow-ups join now
                todo += c.then(cached) if c.then is not None else []
                continue
            jobs[final.name] = Job(c.spec, c.old.converter, c.new.converter, final.name)
            asked[final.name] = c
        self._asked.update(asked)
        return list(jobs.values()), asked

    def _follow_ups(
        self, job: AnyJob, envs: dict[str, Env], use_cache: bool, landed: Landed
    ) -> list[Job]:
        c = self._asked.get(job.key)
        result = self._made.get(job.key)
        if c is None or result is None:
            return []
        more = [m for m in landed(c, result) if m.old.converter in envs and m.new.converter in envs]
        return self._wanted(more, use_cache)[0]

    def _load_job(self, request: LoadRequest, key: str) -> tuple[LoadJob, dict[str, Env]]:
        """The job of one load check, with the environment this process picked for each
        runtime (the node keys the check from the same releases), and every release it names."""
        chosen: dict[str, Env] = {}
        unavailable: dict[str, str] = {}
        for core in request.cores:
            try:
                chosen[core] = request.runtimes.env_for_core(core)
            except EnvError as exc:
                unavailable[core] = str(exc)
        exporter = request.exporter
        job = LoadJob(
            request.spec,
            exporter.converter,
            request.cores,
            tuple((core, env.converter) for core, env in chosen.items()),
            tuple(unavailable.items()),
            key,
        )
        return job, {exporter.converter: exporter, **{e.converter: e for e in chosen.values()}}

    def _wanted_checks(
        self, requests: list[LoadRequest], use_cache: bool
    ) -> tuple[list[LoadJob], dict[str, Env]]:
        """The load checks of a batch not made in this session nor stored."""
        jobs: dict[str, LoadJob] = {}
        envs: dict[str, Env] = {}
        for r in requests:
            final = r.final()
            if final.name in self._checked or final.name in jobs:
                continue
            if use_cache and (final / store.RESULT_FILE).exists():
                continue  # read when asked for
            job, named = self._load_job(r, final.name)
            jobs[final.name] = job
            envs.update(named)
            self._check_final[final.name] = final
        return list(jobs.values()), envs

    def dispatch(
        self, batch: Sequence[Asked], use_cache: bool = True, landed: Landed = no_follow_ups
    ) -> None:
        comparisons = [c for c in batch if isinstance(c, Comparison)]
        checks, envs = self._wanted_checks(
            [r for r in batch if isinstance(r, LoadRequest)], use_cache
        )
        jobs, asked = self._wanted(comparisons, use_cache)
        if jobs or checks:
            envs.update({e.converter: e for c in asked.values() for e in (c.old, c.new)})
            self._dispatch([*jobs, *checks], envs, use_cache, landed)

    def compare(self, spec: ProbeSpec, old: Env, new: Env, use_cache: bool = True) -> ProbeResult:
        final = store.result_dir(spec, old, new)
        if final.name in self._made:
            return self._made[final.name]
        if use_cache:
            cached = store.stored(final, store.load_result)
            if cached is not None:
                _ledger["from_store"] += 1
                return cached
        self._dispatch(
            [Job(spec, old.converter, new.converter, final.name)],
            {old.converter: old, new.converter: new},
            use_cache,
        )
        return self._made[final.name]

    def load_check(
        self,
        spec: ProbeSpec,
        exporter: Env,
        cores: list[str],
        runtimes: Runtimes,
        use_cache: bool = True,
    ) -> LoadCheck:
        """Made on a node, in the environments this process picks for each runtime (the node
        keys the check from them and refuses another key); stored here like a local check."""
        from oracle.executors.asset_checks import check

        request = LoadRequest(spec, exporter, tuple(cores), runtimes)
        made = self._checked.get(request.final().name)
        if made is not None:  # made (or lost) in a batch of this session
            return made

        def on_a_node(work: Path, key: str) -> LoadCheck:
            job, envs = self._load_job(request, key)
            self._check_work[key] = work
            try:
                self._dispatch([job], envs, use_cache)
            finally:
                self._check_work.pop(key, None)
            return self._checked.pop(key)

        return check(spec, exporter, cores, runtimes, use_cache, on_a_node)

    def calls(self, calls: Sequence[Call], pools: Pools, at_once: int = 1) -> list[dict[str, Any]]:
        """Each call run on a node (as many at once as there are agents), its input files sent
        with it and the files its worker wrote written back into the call's `out`."""
        del pools, at_once  # the nodes' workers run them
        jobs: list[CallJob] = []
        envs: dict[str, Env] = {}
        for c in calls:
            key = f"call-{secrets.token_hex(8)}"
            ship = c.shipped()
            inputs = tuple(
                (s.name, Path(c.request[s.name]).name if Path(c.request[s.name]).is_file() else "")
                for s in ship
            )
            self._calls[key] = c
            self._shipped[key] = [self._object(Path(c.request[s.name]), s.glob) for s in ship]
            jobs.append(
                CallJob(c.worker, c.env.converter, c.request, inputs, c.timeout, key, c.faults)
            )
            envs[c.env.converter] = c.env
        try:
            self._dispatch(jobs, envs, use_cache=True)
            return [self._answers.pop(j.key) for j in jobs]
        finally:
            for j in jobs:
                self._calls.pop(j.key, None)
                self._shipped.pop(j.key, None)

    def _object(self, path: Path, glob: str) -> Any:
        """A shipped input's files as one Ray object, put once while the file is unchanged."""
        stat = path.stat()
        key = (str(path), glob, stat.st_mtime_ns, stat.st_size)
        if key not in self._objects:
            try:
                self._objects[key] = self.ray.put(files_of(path, glob))
            except self.ray.exceptions.RayError as exc:
                # the store cannot take it (full, or its disk over Ray's threshold, 95%)
                raise ExecutorError(
                    f"the Ray cluster cannot take the files of {path.name}: {remote_error(exc)}"
                ) from None
        return self._objects[key]

    def close(self) -> None:
        """The run's ledger (jobs per node, their seconds) in runs/ray/, and one summary line."""
        nodes = ", ".join(f"{n[:8]}: {v['jobs']}" for n, v in _ledger["nodes"].items())
        self.progress(
            f"ray: {_ledger['dispatched']} job(s) dispatched"
            f"{f' ({nodes})' if nodes else ''}, {_ledger['from_store']} read from the "
            f"store, {_ledger['retried']} retried, {_ledger['lost']} not run"
        )
        self._objects.clear()
        path = runs_dir() / "ray" / f"{_started}-{os.getpid()}.json"
        _write_ledger(path, self.address)
        _written.update(path=str(path), address=self.address)
