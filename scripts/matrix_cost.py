"""Where the answer matrix's time goes: `answers.compute()` (the session's `matrix` fixture) run
alone on result stores of its own, entry by entry.

Usage: `scripts/matrix-cost ROOT [--record FILE]`. ROOT is made the suite's root
(`INVENTORY_SUITE_ROOT`): its `envs` is linked to the shared environments
(`$INVENTORY_CACHE/envs`, built already), its stores start empty, so every conversion the matrix
makes is made. For each entry: its wall time, the CPU seconds (user + sys) of the process tree
it ran in, how many workers it started (each imports torch and the converter: about 7 CPU-s),
its worker requests by kind, and how many of its conversions (`convert` requests: one side of a
probe under one release) another entry, or the same one, had made already. Prints one line per
entry and the totals; `--record` also writes them as JSON. Asserts nothing: CPU seconds compare
on a shared machine, wall seconds do not.

Each entry runs as its own CLI process, as `answers.run_cli` runs it, under a hook on the worker
client (`Worker._start`, `Worker.call`) that counts from the inside.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "golden"), str(ROOT / "tests" / "helpers")]


def _cpu() -> float:
    """CPU seconds of this process and every child it waited for (the CLI runs, their
    workers)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


# The hook a CLI subprocess runs under: counts its worker start-ups and requests into a file.
_HOOK = """\
import atexit, hashlib, json, os, runpy, sys
from oracle.clients import worker_pool
_seen = {"starts": [], "calls": []}
_start, _call = worker_pool.Worker._start, worker_pool.Worker.call
def _counted_start(self):
    _seen["starts"].append(f"{type(self).__name__}:{self.env.name}")
    return _start(self)
def _counted_call(self, request, timeout=None):
    spec = json.dumps(request.get("spec"), sort_keys=True, default=str)
    key = hashlib.sha256(f"{self.env.name}|{spec}".encode()).hexdigest()[:16]
    _seen["calls"].append([request.get("op"), key])
    return _call(self, request, timeout)
worker_pool.Worker._start, worker_pool.Worker.call = _counted_start, _counted_call
atexit.register(lambda: open(os.environ["MATRIX_COST_FILE"], "w").write(json.dumps(_seen)))
sys.argv = ["inventory", *sys.argv[1:]]
runpy.run_module("inventory.cli", run_name="__main__", alter_sys=True)
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--record", type=Path)
    opts = parser.parse_args()
    shared = Path(os.environ.get("INVENTORY_CACHE", Path.home() / ".cache" / "inventory"))
    root = opts.root.resolve()
    root.mkdir(parents=True, exist_ok=True)
    if not (root / "envs").exists():
        (root / "envs").symlink_to((shared / "envs").resolve())
    os.environ["INVENTORY_SUITE_ROOT"] = str(root)
    os.environ.pop("INVENTORY_CACHE", None)
    os.environ.pop("INVENTORY_STORE", None)

    import answers

    rows: list[dict[str, Any]] = []
    lock = threading.Lock()
    made: Counter[str] = Counter()  # conversion key -> times made so far

    def measured(args: tuple[str, ...], store: str = answers.BARE) -> answers.Run:
        count = root / f".count-{threading.get_ident()}.json"
        before, start = _cpu(), time.monotonic()
        run = _spawned(answers, args, store, count)
        empty: dict[str, list[Any]] = {"starts": [], "calls": []}
        counted = json.loads(count.read_text()) if count.exists() else empty
        count.unlink(missing_ok=True)
        wall, cpu = time.monotonic() - start, _cpu() - before
        converts = [key for op, key in counted["calls"] if op == "convert"]
        with lock:
            repeats = sum(1 for key in converts if made[key])
            made.update(converts)
            rows.append(
                {
                    "entry": " ".join(args),
                    "store": store,
                    "wall": round(wall, 1),
                    "cpu": round(cpu, 1),
                    "starts": len(counted["starts"]),
                    "ops": dict(Counter(op for op, _ in counted["calls"])),
                    "converts": len(converts),
                    "repeats": repeats,
                }
            )
            row = rows[-1]
            print(
                f"{row['wall']:7.1f} s {row['cpu']:7.1f} CPU-s  starts {row['starts']:2d}  "
                f"converts {row['converts']:4d} (repeats {repeats:3d})  {store}: {row['entry']}",
                flush=True,
            )
        return run

    answers.run_cli = measured  # type: ignore[assignment]  # counted, not cached: one run each
    load = os.getloadavg()
    begin_cpu, begin = _cpu(), time.monotonic()
    answers.compute()
    total = {
        "wall": round(time.monotonic() - begin, 1),
        "cpu": round(_cpu() - begin_cpu, 1),
        "starts": sum(r["starts"] for r in rows),
        "converts": sum(r["converts"] for r in rows),
        "repeats": sum(r["repeats"] for r in rows),
        "entries": len(rows),
        "load_before": [round(x, 2) for x in load],
        "load_after": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(total))
    if opts.record:
        opts.record.write_text(json.dumps({"total": total, "entries": rows}, indent=1) + "\n")
    return 0


def _spawned(answers: Any, args: tuple[str, ...], store: str, count: Path) -> Any:
    """`answers.run_cli`'s subprocess, under the hook that counts."""
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-c", _HOOK, *args, "--json", "-q"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**answers.suite_env(store), "MATRIX_COST_FILE": str(count)},
    )
    if "Traceback" in proc.stderr or not proc.stdout.strip():
        raise RuntimeError(f"inventory {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return answers.Run(proc.returncode, json.loads(proc.stdout), proc.stderr)


if __name__ == "__main__":
    raise SystemExit(main())
