"""`scripts/bench --ray`: the same small sweep under the local executor and on a two-node Ray
cluster started on this machine (one CPU per node, 127.0.0.1 only), in one run; prints seconds,
the overhead ratio and the per-job cost the scale-out estimate of docs/measurements.md uses.
Asserts nothing.

The sweep is `sweep --registry --from 0.4.1 --to 0.4.2` of a registry of JOBS distinct
conv_transpose instances (each a job: both sides converted, both assets run on one runtime),
cold in a fresh store (environments linked, so nothing is built), then warm (every result read
back, no job dispatched). On a 2-core machine no speed-up is expected: the two nodes share the
same two cores, so the ratio is the engine's overhead, not its gain.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from oracle.infra.portable_paths import portable

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = str(ROOT / ".venv" / "bin" / "inventory")
RAY_ENV = {"RAY_USAGE_STATS_ENABLED": "0", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}


def _ray_tmpdir(folder: Path) -> None:
    """Ray writes the cluster's address to <RAY_TMPDIR>/ray/ray_current_cluster whatever the
    nodes' temp_dir, and fails where that folder does not exist (a fresh machine's /tmp/ray):
    kept in the bench's own folder, removed with it."""
    (folder / "ray").mkdir(exist_ok=True)
    os.environ["RAY_TMPDIR"] = str(folder)


def registry(folder: Path, jobs: int) -> Path:
    path = folder / "bench.toml"
    text = (
        '[bundles.bench]\nfiles = ["bench"]\ndtype = "float32"\n'
        '[bundles.bench.exporter]\nconverter = "0.4.1"\nsource = "bench"\n'
    )
    for c in range(11, 11 + jobs):  # channels no test uses
        text += (
            '[[bundles.bench.instances]]\nkind = "conv_transpose"\ndtype = "float32"\n'
            f'source = "bench"\nparams = {{ dim = 1, in_channels = {c}, out_channels = 2, '
            "kernel = [4], stride = [2], padding = [0], output_padding = [1], "
            f"input_shape = [1, {c}, 11] }}\n"
        )
    path.write_text(text)
    return path


def store(folder: Path, name: str) -> Path:
    from oracle.infra.paths import envs_dir

    out = folder / name
    out.mkdir()
    (out / "envs").symlink_to(envs_dir())
    return out


