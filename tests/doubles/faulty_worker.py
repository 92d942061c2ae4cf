"""The probe worker with a fault, run inside a converter environment in place of
`oracle/worker.py` (`faults.py`): the real worker's requests, but a `convert` first aborts
natively (INVENTORY_WORKER_FAULT=crash) or hangs (=hang), inside the request's log, where the
real worker would be converting."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

# the repository root: the real worker and its helpers, without the rest of the project
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from oracle import worker  # noqa: E402
from oracle.worker_io import logged, serve  # noqa: E402

FAULT = os.environ.get("INVENTORY_WORKER_FAULT", "")


def handle(request: dict) -> dict:
    if request.get("op") == "convert":
        out = Path(request["out"])
        out.mkdir(parents=True, exist_ok=True)
        with logged(out / "convert.log"):
            if FAULT == "crash":
                os.abort()
            if FAULT == "hang":
                time.sleep(3600)
    return worker.handle(request)


if __name__ == "__main__":
    serve(handle)
