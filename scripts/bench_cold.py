"""`scripts/bench --cold`: a first answer from nothing, phase by phase, each phase beside a plain
`pip install torch==2.13.0` into a fresh venv measured in the same run.

Three measurements, one after the other: the plain install (a fresh venv, an empty pip cache of
its own: what any torch user pays once); a fresh clone of this checkout with an empty cache, an
empty result store and an empty pip cache, running `scripts/inventory affected --fix 40` exactly
as a new user would; then a second fresh clone with uv's cache warm (the first clone's, linked
in) and everything else empty, result store included: the second clone of a machine.

A clone's phases come from its progress lines, timed as they arrive (plain lines: stderr is not
a terminal): uv installed from the package index, the project venv, start-up, the held torch,
each converter environment (built side by side, so their seconds overlap), the probes and the
registry sweep of the fix's step if the command runs one. The processes the tool starts are
sampled every 0.1 s from /proc: a bytecode warm-up is a process whose script is a warm-up (its
seconds and CPU), a worker start-up runs from its process's start to its first idle moment
(asleep, its CPU still: waiting for a request). Prints seconds per phase and its ratio to the
plain install, then each clone's timeline (when each environment was ready, each warm-up ran,
each worker started and was ready: what held the answer back); with `--record FILE` also
writes them as JSON. Asserts nothing. Ratios from one
run are what compare on a shared machine: the load is printed with each measurement.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMAND = ["affected", "--fix", "40"]
TORCH = "torch==2.13.0"
_ENV = re.compile(r"^((?:coreai-torch|torch)-[\w.+-]+): (creating|installing torch|ready)")
_BUNDLE_DONE = re.compile(r"^[\w.-]+: \d+ steps?\b")
_TICK = os.sysconf("SC_CLK_TCK")


@dataclass
class Proc:
    """One process the tool started, as sampled."""

    cmd: str
    parent: int
    start: float  # seconds since the measurement began
    last: float  # last seen
    cpu: float = 0.0
    idle_at: float | None = None  # first moment asleep with its CPU unchanged


@dataclass
class Side:
    label: str
    wall: float = 0.0
    cpu: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)
    phases: dict[str, float] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    answer: str = ""
    lines: list[tuple[float, str]] = field(default_factory=list)
    procs: dict[int, Proc] = field(default_factory=dict)


def _boot() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    return 0.0


def _sample(side: Side, marks: tuple[str, ...], began: float, done: threading.Event) -> None:
    """Every 0.1 s until `done`: the processes whose command line names one of `marks`."""
    boot = _boot()
    while not done.wait(0.1):
        now = time.time() - began
        for entry in os.scandir("/proc"):
            if not entry.name.isdigit():
                continue
            pid = int(entry.name)
            try:
                known = side.procs.get(pid)
                if known is None:
                    cmd = Path(entry.path, "cmdline").read_bytes().replace(b"\0", b" ").decode()
                    if not any(m in cmd for m in marks):
                        continue
                stat = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            state, parent = stat[0], int(stat[1])
            cpu = (int(stat[11]) + int(stat[12])) / _TICK
            if known is None:
                start = boot + int(stat[19]) / _TICK - began
                side.procs[pid] = Proc(cmd, parent, start, now, cpu)
                continue
            if known.idle_at is None and state == "S" and cpu == known.cpu and cpu > 0.5:
                known.idle_at = now
            known.cpu, known.last = cpu, now


def _span(procs: list[Proc], end: str) -> tuple[float, float] | None:
    if not procs:
        return None
    ends = [(p.idle_at if end == "idle" and p.idle_at is not None else p.last) for p in procs]
    return min(p.start for p in procs), max(ends)


def _phases(side: Side) -> None:
    """Seconds per phase, from the timed progress lines and the sampled processes. A phase runs
    from its first line to the line that ends it."""
    lines, out = side.lines, side.phases
    installing = next((t for t, ln in lines if ln.startswith("installing inventory into")), 0.0)
    said_uv = any(ln.startswith("installing uv ") for _, ln in lines)
    out["uv (from the package index)"] = installing if said_uv else 0.0
    venv_end = next((t for t, ln in lines if ln.startswith("installed in ")), installing)
    out["project venv (.venv)"] = venv_end - installing
    first = next((t for t, ln in lines if t > venv_end and not ln.startswith("bytecode")), venv_end)
    out["start-up, registry read"] = first - venv_end
    started: dict[str, float] = {}
    for t, ln in lines:
        found = _ENV.match(ln)
        if found is None:
            continue
        name, what = found.groups()
        if what == "ready" and name in started:
            out[name] = t - started[name]
        elif what != "ready":
            started.setdefault(name, t)
    ready = [t for t, ln in lines if (m := _ENV.match(ln)) and m.group(2) == "ready"]
    if started:
        out["environments (side by side, to the last)"] = max(ready, default=first) - min(
            started.values()
        )
    procs = list(side.procs.values())
    workers = {pid: p for pid, p in side.procs.items() if "_worker.py" in p.cmd}
    # the prelude's watchdog is a fork of its worker (same command line): not a worker
    starts = [p for p in workers.values() if p.parent not in workers]
    warm = [p for p in procs if "warm_up" in p.cmd]
    span = _span(warm, "last")
    if span is not None:
        out["bytecode warm-ups (first start to last end)"] = span[1] - span[0]
        side.notes["bytecode warm-ups (first start to last end)"] = (
            f"{len(warm)} process(es), {sum(p.cpu for p in warm):.1f} CPU-s"
        )
    span = _span(starts, "idle")
    if span is not None:
        out["worker start-ups (first start to last first idle)"] = span[1] - span[0]
        each = [(w.idle_at or w.last) - w.start for w in starts]
        side.notes["worker start-ups (first start to last first idle)"] = (
            f"{len(starts)} worker(s), longest {max(each):.1f} s"
        )
    answered = [t for t, ln in lines if _BUNDLE_DONE.match(ln)]
    sweep = [t for t, ln in lines if ln.startswith("sweep ")]
    begun = max(ready, default=first)
    if answered:
        out["probes of the fix (last environment ready to the last answer)"] = max(answered) - begun
    if sweep and answered:
        out["registry sweep of the fix's step"] = sweep[-1] - max(answered)
    out["first answer (wall)"] = side.wall


_ENV_OF = re.compile(r"(coreai-torch-[\w.+-]+?)/bin/python")


def timeline(side: Side) -> list[tuple[float, str]]:
    """What the critical path is made of, in order, in seconds from the command's start: when
    each environment was ready, when the bytecode warm-ups ran, when each worker started and
    first fell idle (ready for its first probe), and when the answer was done. A worker that
    starts well after its environment was ready was held back (by a warm-up it waits for)."""
    events: list[tuple[float, str]] = []
    for t, ln in side.lines:
        found = _ENV.match(ln)
        if found is not None and found.group(2) == "ready":
            events.append((t, f"{found.group(1)} ready"))
    for p in side.procs.values():
        if "warm_up" in p.cmd:
            what = "held torch's" if "warm_up_torch" in p.cmd else "an environment's"
            events.append((p.start, f"bytecode warm-up ({what}) starts"))
            events.append((p.last, f"bytecode warm-up ({what}) ends, {p.cpu:.1f} CPU-s"))
    workers = {pid: p for pid, p in side.procs.items() if "_worker.py" in p.cmd}
    for p in workers.values():
        if p.parent in workers:
            continue  # a worker's watchdog, a fork of it
        env = _ENV_OF.search(p.cmd)
        name = env.group(1) if env else "a worker"
        events.append((p.start, f"{name}: worker starts"))
        if p.idle_at is not None:
            events.append(
                (p.idle_at, f"{name}: worker idle (started in {p.idle_at - p.start:.1f} s)")
            )
    answered = [t for t, ln in side.lines if _BUNDLE_DONE.match(ln)]
    if answered:
        events.append((max(answered), "last bundle answered"))
    events.append((side.wall, "first answer (wall)"))
    return sorted(events)


def _measure(
    label: str, cmd: list[str], cwd: Path, env: dict[str, str], marks: tuple[str, ...]
) -> Side:
    side = Side(label, load=(os.getloadavg()[0], 0.0))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.time()
    start = time.monotonic()
    done = threading.Event()
    sampler = threading.Thread(target=_sample, args=(side, marks, began, done), daemon=True)
    sampler.start()
    proc = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            side.lines.append((time.monotonic() - start, line.strip()))

    reader = threading.Thread(target=read)
    reader.start()
    side.answer = proc.stdout.read() if proc.stdout else ""
    proc.wait()
    reader.join()
    side.wall = time.monotonic() - start
    done.set()
    sampler.join()
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    side.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    side.load = (side.load[0], os.getloadavg()[0])
    if proc.returncode not in (0, 1, 3):
        tail = "\n".join(ln for _, ln in side.lines[-5:])
        raise SystemExit(f"{label}: exit {proc.returncode}\n{tail}")
    return side


def _plain_torch(where: Path) -> Side:
    """`pip install torch==2.13.0` into a fresh venv with an empty pip cache: the yardstick."""
    base = where / "plain-torch"
    base.mkdir(parents=True)
    python = shutil.which(os.environ.get("INVENTORY_PYTHON", "python3.11")) or sys.executable
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INVENTORY_", "UV_"))}
    env["PIP_CACHE_DIR"] = str(base / "pip-cache")
    script = (
        f"set -e; {python} -m venv {base / 'venv'}; "
        f"{base / 'venv' / 'bin' / 'python'} -m pip install -q --disable-pip-version-check {TORCH}"
    )
    side = _measure(f"pip install {TORCH}", ["bash", "-c", script], base, env, ())
    side.phases["pip install torch into a fresh venv"] = side.wall
    return side


def _fresh(
    where: Path, name: str, uv_from: Path | None = None
) -> tuple[Path, Path, dict[str, str]]:
    """A clone of this checkout and the environment of a user who has nothing yet."""
    base = where / name
    clone = base / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    cache = base / "cache"
    cache.mkdir(parents=True)
    if uv_from is not None:  # the second clone of a machine: uv's cache and uv itself are there
        for kept in ("uv", "tools"):
            (cache / kept).symlink_to(uv_from / kept)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("INVENTORY_", "UV_"))}
    env.update(
        INVENTORY_CACHE=str(cache),
        INVENTORY_STORE=str(base / "store"),
        PIP_CACHE_DIR=str(base / "pip-cache"),
    )
    return clone, cache, env


def _clone_side(label: str, clone: Path, cache: Path, env: dict[str, str]) -> Side:
    side = _measure(
        label,
        [str(clone / "scripts" / "inventory"), *COMMAND],
        clone,
        env,
        (str(clone), str(cache)),
    )
    _phases(side)
    side.answer = _json_answer(clone, env)
    return side


def _json_answer(clone: Path, env: dict[str, str]) -> str:
    """The answer again, as JSON, from the store just filled, with the side's own folders
    written as placeholders (each side has its own store)."""
    proc = subprocess.run(
        [str(clone / "scripts" / "inventory"), *COMMAND, "--json", "-q"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
    )
    text = proc.stdout
    for key in ("INVENTORY_STORE", "INVENTORY_CACHE"):
        text = text.replace(env[key], f"${key}")
    return text


def cold_lines(where: Path | None, record: Path | None, keep: bool) -> None:
    where = Path(tempfile.mkdtemp(prefix="bench-cold-", dir=where))
    try:
        print(f"plain: pip install {TORCH} into a fresh venv ...", flush=True)
        plain = _plain_torch(where)
        clone, cache, env = _fresh(where, "cold")
        print(f"cold: first answer from nothing in {clone} ...", flush=True)
        cold = _clone_side("cold", clone, cache, env)
        clone, cache, env = _fresh(where, "uv-warm", uv_from=where / "cold" / "cache")
        print(f"uv's cache warm, everything else empty, in {clone} ...", flush=True)
        warm = _clone_side("uv's cache warm", clone, cache, env)
        base = plain.wall
        print(f"\n{'phase':64} {'cold':>9} {'ratio':>6} {'uv warm':>9} {'ratio':>6}")
        print(f"{'pip install ' + TORCH + ' into a fresh venv (the yardstick)':64} {_s(base)}")
        for name in dict.fromkeys([*cold.phases, *warm.phases]):
            a, b = cold.phases.get(name), warm.phases.get(name)
            print(f"{name:64} {_s(a)} {_r(a, base)} {_s(b)} {_r(b, base)}")
            for side in (cold, warm):
                if name in side.notes:
                    print(f"    {side.label}: {side.notes[name]}")
        print(
            f"{'CPU (user+sys, every process)':64} {_s(cold.cpu)} {_r(cold.cpu, plain.cpu)} "
            f"{_s(warm.cpu)} {_r(warm.cpu, plain.cpu)}   (pip install: {plain.cpu:.1f} CPU-s)"
        )
        for side in (cold, warm):
            print(f"\ntimeline, {side.label} (seconds from the command's start):")
            for t, what in timeline(side):
                print(f"  {t:7.1f}  {what}")
        print(
            "load average (start, end): "
            + "; ".join(f"{s.label} {s.load[0]:.1f}, {s.load[1]:.1f}" for s in (plain, cold, warm))
        )
        same = cold.answer == warm.answer
        print(f"same answer on both clones: {'yes' if same else 'NO'}")
        print(f"machine: {os.cpu_count()} cores")
        if record is not None:
            record.write_text(
                json.dumps(
                    {
                        "command": "inventory " + " ".join(COMMAND),
                        "yardstick": f"pip install {TORCH} into a fresh venv",
                        "cores": os.cpu_count(),
                        "sides": {
                            s.label: {
                                "wall": round(s.wall, 1),
                                "cpu": round(s.cpu, 1),
                                "load": s.load,
                                "phases": {k: round(v, 1) for k, v in s.phases.items()},
                                "ratios": {k: round(v / base, 2) for k, v in s.phases.items()},
                                "notes": s.notes,
                                "timeline": [[round(t, 1), what] for t, what in timeline(s)],
                            }
                            for s in (plain, cold, warm)
                        },
                        "same_answer": same,
                    },
                    indent=2,
                )
                + "\n"
            )
    finally:
        if not keep:
            shutil.rmtree(where, ignore_errors=True)


def _s(value: float | None) -> str:
    return f"{value:7.1f} s" if value is not None else "        -"


def _r(value: float | None, base: float) -> str:
    return f"{value / base:6.2f}" if value is not None and base else "     -"
