"""`scripts/bench --cold`: a first answer from nothing, phase by phase, with pip and with uv in
one run.

Each side is a fresh clone of this checkout with an empty cache, an empty result store and an
empty pip cache of its own, running `scripts/inventory affected --fix 40` exactly as a new user
would (INVENTORY_INSTALLER=pip for the pip side). Its progress lines, timed as they arrive,
give the phases: the set-up of `.venv` (uv installed from the package index first, on the uv
side), start-up and the registry read, the shared torch, each converter environment (built
side by side), the probes, the registry sweep of the fix's step, and the answer. Then a second
fresh clone answers with uv's cache warm (the first uv side's, linked in) and that side's stored
results: the second clone of a machine. Prints seconds per phase and uv / pip; with `--record
FILE` also writes them as JSON. Asserts nothing. The two sides run one after the other, so the
machine's load is printed with each (`os.getloadavg`): compare ratios from one run.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMAND = ["affected", "--fix", "40"]
_ENV = re.compile(r"^((?:coreai-torch|torch)-[\w.+-]+): (creating|installing torch|ready)")
_BUNDLE_DONE = re.compile(r"^[\w.-]+: \d+ steps?\b")


@dataclass
class Side:
    label: str
    wall: float = 0.0
    cpu: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)
    phases: dict[str, float] = field(default_factory=dict)
    answer: str = ""
    lines: list[tuple[float, str]] = field(default_factory=list)


def _phases(lines: list[tuple[float, str]], wall: float) -> dict[str, float]:
    """Seconds per phase, from the timed progress lines (plain lines: stderr is not a
    terminal). A phase runs from its first line to the line that ends it; environments are
    built side by side, so their seconds overlap."""
    out: dict[str, float] = {}
    venv_end = next((t for t, ln in lines if ln.startswith("installed in ")), 0.0)
    out["venv (.venv set-up)"] = venv_end
    first = next((t for t, ln in lines if t > venv_end and not ln.startswith("bytecode")), venv_end)
    out["start-up, registry read"] = first - venv_end
    started: dict[str, float] = {}
    for t, ln in lines:
        found = _ENV.match(ln)
        if found is None:
            continue
        name, what = found.groups()
        if what == "ready" and name in started:
            out[f"{name}"] = t - started[name]
        elif what != "ready":
            started.setdefault(name, t)
    if started:
        out["environments (side by side, to the last)"] = max(
            out.get(n, 0.0) + s for n, s in started.items()
        ) - min(started.values())
    # each bundle's answer ends with its summary line (`mimi: 4 steps; 3 probes: ...`), the
    # registry sweep of the fix's step, run after them, with its own (`sweep 0.4.1->0.4.2: ...`)
    ready = [t for t, ln in lines if (m := _ENV.match(ln)) and m.group(2) == "ready"]
    answered = [t for t, ln in lines if _BUNDLE_DONE.match(ln)]
    sweep = [t for t, ln in lines if ln.startswith("sweep ")]
    begun = max(ready, default=first)
    if answered:
        out["probes of the fix (to the last bundle's answer)"] = max(answered) - begun
    if sweep and answered:
        out["registry sweep of the fix's step"] = sweep[-1] - max(answered)
    if sweep:
        out["rendering the answer"] = wall - sweep[-1]
    return out


def _run(label: str, clone: Path, env: dict[str, str]) -> Side:
    side = Side(label, load=(os.getloadavg()[0], 0.0))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.Popen(
        [str(clone / "scripts" / "inventory"), *COMMAND],
        cwd=clone,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
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
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    side.cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    side.load = (side.load[0], os.getloadavg()[0])
    if proc.returncode not in (0, 1, 3):
        tail = "\n".join(ln for _, ln in side.lines[-5:])
        raise SystemExit(f"{label}: exit {proc.returncode}\n{tail}")
    side.phases = _phases(side.lines, side.wall)
    side.answer = _json_answer(clone, env)
    return side


def _fresh(
    where: Path, name: str, installer: str, uv_from: Path | None = None, store: Path | None = None
) -> tuple[Path, dict[str, str]]:
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
        INVENTORY_STORE=str(store or base / "store"),
        INVENTORY_INSTALLER=installer,
        PIP_CACHE_DIR=str(base / "pip-cache"),
    )
    return clone, env


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
        sides = {}
        for installer in ("pip", "uv"):
            clone, env = _fresh(where, installer, installer)
            print(f"{installer}: cold first answer in {clone} ...", flush=True)
            sides[installer] = _run(installer, clone, env)
        clone, env = _fresh(
            where, "uv-warm", "uv", uv_from=where / "uv" / "cache", store=where / "uv" / "store"
        )
        print(f"uv, second clone (uv's cache warm, results stored) in {clone} ...", flush=True)
        second = _run("uv, second clone", clone, env)
        pip, uv = sides["pip"], sides["uv"]
        names = list(dict.fromkeys([*pip.phases, *uv.phases]))
        print(f"\n{'phase':46} {'pip':>9} {'uv':>9} {'uv/pip':>7}")
        for name in names:
            a, b = pip.phases.get(name), uv.phases.get(name)
            ratio = f"{b / a:7.2f}" if a and b else "      -"
            print(f"{name:46} {_s(a)} {_s(b)} {ratio}")
        print(f"{'first answer (wall)':46} {_s(pip.wall)} {_s(uv.wall)} {uv.wall / pip.wall:7.2f}")
        print(
            f"{'CPU (user+sys, every process)':46} {_s(pip.cpu)} {_s(uv.cpu)} "
            f"{uv.cpu / pip.cpu:7.2f}"
        )
        print(
            f"{'load average (start, end)':46} {pip.load[0]:4.1f},{pip.load[1]:4.1f} "
            f"{uv.load[0]:4.1f},{uv.load[1]:4.1f}"
        )
        print(
            f"second fresh clone, uv's cache warm, results stored: {second.wall:6.1f} s "
            f"(venv {second.phases.get('venv (.venv set-up)', 0):.1f} s; load "
            f"{second.load[0]:.1f})"
        )
        same = pip.answer == uv.answer == second.answer
        print(f"same answer on all three: {'yes' if same else 'NO'}")
        print(f"machine: {os.cpu_count()} cores")
        if record is not None:
            record.write_text(
                json.dumps(
                    {
                        "command": "inventory " + " ".join(COMMAND),
                        "cores": os.cpu_count(),
                        "sides": {
                            s.label: {
                                "wall": round(s.wall, 1),
                                "cpu": round(s.cpu, 1),
                                "load": s.load,
                                "phases": {k: round(v, 1) for k, v in s.phases.items()},
                            }
                            for s in (pip, uv, second)
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
