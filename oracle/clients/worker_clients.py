"""The client of each in-environment script, beside the scripts (all in this folder).

`oracle.clients.worker_pool.Worker` is the protocol (a long-lived process per environment, JSON
lines) and,
as it stands, the probe worker's client (`probe_worker.py`). Each other script's client names its
script
and what it must import in its environment before it is trusted; a pool keys on the class
(`Session.pool_of`). Adding a worker is a script here and a class below.
"""

from __future__ import annotations

from pathlib import Path

from oracle.clients.worker_pool import Worker

HERE = Path(__file__).resolve().parents[1] / "workers"  # the scripts run in an environment


class AssetWorker(Worker):
    """`asset_worker.py`: loads and runs saved assets (coreai-core only: it starts without
    torch); a native abort is a WorkerFailure, and the next call starts a fresh one."""

    script = HERE / "asset_worker.py"
    needs = ("coreai.authoring", "coreai.runtime", "numpy", "safetensors")


class ScanWorker(Worker):
    """`scan_worker.py`: reads a shipped bundle's program; a native abort is a WorkerFailure."""

    script = HERE / "scan_worker.py"


class ProgramWorker(Worker):
    """`program_worker.py`: converts and runs a whole bundle's program (`inventory verify`)."""

    script = HERE / "program_worker.py"
    needs = ("torch", "coreai_torch", "coreai.runtime")


class CutWorker(Worker):
    """`cut_worker.py`: cuts a region of a bundle's program out as a small program."""

    script = HERE / "cut_worker.py"
    needs = ("torch", "coreai_torch", "safetensors")
