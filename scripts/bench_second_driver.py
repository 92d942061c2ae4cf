"""`scripts/bench --second-driver`: a team's second driver answering from a warm bucket.

A first driver (the environments built, a result store of its own) computes and publishes
`affected --fix 40` and `plan --to 0.4.3` to a bucket of moto's S3 server on 127.0.0.1; then a
second driver with an empty cache (no environment, no shared torch, no result) answers each
from the bucket. Each second answer is timed beside `inventory --version` (what every command
pays to start) and the raw download of the objects it reads (the fetch, timed apart: every
object under the bucket's prefix, through s3fs), and what the second driver built and started is
counted (environments in its cache, worker logs). Asserts nothing; needs the test extra (moto).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
INVENTORY = str(ROOT / ".venv" / "bin" / "inventory")
BUCKET = "bench-second-driver"
COMMANDS = (("affected", "--fix", "40"), ("plan", "--to", "0.4.3"))


def _aws(endpoint: str, tmp: Path) -> dict[str, str]:
    """What a process needs to reach the server, and only it (dummy credentials)."""
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_CONFIG_FILE": str(tmp / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "no-aws-credentials"),
        "NO_PROXY": "127.0.0.1",
        "no_proxy": "127.0.0.1",
    }


def _run(args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.perf_counter()
    proc = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT)
    elapsed = time.perf_counter() - start
    if proc.returncode not in (0, 1, 3):
        sys.exit(f"failed: {' '.join(args)}\n{proc.stderr}")
    return elapsed, proc


def _fetch_seconds(url_path: str, into: Path) -> tuple[float, int]:
    """Every object under the prefix downloaded once: the fetch, apart from the answer."""
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False)
    start = time.perf_counter()
    files = fs.find(url_path)
    fs.get(files, [str(into / f.replace("/", "_")) for f in files])
    return time.perf_counter() - start, len(files)


def second_driver_lines(record: Path | None) -> None:
    import logging

    from moto.server import ThreadedMotoServer

    from oracle.infra.paths import envs_dir

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    figures: dict[str, Any] = {"date": time.strftime("%Y-%m-%d"), "answers": {}}
    try:
        host, port = server.get_host_and_port()
        with tempfile.TemporaryDirectory() as tmp_name:
            tmp = Path(tmp_name)
            aws = _aws(f"http://{host}:{port}", tmp)
            os.environ.update(aws)
            import s3fs

            s3fs.S3FileSystem(skip_instance_cache=True).mkdir(BUCKET)
            url = f"s3://{BUCKET}/team"
            base = {k: v for k, v in os.environ.items() if not k.startswith("INVENTORY_")} | aws
            first = tmp / "first"
            first.mkdir()
            (first / "envs").symlink_to(envs_dir())
            for command in COMMANDS:
                t, _ = _run(
                    [INVENTORY, *command, "--json", "-q", "--store", url],
                    base | {"INVENTORY_CACHE": str(first)},
                )
                print(f"first driver  {' '.join(command):22} computed and published: {t:7.2f} s")
            version = statistics.median(_run([INVENTORY, "--version"], base)[0] for _ in range(7))
            (tmp / "fetched").mkdir()
            fetch, objects = _fetch_seconds(f"{BUCKET}/team", tmp / "fetched")
            print(f"inventory --version (median of 7): {version:.3f} s")
            print(f"fetch of the bucket's {objects} objects (s3fs, apart): {fetch:.2f} s")
            for command in COMMANDS:
                second = tmp / f"second-{command[0]}"
                second.mkdir()
                t, proc = _run(
                    [INVENTORY, *command, "--json"],
                    base | {"INVENTORY_CACHE": str(second), "INVENTORY_STORE": url},
                )
                built = (
                    sorted(p.name for p in (second / "envs").glob("*"))
                    if (second / "envs").exists()
                    else []
                )
                workers = (
                    len(list((second / "logs").glob("*.log"))) if (second / "logs").exists() else 0
                )
                said = [ln for ln in proc.stderr.splitlines() if "probe" in ln]
                bound = 3 * version + fetch
                print(
                    f"second driver {' '.join(command):22} {t:7.2f} s "
                    f"(3 x --version + fetch = {bound:.2f} s); environments built: "
                    f"{len(built)}; worker logs: {workers}; {said[-1] if said else ''}"
                )
                figures["answers"][command[0]] = {
                    "second_seconds": round(t, 3),
                    "environments_built": built,
                    "worker_logs": workers,
                }
            figures |= {"version_seconds": round(version, 3), "fetch_seconds": round(fetch, 3)}
            figures["objects"] = objects
    finally:
        server.stop()
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    if record is not None:
        record.write_text(json.dumps(figures, indent=2) + "\n")
