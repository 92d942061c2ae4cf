"""Time `inventory affected --fix 40` cold and warm, and the floor it is measured against.

floor: the same probes converted and saved by a bare script, one process per converter
environment (import torch and the converter once, then convert each probe): what any tool must
spend. cold: the real command with `--no-cache` (environments already built). warm: the real
command again, served from the result store. Then a full sweep over one release pair, cold and
warm, and a warm `plan --to 0.4.3`. Prints seconds and ratios; asserts nothing.

`--baseline DIR`: a checkout of other code (e.g. `git worktree add DIR <commit>`) sharing this
store; the warm plan is timed under both, alternately in the same run, and their ratio printed.
`--warm-only`: only the warm lines (no conversion: nothing competes for the cores). The warm
`affected --fix 40` is printed beside `inventory --version` (the interpreter and imports every
command pays): what a warm answer costs above starting the tool.

`--verify BUNDLE...`: also one line per bundle from `inventory verify BUNDLE --to V --json`
(`--verify-to`, default 0.4.2; `--full`: the full target) in a fresh store of its own (the
environments linked, so every part is measured in this run): where its time goes, read off its
record (the build, each release's conversion, each distinct run on the runtime, the run form's
own build and conversions when it differs from the compared form), and the ratio of run time to
conversion time. The default bench does not run it: a whole-bundle check takes minutes.

`--ray JOBS [--record FILE]`: instead, the local executor versus a two-node Ray cluster on this
machine on the same sweep (`scripts/bench_ray.py`).

`--ray-scaling 1,2,3 [--record FILE]`: instead, a cold `release-notes --from 0.4.1 --to 0.4.2`
with the local executor and on local clusters of each size (1 CPU per node, 127.0.0.1), each
cluster's time beside the per-job model's prediction from the smallest one. With `--ray-verify`,
a cold `plan --to 0.4.3 --verify` instead (every whole-program check; about 8 minutes a run).

`--second-driver [--record FILE]`: instead, a second driver with an empty cache answering
`affected --fix 40` and `plan --to 0.4.3` from a bucket a first driver filled (moto's S3 server on
127.0.0.1), beside `inventory --version` and the fetch, timed apart
(`scripts/bench_second_driver.py`).

`--sides [--record FILE]`, `--sides-of STORE`: instead, `affected --fix 40`, `plan --to 0.4.3`
and `release-notes --from 0.4.1 --to 0.4.3` on an empty store, the side conversions their
comparisons took counted from the store against the distinct sides (`scripts/bench_sides.py`);
or a store as it is counted.

`--cold [--where DIR] [--record FILE] [--keep]`: instead, a first answer from nothing, phase by
phase (uv, the project venv, the held torch, each converter environment, the bytecode warm-ups,
the worker start-ups, the conversions), each beside a plain `pip install torch==2.13.0` into a
fresh venv measured in the same run; then a second fresh clone with uv's cache warm
(`scripts/bench_cold.py`; fresh clones under DIR, which should be on the file system of the
cache so that uv can hard-link).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle.envs.environment import ensure_env  # noqa: E402
from oracle.infra.paths import envs_dir  # noqa: E402

FLOOR_SCRIPT = """
import json, sys, pathlib, torch, coreai_torch
from coreai_torch import TorchConverter
sys.path.insert(0, sys.argv[1])
from oracle.workers import probes
for i, spec in enumerate(json.loads(sys.argv[2])):
    p = probes.build(spec)
    ep = torch.export.export(p.module, tuple(p.inputs.values()))
    ep = ep.run_decompositions(coreai_torch.get_decomp_table())
    prog = TorchConverter().add_exported_program(ep).to_coreai()
    if hasattr(prog, "optimize"):
        prog.optimize()
    prog.save_asset(pathlib.Path(sys.argv[3]) / f"p{i}.aimodel")
