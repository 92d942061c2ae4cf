"""Time `inventory affected --fix 40` cold and warm, and the floor it is measured against.

floor: the same probes converted and saved by a bare script, one process per converter
environment (import torch and the converter once, then convert each probe): what any tool must
spend. cold: the real command with `--no-cache` (environments already built). warm: the real
command again, served from the result store. Then a full sweep over one release pair, cold and
warm, and a warm `plan --to 0.4.3`. Prints seconds and ratios; asserts nothing.

`--baseline DIR`: a checkout of other code (e.g. `git worktree add DIR <commit>`) sharing this
store; the warm plan is timed under both, alternately in the same run, and their ratio printed.
`--warm-only`: only the warm lines (no conversion: nothing competes for the cores).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle.envs import ensure_env  # noqa: E402

FLOOR_SCRIPT = """
import json, sys, pathlib, torch, coreai_torch
from coreai_torch import TorchConverter
sys.path.insert(0, sys.argv[1])
from oracle import probes
for i, spec in enumerate(json.loads(sys.argv[2])):
    p = probes.build(spec)
    ep = torch.export.export(p.module, tuple(p.inputs.values()))
    ep = ep.run_decompositions(coreai_torch.get_decomp_table())
    prog = TorchConverter().add_exported_program(ep).to_coreai()
    if hasattr(prog, "optimize"):
        prog.optimize()
    prog.save_asset(pathlib.Path(sys.argv[3]) / f"p{i}.aimodel")
"""


def timed(cmd: list[str], env: dict[str, str] | None = None,
          cwd: Path = ROOT) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1, 3):
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr}")
    return elapsed, proc.stdout


PLAN = ["plan", "--to", "0.4.3", "--json", "-q"]


def warm_plan(baseline: Path | None, runs: int = 5) -> None:
    """Best of `runs` warm `plan --to 0.4.3`, run as `python -m inventory.cli` from each checkout
    (its own code first on the path), alternating so both see the same load."""
    python = str(ROOT / ".venv" / "bin" / "python")
    roots = [ROOT] + ([baseline] if baseline else [])
    for root in roots:
        timed([python, "-m", "inventory.cli", *PLAN], cwd=root)  # make sure it is warm
    times: dict[Path, list[float]] = {root: [] for root in roots}
    for _ in range(runs):
        for root in roots:
            times[root].append(timed([python, "-m", "inventory.cli", *PLAN], cwd=root)[0])
    best = {root: min(t) for root, t in times.items()}
    print(f"warm  plan --to 0.4.3 (best of {runs}):         {best[ROOT]:6.2f} s")
    if baseline:
        print(f"warm  plan --to 0.4.3, baseline {baseline}: {best[baseline]:6.2f} s   "
              f"ratio {best[ROOT] / best[baseline]:4.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="a checkout of other code to time the "
                        "warm plan against")
    parser.add_argument("--warm-only", action="store_true", help="only the warm lines")
    args = parser.parse_args()
    if args.baseline and not (args.baseline / "inventory" / "cli.py").is_file():
        sys.exit(f"--baseline {args.baseline}: not a checkout of this project")
    baseline = args.baseline.resolve() if args.baseline else None
    inv = [str(ROOT / ".venv" / "bin" / "inventory"), "affected", "--fix", "40", "--json", "-q"]
    _, out = timed(inv)  # make sure environments exist; not timed
    if args.warm_only:
        warm = min(timed(inv)[0] for _ in range(3))
        print(f"warm  affected --fix 40 (best of 3):         {warm:6.2f} s")
        warm_plan(baseline)
        print(f"machine: {os.cpu_count()} cores")
        return
    data = json.loads(out)
    by_side: dict[str, list[dict]] = {}
    for b in data["bundles"]:
        for p in b["probes"]:
            by_side.setdefault(b["exporter"], []).append(p["spec"])
            by_side.setdefault(data["to"], []).append(p["spec"])
    floor = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for version, specs in by_side.items():
            env = ensure_env(version)
            target = Path(tmp) / version
            target.mkdir()
            t, _ = timed([str(env.python), "-c", FLOOR_SCRIPT, str(ROOT), json.dumps(specs),
                          str(target)])
            floor += t
    cold, _ = timed(inv + ["--no-cache"])
    warm_runs = [timed(inv)[0] for _ in range(3)]
    warm = min(warm_runs)
    sweep = [str(ROOT / ".venv" / "bin" / "inventory"), "sweep", "--from", "0.4.2", "--to",
             "0.4.3", "--json", "-q"]
    sweep_cold, out = timed(sweep + ["--no-cache"])
    sweep_warm, _ = timed(sweep)
    probed = json.loads(out)["probed"]
    probes = sum(len(b["probes"]) for b in data["bundles"])
    print(f"probes converted per side: {probes} (exporter sides: "
          f"{', '.join(sorted(v for v in by_side if v != data['to']))}; new side {data['to']})")
    print(f"floor (bare conversion, sequential per env): {floor:6.2f} s")
    print(f"cold  affected --fix 40 --no-cache:          {cold:6.2f} s   ratio to floor "
          f"{cold / floor:4.2f}")
    print(f"warm  affected --fix 40 (best of 3):         {warm:6.2f} s   ratio to cold "
          f"{warm / cold:4.3f}")
    print(f"sweep 0.4.2 -> 0.4.3, {probed} regimes, cold: {sweep_cold:6.2f} s   "
          f"({sweep_cold / probed:.2f} s per regime, both sides converted)")
    print(f"sweep 0.4.2 -> 0.4.3, warm:            {sweep_warm:6.2f} s")
    warm_plan(baseline)
    print(f"machine: {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