def sweep(reg: Path, cache: Path, *extra: str) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(
        [
            INVENTORY,
            "sweep",
            "--registry",
            "--registry-file",
            str(reg),
            "--from",
            "0.4.1",
            "--to",
            "0.4.2",
            "--json",
            "-q",
            *extra,
        ],
        capture_output=True,
        text=True,
        env={**os.environ, **RAY_ENV, "INVENTORY_CACHE": str(cache)},
    )
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1):
        raise SystemExit(f"sweep failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    return took, proc.stdout


def shipped_jobs() -> int:
    """Jobs of one `sweep --registry` step over the shipped registry (its distinct instances)."""
    from inventory.registry import DEFAULT_REGISTRY, load_registry
    from inventory.sweep import registry_regimes

    return len(registry_regimes(load_registry(DEFAULT_REGISTRY)))


def ray_lines(jobs: int, record: Path | None, shipped: bool = False) -> dict[str, Any]:
    """`shipped`: the shipped registry's instances (every one a job) instead of `jobs`
    synthetic ones: the per-job cost of a real inventory."""
    os.environ.update(RAY_ENV)
    from ray.cluster_utils import Cluster

    from oracle.envs.environment import ensure_env

    ensure_env("0.4.1")
    ensure_env("0.4.2")
    out: dict[str, Any] = {"jobs": jobs, "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="bench-ray-", dir="/tmp") as tmp:
        folder = Path(tmp)
        if shipped:
            from inventory.registry import DEFAULT_REGISTRY

            reg, jobs = DEFAULT_REGISTRY, shipped_jobs()
            out["jobs"] = jobs
        else:
            reg = registry(folder, jobs)
        _ray_tmpdir(folder)
        local = store(folder, "local")
        out["local_cold_s"], local_answer = sweep(reg, local)
        out["local_warm_s"], _ = sweep(reg, local)
        node: dict[str, Any] = {
            "num_cpus": 1,
            "include_dashboard": False,
            "node_ip_address": "127.0.0.1",
            "object_store_memory": 100 * 1024**2,
        }
        start = time.perf_counter()
        cluster = Cluster(
            initialize_head=True,
            connect=False,
            head_node_args={**node, "temp_dir": str(folder / "ray-tmp")},
        )
        try:
            cluster.add_node(**node)
            cluster.wait_for_nodes()
            out["cluster_start_s"] = time.perf_counter() - start
            remote = store(folder, "on-ray")
            flags = ("--executor", "ray", "--ray-address", cluster.address)
            out["ray_cold_s"], ray_answer = sweep(reg, remote, *flags)
            out["ray_warm_s"], _ = sweep(reg, remote, *flags)
        finally:
            cluster.shutdown()
        ledgers = [
            json.loads(p.read_text()) for p in sorted((remote / "runs" / "ray").glob("*.json"))
        ]
        per_job = [j["seconds"] for j in ledgers[0]["jobs"]]
        out["ray_jobs_per_node"] = {n[:8]: v["jobs"] for n, v in ledgers[0]["nodes"].items()}
        out["ray_job_s_mean"] = sum(per_job) / len(per_job)
        out["ray_job_s_max"] = max(per_job)
        # without each agent's first job (its workers' start-up): the cost of one more job
        firsts = {j["node"]: i for i, j in reversed(list(enumerate(ledgers[0]["jobs"])))}
        steady = [s for i, s in enumerate(per_job) if i not in firsts.values()] or per_job
        out["ray_job_s_steady"] = sum(steady) / len(steady)
        out["ray_warm_dispatched"] = ledgers[-1]["dispatched"]
        out["same_answer"] = local_answer.replace(str(local), "<store>") == ray_answer.replace(
            str(remote), "<store>"
        )
        shutil.rmtree(folder / "ray-tmp", ignore_errors=True)
    out["shipped_registry_jobs_per_step"] = shipped_jobs()
    what = "instances of the shipped registry" if shipped else "conv_transpose instances"
    print(f"ray bench: sweep --registry 0.4.1 -> 0.4.2 of {jobs} {what}, {out['cores']} cores")
    print(
        f"local cold {out['local_cold_s']:6.2f} s ({out['local_cold_s'] / jobs:.2f} s per job)"
        f"   warm {out['local_warm_s']:5.2f} s"
    )
    print(
        f"ray   cold {out['ray_cold_s']:6.2f} s on 2 nodes {out['ray_jobs_per_node']}"
        f"   warm {out['ray_warm_s']:5.2f} s ({out['ray_warm_dispatched']} dispatched)"
        f"   cluster start {out['cluster_start_s']:.1f} s (not counted)"
    )
    print(
        f"ratio ray/local: cold {out['ray_cold_s'] / out['local_cold_s']:4.2f}   warm "
        f"{out['ray_warm_s'] / out['local_warm_s']:4.2f}   same answer: {out['same_answer']}"
    )
    print(
        f"per job on a node: mean {out['ray_job_s_mean']:.2f} s, max {out['ray_job_s_max']:.2f}"
        f" s, without each agent's first (its workers' start) {out['ray_job_s_steady']:.2f} s"
        " (the agent's own clock)"
    )
    print(f"shipped registry: {out['shipped_registry_jobs_per_step']} jobs per release step")
    if record is not None:
        record.write_text(json.dumps(portable(out), indent=2) + "\n")
        print(f"recorded in {record}")
    return out


# The release step whose notes are timed on 1, 2 and 3 nodes (`--ray-scaling`).
NOTES = ("release-notes", "--from", "0.4.1", "--to", "0.4.2", "--json", "-q")
# `--ray-scaling N --ray-verify`: the release-day plan with every whole-program check
PLAN_VERIFY = ("plan", "--to", "0.4.3", "--verify", "--json", "-q")
# what measuring cost, which differs between any two runs (the answers' own figures)
COSTS = {"seconds", "conversion_seconds", "read_seconds", "peak_mb", "timing"}


def _notes(cache: Path, *extra: str, command: tuple[str, ...] = NOTES) -> tuple[float, str]:
    env = {k: v for k, v in os.environ.items() if k != "INVENTORY_STORE"}
    start = time.perf_counter()
    proc = subprocess.run(
        [INVENTORY, *command, *extra],
        capture_output=True,
        text=True,
        env={**env, **RAY_ENV, "INVENTORY_CACHE": str(cache)},
    )
    took = time.perf_counter() - start
    if proc.returncode not in (0, 1, 3):  # 3: an inconclusive answer is still an answer
        raise SystemExit(f"{command[0]} failed ({proc.returncode}): {proc.stderr.strip()[-400:]}")
    return took, proc.stdout.replace(str(cache), "<store>")


# a path, with the `<store>` a local answer's store path was replaced by
_PATH = re.compile(r"(?:<store>)?/[^\s:()']+")


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two answers differ, field by field, but for `cached` (whether this run read a result
    back from the store: a Ray driver stores each as it lands and reads it back, a local run keeps
    it in memory), what measuring cost (COSTS), the paths inside a line (a run's own work
    folder, a node's log) and the machine a node's worker failure names (the loopback
    cluster's nodes are this machine)."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = (set(a) | set(b)) - {"cached"} - COSTS
        return [d for k in sorted(keys) for d in _differences(a.get(k), b.get(k), f"{path}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [
            d
            for i, (x, y) in enumerate(zip(a, b, strict=True))
            for d in _differences(x, y, f"{path}[{i}]")
        ]
    if isinstance(a, str) and isinstance(b, str):
        # an error line names the run's own work folder or a worker's log: a path, per run;
        # a node's worker failure also names the node whose log it is
        here = f" on {socket.gethostname()}"
        a, b = _PATH.sub("<path>", a).replace(here, ""), _PATH.sub("<path>", b).replace(here, "")
    return [] if a == b else [path or "."]


def _ledger(cache: Path) -> dict[str, Any]:
    return json.loads(sorted((cache / "runs" / "ray").glob("*.json"))[-1].read_text())


def _at_once(nodes: int, cores: int) -> int:
    """Jobs that run at once: one per node, but a job keeps two worker processes busy (its two
    sides), so no more than half the machine's cores' worth (the design's one agent per two
    CPUs): nodes beyond that share the same cores."""
    return max(1, min(nodes, cores // 2))


def scaling_lines(
    nodes: list[int], record: Path | None, command: tuple[str, ...] = NOTES
) -> dict[str, Any]:
    """`command` (`release-notes --from 0.4.1 --to 0.4.2`, or PLAN_VERIFY), cold (a fresh
    store, environments linked), with
    the local executor and on local clusters of each size in `nodes` (1 CPU per node,
    127.0.0.1), in one run; beside each cluster's time, the per-job model's prediction from the
    smallest: T(N) = F + first + (W - first) x at_once(base) / at_once(N), where W is the
    seconds of every job on its nodes, `first` the longest first job (an agent's workers
    starting), F the rest of its wall time (the driver's start-up, planning, the answer), and
    at_once(N) the jobs that can run at once (`_at_once`). Asserts nothing."""
    os.environ.update(RAY_ENV)
    from ray.cluster_utils import Cluster

    from oracle.envs.environment import ensure_env

    for release in ("0.4.0", "0.4.1", "0.4.2", "0.4.3"):
        ensure_env(release)  # the load checks run on every runtime, sam3's chain from 0.4.0
    cores = os.cpu_count() or 1
    out: dict[str, Any] = {"command": "inventory " + " ".join(command), "cores": cores, "runs": {}}
    node: dict[str, Any] = {
        "num_cpus": 1,
        "include_dashboard": False,
        "node_ip_address": "127.0.0.1",
        "object_store_memory": 100 * 1024**2,
    }
    with tempfile.TemporaryDirectory(prefix="bench-ray-scaling-", dir="/tmp") as tmp:
        folder = Path(tmp)
        _ray_tmpdir(folder)
        local = store(folder, "local")
        wall, answer = _notes(local, command=command)
        out["runs"]["local"] = {"wall_s": round(wall, 1)}
        model: dict[str, float] = {}
        for n in sorted(nodes):
            start = time.perf_counter()
            cluster = Cluster(
                initialize_head=True,
                connect=False,
                head_node_args={**node, "temp_dir": str(folder / f"ray-tmp-{n}")},
            )
            try:
                for _ in range(n - 1):
                    cluster.add_node(**node)
                cluster.wait_for_nodes()
                started = time.perf_counter() - start
                cache = store(folder, f"ray-{n}")
                wall, theirs = _notes(
                    cache, "--executor", "ray", "--ray-address", cluster.address, command=command
                )
            finally:
                cluster.shutdown()
            ledger = _ledger(cache)
            seconds = [j["seconds"] for j in ledger["jobs"]]
            firsts = {j["node"]: i for i, j in reversed(list(enumerate(ledger["jobs"])))}
            first = max(seconds[i] for i in firsts.values())
            steady = [s for i, s in enumerate(seconds) if i not in firsts.values()] or seconds
            row: dict[str, Any] = {
                "wall_s": round(wall, 1),
                "cluster_start_s": round(started, 1),
                "jobs": len(seconds),
                "jobs_per_node": sorted(v["jobs"] for v in ledger["nodes"].values()),
                "job_s_steady": round(sum(steady) / len(steady), 2),
                "first_job_s": round(first, 2),
                "kinds_per_node": {
                    kind: sorted(
                        sum(1 for j in ledger["jobs"] if j["kind"] == kind and j["node"] == n)
                        for n in ledger["nodes"]
                    )
                    for kind in sorted({j["kind"] for j in ledger["jobs"]})
                },
            }
            differ = _differences(json.loads(answer), json.loads(theirs))
            row["same_answer"] = not differ
            row["differences"] = differ[:10]
            if not model:  # the smallest cluster is the model's base
                work = sum(seconds)
                model = {"fixed": wall - work, "first": first, "work": work, "base": n}
            else:
                row["predicted_s"] = round(
                    model["fixed"]
                    + model["first"]
                    + (model["work"] - model["first"])
                    * _at_once(int(model["base"]), cores)
                    / _at_once(n, cores),
                    1,
                )
            out["runs"][f"{n} node{'s' if n > 1 else ''}"] = row
            shutil.rmtree(folder / f"ray-tmp-{n}", ignore_errors=True)
    print(f"ray scaling: {out['command']}, cold, {cores} cores, 1 CPU per node")
    print(
        f"{'executor':10} {'wall':>8} {'predicted':>10} {'jobs/node':>14} {'job s':>6} "
        f"{'first':>6} {'start':>6}  same answer"
    )
    for name, row in out["runs"].items():
        if name == "local":
            print(f"{name:10} {row['wall_s']:7.1f}s")
            continue
        pred = f"{row['predicted_s']:9.1f}s" if "predicted_s" in row else "    (base)"
        print(
            f"{name:10} {row['wall_s']:7.1f}s {pred} {str(row['jobs_per_node']):>14} "
            f"{row['job_s_steady']:6.2f} {row['first_job_s']:6.2f} {row['cluster_start_s']:5.1f}s"
            f"  {'yes' if row['same_answer'] else 'NO: ' + ', '.join(row['differences'][:3])}"
        )
    for name, row in out["runs"].items():
        if "kinds_per_node" in row:
            kinds = ", ".join(f"{k} {v}" for k, v in row["kinds_per_node"].items())
            print(f"{name}: jobs of each kind per node: {kinds}")
    if record is not None:
        record.write_text(json.dumps(portable(out), indent=2) + "\n")
        print(f"recorded in {record}")
    return out
