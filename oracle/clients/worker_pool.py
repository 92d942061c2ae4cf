"""The main process's side of the worker protocol: one long-lived worker per environment.

A worker dies with its run. It leads a process group of its own (what it starts is in it), and a
watchdog thread started before its script ends that group once the main process is gone, even
after a SIGKILL, within a fraction of a second. On SIGTERM `kill_all()` stops every live worker at
once (a call in progress included), so none goes on converting into a folder that is about to be
removed. Each worker's temp files (the runtime's `tmp*.aimodelx` folders) go to a folder of its
own under the store's `tmp/`, removed with the worker; `reclaim_temp()` removes those a killed
run left. The client names that folder and the worker's log with each call (`_placement`), so a
worker kept for a later run (`shared_workers`) puts that run's files in that run's store.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import queue
import secrets
import shutil
import signal
import subprocess
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from oracle.catalog.releases import RunFault
from oracle.envs import bytecode
from oracle.envs.check import verified
from oracle.envs.environment import Env
from oracle.infra.paths import TEMP, cache_root
from oracle.infra.progress import Progress
from oracle.infra.scratch_dirs import TORCH_SCRATCH
from oracle.infra.settings import seconds

WORKER_SCRIPT = Path(__file__).resolve().parents[1] / "workers" / "probe_worker.py"
# Run by the worker's interpreter before its script (`python -c PRELUDE SCRIPT`, which runs the
# script as `python SCRIPT` would): a watchdog that kills the worker's process group, itself and
# whatever it started, once the main process is gone. It is a forked process of its own, made
# before the script imports anything: a watchdog *thread* needs the GIL, which a native
# conversion may hold for seconds (CI saw a worker outlive its killed run by over 1.5 s). It
# reads the worker's parent from /proc (the worker is re-parented when the main process dies)
# and ends with the worker. PR_SET_PDEATHSIG is not enough: it fires when the *thread* that
# started the worker ends, and workers are started from short-lived pool threads. Where /proc
# cannot be read, the thread stands in.
_PRELUDE = """\
import os, runpy, signal, sys, threading, time
_main, _worker = os.getppid(), os.getpid()
_stat = f"/proc/{_worker}/stat"
def _parent_of_worker():
    try:
        with open(_stat) as f:
            return int(f.read().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None
if _parent_of_worker() == _main and os.fork() == 0:
    try:
        _null = os.open(os.devnull, os.O_RDWR)
        for _fd in (0, 1, 2):
            os.dup2(_null, _fd)  # never hold the worker's pipes open
        while os.getppid() == _worker and _parent_of_worker() == _main:
            time.sleep(0.05)
        os.killpg(0, signal.SIGKILL)
    finally:
        os._exit(0)
elif _parent_of_worker() != _main:
    def _watch():
        while os.getppid() == _main:
            time.sleep(0.1)
        os.killpg(0, signal.SIGKILL)
    threading.Thread(target=_watch, daemon=True).start()
_script = sys.argv[1]
sys.argv = sys.argv[1:]
sys.path[0] = os.path.dirname(_script)
runpy.run_path(_script, run_name="__main__")
"""
# Every worker of this process that may have a live process: SIGTERM stops them all at once.
_LIVE: weakref.WeakSet[Worker] = weakref.WeakSet()
_starts = 0  # worker processes this process started (`started()`)
_starts_guard = threading.Lock()
# Imports what a worker script needs from its environment, one module per argument.
_IMPORTS = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"


class WorkerFailure(Exception):
    """The worker died (native abort, killed) or did not answer in time."""


class EnvironmentFault(RunFault):
    """The environment itself cannot run a worker (no interpreter, torch or the converter not
    importable): not something the converter did, so never a result. One line for the user."""


def _rebuild_hint(env: Env) -> str:
    return f"remove {env.path} and run `inventory envs build {env.converter}` to rebuild it"


class Worker:
    """A worker process inside one converter environment, started on first use.

    A worker that crashes or hangs is killed and replaced on the next call, so one bad probe
    never takes the rest of a run with it.
    """

    script = WORKER_SCRIPT  # the in-environment script this worker runs
    # What that script imports from its environment: if one of these cannot be imported, a
    # failure is the environment's, not the converter's.
    needs: tuple[str, ...] = ("torch", "coreai_torch", "coreai.runtime", "safetensors")
    # The environment built before the process starts (its pool's `prepare`): a session hands
    # out environments its store keys need before any is built
    prepare: Callable[[Env], Env] | None = None

    def __init__(
        self, env: Env, log: Path, timeout: float | None = None, progress: Progress = lambda _: None
    ) -> None:
        self.env = env
        self.log = log
        self._progress = progress
        # read when the worker is made, validated (INVENTORY_WORKER_TIMEOUT, default 300 s)
        self.timeout = seconds("INVENTORY_WORKER_TIMEOUT") if timeout is None else timeout
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._next_id = 0
        self._lock = threading.Lock()
        self._stopped = False  # set by kill(): no call may start a process any more
        self._fault: str | None = None  # environment_fault(), once measured
        self._fault_checked = False
        self._tmp: Path | None = None  # the live process's TMPDIR
        self._started_as = ""  # the live process's script and environment (`_started_as`)
        self._kept_at = 0  # when a closed pool last kept it (`shared_workers`)
        _LIVE.add(self)

    def environment_fault(self) -> str | None:
        """Why this environment cannot run the worker's script, or None if it can: asked after a
        failure, so that an environment fault is never reported (or stored) as the converter's.
        Measured once per worker, in a fresh interpreter of the environment."""
        if self._stopped:  # interrupted: no time for a check, and nothing will be stored
            return None
        if not self._fault_checked:
            self._fault = self._check_environment()
            self._fault_checked = True
        return self._fault

    def _check_environment(self) -> str | None:
        try:
            proc = subprocess.run(
                [str(self.env.python), "-c", _IMPORTS, *self.needs],
                capture_output=True,
                text=True,
                timeout=600,
            )
        except OSError as exc:
            return (
                f"environment fault: {self.env.name} cannot start its python "
                f"{self.env.python} ({exc.strerror or exc}); {_rebuild_hint(self.env)}"
            )
        except subprocess.TimeoutExpired:
            return (
                f"environment fault: {self.env.name} could not import "
                f"{', '.join(self.needs)} within 600 s; {_rebuild_hint(self.env)}"
            )
        if proc.returncode == 0:
            return None
        lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
        detail = lines[-1] if lines else f"exit code {proc.returncode}"
        return (
            f"environment fault: {self.env.name} cannot import what its worker needs "
            f"({detail}); {_rebuild_hint(self.env)}"
        )

    def _start(self) -> subprocess.Popen[str]:
        if self.prepare is not None:
            self.env = self.prepare(self.env)
        # never in an environment whose files changed since it was built: rebuilt first
        self.env = verified(self.env, self._progress)
        self.log.parent.mkdir(parents=True, exist_ok=True)
        # the runtime writes tmp*.aimodelx folders and leaves them when it aborts: in here
        self._tmp = _new_tmp()
        self._started_as = _started_as(self.script)
        # an environment's warm-up (built ahead of time) compiles what this worker would
        # compile beside it; the held torch's is not waited for (`bytecode.before_worker`)
        bytecode.before_worker(self.env.python)
        stderr = open(self.log, "a")  # noqa: SIM115 - owned by the process for its lifetime
        try:
            proc = subprocess.Popen(
                [str(self.env.python), "-u", "-c", _PRELUDE, str(self.script)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                # bytecode written: the first worker of an environment the warm-up did not
                # finish writes what it compiles for the next (CPython writes each file
                # atomically, so workers side by side are harmless)
                env=bytecode.environ(self._tmp),
                # its own process group: killed as one, with what it starts
                start_new_session=True,
            )
        except OSError as exc:  # no interpreter: the environment's fault, not a worker death
            self._remove_tmp()
            raise EnvironmentFault(
                f"environment fault: {self.env.name} cannot start its python "
                f"{self.env.python} ({exc.strerror or exc}); {_rebuild_hint(self.env)}"
            ) from None
        finally:
            stderr.close()
        global _starts
        with _starts_guard:
            _starts += 1
        lines: queue.Queue[str | None] = queue.Queue()

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        self._lines = lines
        return proc

    def call(self, request: dict, timeout: float | None = None) -> dict:
        with self._lock:
            if self._stopped:
                raise WorkerFailure(f"{self.env.name} worker stopped: the run was interrupted")
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
                if self.killed():  # kill() ran while this process started: it missed it
                    self._reap()
                    raise WorkerFailure(f"{self.env.name} worker stopped: the run was interrupted")
            proc = self._proc
            self._next_id += 1
            request = {**request, "id": self._next_id, "place": self._placement()}
            try:
                assert proc.stdin is not None
                proc.stdin.write(json.dumps(request) + "\n")
                proc.stdin.flush()
            except BrokenPipeError:
                self._reap()
                raise WorkerFailure(self._death(proc)) from None
            # the limit stated is the limit applied: a timeout of 0 is never "the default"
            limit = self.timeout if timeout is None else timeout
            try:
                line = self._lines.get(timeout=limit)
            except queue.Empty:
                self._reap()
                raise WorkerFailure(
                    f"{self.env.name} worker did not answer within {limit:g} s; killed"
                ) from None
            if line is None:
                self._reap()
                raise WorkerFailure(self._death(proc))
            return json.loads(line)

    def _placement(self) -> dict[str, object]:
        """Where the worker puts this call's files (`worker_io.place`): its temp folder and log,
        which change when a kept worker serves another store's pool (`adopt`)."""
        assert self._tmp is not None  # set by _start, before any call
        return {"environ": _scratch_variables(self._tmp), "log": str(self.log)}

    def adopt(self, env: Env, log: Path, progress: Progress) -> None:
        """Serve another pool, kept from a closed one (`shared_workers`): that pool's view of the
        environment (a store reaches it through a link of its own), its log, its progress, and
        a temp folder in the store in use now."""
        with self._lock:
            self.env, self.log, self._progress = env, log, progress
            self.log.parent.mkdir(parents=True, exist_ok=True)
            if self._tmp is None:  # removed when it was kept (`_keep`)
                self._tmp = _new_tmp()

    def _death(self, proc: subprocess.Popen[str]) -> str:
        code = proc.wait()
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            return f"{self.env.name} worker died of {name} (log: {self.log})"
        return f"{self.env.name} worker exited with code {code} (log: {self.log})"

    def _reap(self) -> None:
        if self._proc is not None:
            _kill_group(self._proc)
            self._proc.wait()
        self._proc = None
        self._remove_tmp()

    def _remove_tmp(self) -> None:
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    def killed(self) -> bool:
        """Whether kill() has run, read afresh: another thread sets it at any time (a type
        checker reading `self._stopped` twice in a row takes it to be unchanged)."""
        return self._stopped

    def kill(self) -> None:
        """Stop at once, even while another thread waits in call() (so without its lock): the
        worker writes nothing more, and no later call starts one."""
        self._stopped = True
        proc = self._proc
        if proc is not None:
            _kill_group(proc)
            proc.wait()
        self._remove_tmp()

    def close(self) -> None:
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                # Every answer is written and every file closed before the worker replies, so
                # nothing is lost by not waiting for torch's slow interpreter teardown.
                assert self._proc.stdin is not None
                self._proc.stdin.close()
                try:
                    self._proc.wait(timeout=0.2)
                except subprocess.TimeoutExpired:
                    _kill_group(self._proc)
                    self._proc.wait()
            self._proc = None
            self._remove_tmp()


def _new_tmp() -> Path:
    """A worker's temp folder in the store in use, named after this run's pid
    (`reclaim_temp`)."""
    tmp = cache_root() / TEMP / f"{os.getpid()}-{secrets.token_hex(4)}"
    tmp.mkdir(parents=True, exist_ok=True)
    return tmp


def _scratch_variables(tmp: Path) -> dict[str, str]:
    """The variables naming a worker's scratch folders, all under its temp folder `tmp`."""
    return {"TMPDIR": str(tmp), **{var: str(tmp / name) for var, name in TORCH_SCRATCH.items()}}


# Variables a kept worker's process may differ in from a new one's and still be the same worker:
# where the results go (the store: the worker is told per call where its own files go) and its
# scratch, which it is told per call (`Worker._placement`); `shared_workers(ignoring=...)` adds
# those its caller knows change from run to run without changing what a worker does.
_PLACED = frozenset({"INVENTORY_CACHE", "INVENTORY_STORE", "TMPDIR", *TORCH_SCRATCH})
_ignored: frozenset[str] = frozenset()


def _started_as(script: Path) -> str:
    """What a worker started now would be: its script (a test double's, say) and a digest of
    the environment its process inherits, but for the variables of `_PLACED`."""
    skip = _PLACED | _ignored
    environ = sorted((k, v) for k, v in os.environ.items() if k not in skip)
    digest = hashlib.sha256(json.dumps(environ).encode()).hexdigest()[:16]
    return f"{script}:{digest}"


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the worker's process group (it and what it started); it may be gone already."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        if proc.poll() is None:
            proc.kill()


_killed = threading.Event()  # set by kill_all: the run is stopping


def kill_all() -> None:
    """Stop every live worker of this process now (SIGTERM: `inventory.signals`)."""
    _killed.set()
    for worker in list(_LIVE):
        worker.kill()


def stopping() -> bool:
    """The run is being stopped (SIGTERM): a comparison finishing in a background thread now
    holds failures of killed workers, never the converter's, and must not be stored."""
    return _killed.is_set()


def reclaim_temp(dry_run: bool = False) -> list[str]:
    """Remove the temp folders of workers whose run is gone (a SIGKILL leaves them): each is
    named after its run's pid. Returns the names removed (`dry_run`: that would be)."""
    root = cache_root() / TEMP
    removed = []
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        pid = folder.name.split("-", 1)[0]
        if pid.isdigit() and not _alive(int(pid)):
            if not dry_run:
                shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder.name)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# Idle workers a closed pool left running for the next pool (`shared_workers`), by `_kept_as`.
