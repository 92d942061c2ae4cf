"""The asset worker with a runtime that aborts, run inside a converter environment in place of
`oracle/workers/asset_worker.py` (`faults.py`): the real worker's requests, but the first N `run`
requests of a test abort natively (`INVENTORY_ASSET_FAULT=abort:N`: before loading the asset;
`=abort-after-outputs:N`: after the run wrote its outputs, as coreai-core 1.0.0b1 once did). N is
counted across processes in `INVENTORY_FAULT_DIR`, so "the first run only" survives the fresh
process a confirmation starts; a double, never the product's code."""

from __future__ import annotations

import os
import sys
from pathlib import Path

# the repository root: the real worker and its helpers, without the rest of the project
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from oracle.workers import asset_worker  # noqa: E402
from oracle.workers.worker_io import serve  # noqa: E402

MODE, _, TIMES = os.environ.get("INVENTORY_ASSET_FAULT", "").partition(":")
COUNT = Path(os.environ.get("INVENTORY_FAULT_DIR", ".")) / "asset-aborts"


def _abort_now() -> bool:
    """True for the first N runs of the test (one line appended per abort)."""
    done = len(COUNT.read_text().splitlines()) if COUNT.exists() else 0
    if done >= int(TIMES or "1"):
        return False
    with COUNT.open("a") as handle:
        handle.write(f"{os.getpid()}\n")
    return True


def handle(request: dict) -> dict:
    if request.get("op") == "run" and MODE == "abort" and _abort_now():
        out = Path(request["out"])  # the run's log, as a runtime that dies loading leaves one
        out.mkdir(parents=True, exist_ok=True)
        (out / "run.log").write_text("flaky double: aborting before loading the asset\n")
        os.abort()
    answer = asset_worker.handle(request)
    if (
        request.get("op") == "run"
        and MODE == "abort-after-outputs"
        and answer.get("ok")
        and _abort_now()
    ):
        os.abort()
    return answer


if __name__ == "__main__":
    serve(handle)
