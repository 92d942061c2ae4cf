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

Each entry runs as `answers.compute()` runs it (the CLI's app in this process, one run after
another, a store's runs sharing warm workers); a hook on the worker client (`Worker._start`,
`Worker.call`) counts. An entry's CPU seconds are this process's and its children's (those
waited for) plus what the workers alive at its end used during it (read from /proc), so a worker
kept for the next entry is counted in the entries it worked for. Until 2026-12-07 each entry
was a CLI process of its own, counted by the same hook inside it (this file's history).
"""

from __future__ import annotations

import argparse
import hashlib
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


_TICK = os.sysconf("SC_CLK_TCK")


def _live_workers() -> dict[int, float]:
    """pid -> CPU seconds so far, of every worker process alive in this process's pools."""
    from oracle.clients import worker_pool

    out = {}
    for worker in list(worker_pool._LIVE):
        proc = worker._proc
        if proc is None or proc.poll() is not None:
            continue
        try:
            fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[proc.pid] = sum(int(v) for v in fields[11:15]) / _TICK  # utime stime cutime cstime
    return out


_SEEN: dict[str, list[Any]] = {"starts": [], "calls": []}


def _hook() -> None:
    from oracle.clients import worker_pool

    start, call = worker_pool.Worker._start, worker_pool.Worker.call

    def counted_start(self: worker_pool.Worker) -> Any:
        _SEEN["starts"].append(f"{type(self).__name__}:{self.env.name}")
        return start(self)

    def counted_call(
        self: worker_pool.Worker, request: dict[str, Any], timeout: float | None = None
    ) -> dict[str, Any]:
        spec = json.dumps(request.get("spec"), sort_keys=True, default=str)
        key = hashlib.sha256(f"{self.env.name}|{spec}".encode()).hexdigest()[:16]
        _SEEN["calls"].append([request.get("op"), key])
        return call(self, request, timeout)

    worker_pool.Worker._start = counted_start  # type: ignore[method-assign]
    worker_pool.Worker.call = counted_call  # type: ignore[method-assign]


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

    _hook()
    plain = answers.run_cli.__wrapped__
    rows: list[dict[str, Any]] = []
    lock = threading.Lock()
    made: Counter[str] = Counter()  # conversion key -> times made so far

    def measured(args: tuple[str, ...], store: str = answers.BARE) -> answers.Run:
        for seen in _SEEN.values():
            seen.clear()
        before, start, live = _cpu(), time.monotonic(), _live_workers()
        run = plain(args, store)
        counted = {k: list(v) for k, v in _SEEN.items()}
        now = _live_workers()
        wall = time.monotonic() - start
        cpu = _cpu() - before + sum(now.values()) - sum(live.values())
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


if __name__ == "__main__":
    raise SystemExit(main())