_KEPT: dict[tuple[str, ...], list[Worker]] = {}
_kept_guard = threading.Lock()
_kept_order = itertools.count()  # when each worker was kept, for `most`
_keeping = 0  # how many `shared_workers` blocks are open


_most: int | None = None  # how many idle workers may be kept at once (`shared_workers`)


@contextmanager
def shared_workers(
    ignoring: frozenset[str] = frozenset(), most: int | None = None
) -> Iterator[None]:
    """Within this block, a pool that closes keeps its live idle workers running for the next
    pool of this process that needs one of the same kind in the same environment, with the same
    timeout, script and process environment (`_kept_as`), whatever its store: a process that
    answers many runs (the test suite's) pays for starting a worker (importing torch and the
    converter: about 7 CPU-s) once per environment, not once per run. The worker is told with
    each call where that run's temp files and log go, so they land in the run's own store. A
    worker that died, was killed or timed out is never kept. `ignoring`: environment variables
    that change between the block's runs without changing what a worker does. `most`: how
    many idle workers may be kept at once, the one kept longest ago closed to keep another
    (each holds torch and the converter: hundreds of MB), set by the first block that says.
    When the outermost block ends, every kept worker is closed."""
    global _keeping, _ignored, _most
    with _kept_guard:
        _keeping += 1
        _ignored = _ignored | ignoring
        _most = most if _most is None else _most
    try:
        yield
    finally:
        with _kept_guard:
            _keeping -= 1
            left = [w for kept in _KEPT.values() for w in kept] if _keeping == 0 else []
            if _keeping == 0:
                _KEPT.clear()
                _ignored, _most = frozenset(), None
        for worker in left:
            worker.close()