"""


def timed(cmd: list[str], env: dict[str, str] | None = None, cwd: Path = ROOT) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1, 3):
        sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr}")
    return elapsed, proc.stdout


PLAN = ["plan", "--to", "0.4.3", "--json", "-q"]


def warm_plan(baseline: Path | None, runs: int = 5) -> None:
    """Median of `runs` warm `plan --to 0.4.3`, run as `python -m inventory.cli` from each
    checkout (its own code first on the path), alternating so both see the same load, beside
    `inventory --version` timed in the same run."""
    python = str(ROOT / ".venv" / "bin" / "python")
    roots = [ROOT] + ([baseline] if baseline else [])
    for root in roots:
        timed([python, "-m", "inventory.cli", *PLAN], cwd=root)  # make sure it is warm
    times: dict[Path, list[float]] = {root: [] for root in roots}
    floors: list[float] = []
    for _ in range(runs):
        floors.append(timed([python, "-m", "inventory.cli", "--version"])[0])
        for root in roots:
            times[root].append(timed([python, "-m", "inventory.cli", *PLAN], cwd=root)[0])
    median = {root: statistics.median(t) for root, t in times.items()}
    floor = statistics.median(floors)
    print(
        f"warm  plan --to 0.4.3 (median of {runs}):       {median[ROOT]:6.2f} s   "
        f"inventory --version {floor:.2f} s, ratio {median[ROOT] / floor:4.2f}"
    )
    if baseline:
        print(
            f"warm  plan --to 0.4.3, baseline {baseline}: {median[baseline]:6.2f} s   "
            f"ratio {median[ROOT] / median[baseline]:4.2f}"
        )


def warm_affected(inv: list[str], runs: int = 7) -> float:
    """Median of `runs` warm `affected --fix 40`, printed beside `inventory --version` timed
    in the same run, alternately (the floor any command starts from); returns the warm time."""
    version = [inv[0], "--version"]
    floors, warms = [], []
    for _ in range(runs):
        floors.append(timed(version)[0])
        warms.append(timed(inv)[0])
    floor, warm = statistics.median(floors), statistics.median(warms)
    print(
        f"warm  affected --fix 40 (median of {runs}):       {warm:6.2f} s   "
        f"inventory --version {floor:.2f} s, ratio {warm / floor:4.2f}"
    )
    return warm


def _seconds(value: float | None) -> float:
    return value or 0.0


def verify_line(bundle: str, to: str, full: bool, store: Path) -> None:
    """One `inventory verify BUNDLE --to TO --json` in `store`: its wall and where it went."""
    cmd = [
        str(ROOT / ".venv" / "bin" / "inventory"),
        "verify",
        bundle,
        "--to",
        to,
        "--json",
        "-q",
        *(["--full"] if full else []),
    ]
    wall, out = timed(cmd, env={**os.environ, "INVENTORY_CACHE": str(store)})
    [b] = json.loads(out)["result"]["bundles"]
    if b.get("error"):
        print(f"verify {bundle} --to {to}: {b['error']}")
        return
    build = _seconds(b["build"]["seconds"])
    sides = [_seconds(s["seconds"]) for s in b["sides"].values()]
    run = b.get("run") or {}
    # a run two releases share (the same shipped program) was made once
    once = {run["evidence"].get(r) or r: _seconds(t) for r, t in run.get("seconds", {}).items()}
    runs = sum(once.values())
    # the record's cost covers the run form's own build and conversions too (when it is not
    # the compared form)
    summed = _seconds(b["seconds"])
    run_form = max(0.0, summed - build - sum(sides) - runs)
    params = b["build"]["params"]
    form = f"{b['form']['form']}, {params / 1e6:.1f}M parameters" if params else b["form"]["form"]
    per_side = ", ".join(f"{s:.1f}" for s in sides)
    conversions = sum(sides) or float("nan")
    # the parts summed can exceed the wall: verify converts two releases at a time; the wall
    # also holds the probes of every traced instance and the comparisons
    print(
        f"verify {bundle} --to {to} ({form}): wall {wall:6.1f} s, parts summed {summed:6.1f} s: "
        f"build {build:5.1f} s, conversions {conversions:6.1f} s ({len(sides)} sides: "
        f"{per_side} s, median {statistics.median(sides):.1f} s), runs {runs:6.1f} s "
        f"({len(once)} run(s)), run form build and conversions {run_form:5.1f} s; "
        f"runs / conversions {runs / conversions:5.2f} (with the run form's build and "
        f"conversions {(runs + run_form) / conversions:5.2f})"
    )


def verify_lines(bundles: list[str], to: str, full: bool) -> None:
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        store = Path(tmp)
        (store / "envs").symlink_to(envs_dir())  # the environments are built once, shared
        for bundle in bundles:
            verify_line(bundle, to, full, store)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--baseline", type=Path, help="a checkout of other code to time the warm plan against"
    )
    parser.add_argument("--warm-only", action="store_true", help="only the warm lines")
    parser.add_argument(
        "--verify",
        nargs="+",
        metavar="BUNDLE",
        default=[],
        help="also time `inventory verify BUNDLE` and split its time",
    )
    parser.add_argument("--verify-to", default="0.4.2", help="the release verify compares with")
    parser.add_argument(
        "--full", action="store_true", help="verify the full target instead of a registry miniature"
    )
    parser.add_argument(
        "--ray",
        type=int,
        metavar="JOBS",
        default=0,
        help="instead: a sweep of JOBS probes, local versus a two-node Ray "
        "cluster on this machine (needs the ray extra)",
    )
    parser.add_argument(
        "--record",
        type=Path,
        help="with --ray, --ray-scaling, --cold, --second-driver or --sides: also write the "
        "figures here",
    )
    parser.add_argument(
        "--cold",
        action="store_true",
        help="instead: a first answer from nothing, phase by phase, beside a plain pip torch "
        "install",
    )
    parser.add_argument(
        "--second-driver",
        action="store_true",
        help="instead: a driver with an empty cache answering from a bucket another filled",
    )
    parser.add_argument(
        "--sides",
        action="store_true",
        help="instead: side conversions against distinct sides after three answers, counted "
        "from an empty store",
    )
    parser.add_argument(
        "--sides-of", type=Path, metavar="STORE", help="instead: count the sides of STORE"
    )
    parser.add_argument("--where", type=Path, help="with --cold: the folder for the clones")
    parser.add_argument("--keep", action="store_true", help="with --cold: keep the clones")
    parser.add_argument(
        "--ray-shipped",
        action="store_true",
        help="with --ray: sweep the shipped registry's instances instead",
    )
    parser.add_argument(
        "--ray-scaling",
        metavar="N,N,...",
        help="instead: a cold `release-notes --from 0.4.1 --to 0.4.2`, local and on Ray "
        "clusters of each size (1 CPU per node), with the per-job model's predictions",
    )
    parser.add_argument(
        "--ray-verify",
        action="store_true",
        help="with --ray-scaling: a cold `plan --to 0.4.3 --verify` instead",
    )
    args = parser.parse_args()
    if args.ray_scaling:
        from bench_ray import NOTES, PLAN_VERIFY, scaling_lines

        command = PLAN_VERIFY if args.ray_verify else NOTES
        scaling_lines([int(n) for n in args.ray_scaling.split(",")], args.record, command)
        return
    if args.sides or args.sides_of:
        from bench_sides import sides_lines

        sides_lines(args.record, args.sides_of)
        return
    if args.second_driver:
        from bench_second_driver import second_driver_lines

        second_driver_lines(args.record)
        return
    if args.cold:
        from bench_cold import cold_lines

        cold_lines(args.where, args.record, args.keep)
        return
    if args.ray:
        from bench_ray import ray_lines

        ray_lines(args.ray, args.record, args.ray_shipped)
        return
    if args.baseline and not (args.baseline / "inventory" / "cli.py").is_file():
        sys.exit(f"--baseline {args.baseline}: not a checkout of this project")
    baseline = args.baseline.resolve() if args.baseline else None
    inv = [str(ROOT / ".venv" / "bin" / "inventory"), "affected", "--fix", "40", "--json", "-q"]
    _, out = timed(inv)  # make sure environments exist; not timed
    if args.warm_only:
        warm_affected(inv)
        warm_plan(baseline)
        verify_lines(args.verify, args.verify_to, args.full)
        print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
        return
    data = json.loads(out)["result"]
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
            t, _ = timed(
                [str(env.python), "-c", FLOOR_SCRIPT, str(ROOT), json.dumps(specs), str(target)]
            )
            floor += t
    cold, _ = timed(inv + ["--no-cache"])
    sweep = [
        str(ROOT / ".venv" / "bin" / "inventory"),
        "sweep",
        "--from",
        "0.4.2",
        "--to",
        "0.4.3",
        "--json",
        "-q",
    ]
    sweep_cold, out = timed(sweep + ["--no-cache"])
    sweep_warm, _ = timed(sweep)
    probed = json.loads(out)["result"]["probed"]
    probes = sum(len(b["probes"]) for b in data["bundles"])
    print(
        f"probes converted per side: {probes} (exporter sides: "
        f"{', '.join(sorted(v for v in by_side if v != data['to']))}; new side {data['to']})"
    )
    print(f"floor (bare conversion, sequential per env): {floor:6.2f} s")
    print(
        f"cold  affected --fix 40 --no-cache:          {cold:6.2f} s   ratio to floor "
        f"{cold / floor:4.2f}"
    )
    warm = warm_affected(inv)
    print(f"warm / cold: {warm / cold:4.3f}")
    print(
        f"sweep 0.4.2 -> 0.4.3, {probed} regimes, cold: {sweep_cold:6.2f} s   "
        f"({sweep_cold / probed:.2f} s per regime, both sides converted)"
    )
    print(f"sweep 0.4.2 -> 0.4.3, warm:            {sweep_warm:6.2f} s")
    warm_plan(baseline)
    verify_lines(args.verify, args.verify_to, args.full)
    print(f"machine: {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