@contextmanager
def own_workers() -> Iterator[None]:
    """Within this block, this process is as if no `shared_workers` block were open: its pools
    start their own workers and close them with themselves (a cold start, as a process of its
    own has), and a `shared_workers` block opened inside it is the outermost one. What was kept
    before is kept, untouched, for after."""
    global _keeping, _ignored, _most
    with _kept_guard:
        saved = _keeping, dict(_KEPT), _ignored, _most
        _keeping, _ignored, _most = 0, frozenset(), None
        _KEPT.clear()
    try:
        yield
    finally:
        with _kept_guard:
            left = [w for kept in _KEPT.values() for w in kept]
            _KEPT.clear()
            _keeping, kept_before, _ignored, _most = saved
            _KEPT.update(kept_before)
        for worker in left:  # only if a block inside was left open (it closes its own)
            worker.close()


def started() -> int:
    """How many worker processes this process has started (each imports torch and the
    converter, about 7 CPU-s): what a test session counts, test by test."""
    return _starts


def _kept_as(
    worker_type: type[Worker], env: Env, log_suffix: str, timeout: float, started_as: str
) -> tuple[str, ...]:
    # the environment's folder as resolved (a store reaches the shared environments through a
    # symlink), never its interpreter's: every environment's python links to one base
    # interpreter, and what makes it this environment's is the folder it is started from;
    # never the store: the worker is told with each call where its files go (`_placement`)
    return (
        f"{worker_type.__module__}.{worker_type.__qualname__}",
        os.path.realpath(env.path),
        str(env.python.relative_to(env.path)) if env.python.is_relative_to(env.path) else "",
        log_suffix,
        repr(timeout),
        started_as,
    )


def _keep(worker: Worker, log_suffix: str) -> bool:
    """Keep `worker` for a later pool (within `shared_workers`), if it is alive and usable: not
    one whose environment was found at fault (the process was started in it as it was, and
    the environment may be repaired before the next run). Its temp folder is removed: its run
    is over, and its store holds nothing of a worker that is not at work (a run is the same
    seen from its store, shared or not); the next pool gives it one in its own store."""
    proc = worker._proc
    if worker.killed() or stopping() or proc is None or proc.poll() is not None:
        return False
    if worker._fault is not None:
        return False
    key = _kept_as(type(worker), worker.env, log_suffix, worker.timeout, worker._started_as)
    with _kept_guard:
        if not _keeping:
            return False
        worker._kept_at = next(_kept_order)
        _KEPT.setdefault(key, []).append(worker)
        worker._remove_tmp()
        kept = [w for ws in _KEPT.values() for w in ws]
        surplus = _oldest(kept, len(kept) - _most) if _most is not None else []
        for old in surplus:
            for ws in _KEPT.values():
                if old in ws:
                    ws.remove(old)
    for old in surplus:
        old.close()
    return worker not in surplus


def _oldest(kept: list[Worker], n: int) -> list[Worker]:
    """The `n` workers of `kept` kept longest ago."""
    return sorted(kept, key=lambda w: w._kept_at)[: max(0, n)]


def _kept(worker_type: type[Worker], env: Env, log_suffix: str) -> Worker | None:
    """A live worker a closed pool kept for this environment, or None."""
    timeout = seconds("INVENTORY_WORKER_TIMEOUT")
    key = _kept_as(worker_type, env, log_suffix, timeout, _started_as(worker_type.script))
    with _kept_guard:
        kept = _KEPT.get(key, [])
        while kept:
            worker = kept.pop(0)
            proc = worker._proc
            if not worker.killed() and proc is not None and proc.poll() is None:
                return worker
    return None


class Pool:
    """Workers per environment, shared by every probe of a run. `worker` is the Worker class
    (its `script` the in-environment script); its log is `<env>.<log_suffix>.log` (a second
    worker's `<env>.<log_suffix>-2.log`).

    `size`: how many workers one environment may have at once (`--jobs`): a comparison leases
    one (`lease`) for each call, so comparisons running side by side each have their own, and a
    second one is started only when two comparisons need the same environment at the same time.
    Each worker is a process holding torch and the converter (`docs/measurements.md` says how
    much memory), so the size is the run's concurrency, never more. `worker(env)` is the first
    one, for callers that run one call at a time (load checks, scan, repair)."""

    def __init__(
        self,
        log_dir: Path,
        worker: type[Worker] = Worker,
        log_suffix: str = "worker",
        progress: Progress = lambda _: None,
        size: int = 1,
    ) -> None:
        self.log_dir = log_dir
        self.progress = progress
        self.worker_type = worker
        self.log_suffix = log_suffix
        self.size = max(1, size)
        self._workers: dict[str, list[Worker]] = {}  # env -> its workers, oldest first
        self._idle: dict[str, list[Worker]] = {}  # env -> those not leased
        # (runtime core, asset cores) -> why that runtime could not run such assets: the run's
        # memory, so a pool is one run's; runs share workers through `shared_workers`, never a
        # pool (a pool kept across runs would answer one run with what another saw abort)
        self.failures: dict[tuple[str, frozenset[str]], str] = {}
        self._stopped = False
        self._lock = threading.Lock()
        self._free = threading.Condition(self._lock)
        # what builds an environment its workers are asked to run in (`Session.ready`)
        self.prepare: Callable[[Env], Env] | None = None

    def ready(self, env: Env) -> Env:
        """`env` built, when this pool was told how (a session's): before a conversion records
        the packages of the environment it ran in."""
        return env if self.prepare is None else self.prepare(env)

    @property
    def stopped(self) -> bool:
        return self._stopped

    def _new(self, env: Env) -> Worker:
        """A further worker of `env` (the lock held)."""
        workers = self._workers.setdefault(env.name, [])
        n = len(workers) + 1
        name = f"{env.name}.{self.log_suffix}{f'-{n}' if n > 1 else ''}.log"
        worker = _kept(self.worker_type, env, self.log_suffix)
        if worker is None:
            worker = self.worker_type(env, self.log_dir / name, progress=self.progress)
        else:
            worker.adopt(env, self.log_dir / name, self.progress)
        worker.prepare = self.prepare
        if self._stopped:
            worker.kill()
        workers.append(worker)
        return worker

    def add(self, worker: Worker) -> None:
        """A worker the caller made (its own timeout, its own log) as one more of its
        environment's, leased like the others."""
        if worker.prepare is None:
            worker.prepare = self.prepare
        with self._lock:
            self._workers.setdefault(worker.env.name, []).append(worker)
            self._idle.setdefault(worker.env.name, []).append(worker)

    def first(self, env: Env) -> Worker:
        """The environment's first worker, made (not started) if it has none."""
        with self._lock:  # asked from several threads (a session starts workers ahead)
            if not self._workers.get(env.name):
                self._idle.setdefault(env.name, []).append(self._new(env))
            return self._workers[env.name][0]

    def worker(self, env: Env) -> Workers:
        """The environment's workers, used as one worker: each call runs in one no other
        comparison is using (`lease`), so callers written for one worker per environment
        (`executors/comparison.py`, load checks, scan) run side by side unchanged."""
        self.first(env)
        return Workers(self, env)

    @contextmanager
    def lease(self, env: Env) -> Iterator[Worker]:
        """A worker of `env` no other comparison is using, for one call: the oldest idle one
        (already started, torch imported), else a new one while the environment has fewer than
        `size`, else the first to be handed back."""
        with self._free:
            while True:
                idle = self._idle.setdefault(env.name, [])
                if idle:
                    worker = idle.pop(0)
                    break
                if len(self._workers.get(env.name, [])) < self.size:
                    worker = self._new(env)
                    break
                self._free.wait()
        try:
            yield worker
        finally:
            with self._free:
                idle = self._idle.setdefault(env.name, [])
                idle.append(worker)
                order = self._workers[env.name]
                idle.sort(key=order.index)  # the oldest first: fewest processes kept busy
                # every waiter, whatever its environment: one condition serves them all, and a
                # single wake-up taken by a waiter of another environment (which then waits
                # again) would leave this one's waiter asleep while its worker sits idle
                self._free.notify_all()

    def of(self, env: Env) -> list[Worker]:
        with self._lock:
            return list(self._workers.get(env.name, []))

    def stop(self) -> None:
        """After an interrupt: kill every worker now, calls in progress included, so nothing
        goes on writing into a folder that is about to be removed."""
        self._stopped = True
        for workers in list(self._workers.values()):
            for worker in list(workers):
                worker.kill()

    def close(self) -> None:
        for workers in self._workers.values():
            # an environment found at fault (asked of its first worker) keeps none of its own
            faulty = any(w._fault is not None for w in workers)
            for worker in workers:
                if self._stopped or faulty or not _keep(worker, self.log_suffix):
                    worker.close()
        self._workers.clear()
        self._idle.clear()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class Workers:
    """One environment's workers in a pool, used as one worker (`Pool.worker`): a call leases
    one for its duration; the rest is the first worker's (its environment, log, the check of
    its environment) or all of them (close, kill)."""

    def __init__(self, pool: Pool, env: Env) -> None:
        self.pool = pool
        self.env = env

    @property
    def first(self) -> Worker:
        return self.pool.first(self.env)

    @property
    def log(self) -> Path:
        return self.first.log

    def call(self, request: dict, timeout: float | None = None) -> dict:
        with self.pool.lease(self.env) as worker:
            return worker.call(request, timeout)

    def environment_fault(self) -> str | None:
        return self.first.environment_fault()

    def close(self) -> None:
        for worker in self.pool.of(self.env):
            worker.close()

    def kill(self) -> None:
        for worker in self.pool.of(self.env):
            worker.kill()
