"""The probe worker with a fault, run inside a converter environment in place of
`oracle/workers/probe_worker.py` (`faults.py`): the real worker's requests, but a `convert` first
aborts
natively (INVENTORY_WORKER_FAULT=crash), hangs (=hang, asleep), or hangs holding the GIL
(=gil: one native call that never lets go of it, as a long native conversion may), inside the
request's log, where the real worker would be converting."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

# the repository root: the real worker and its helpers, without the rest of the project
sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from oracle.workers import probe_worker as worker  # noqa: E402
from oracle.workers.worker_io import logged, serve  # noqa: E402

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
            if FAULT == "gil":
                # catastrophic backtracking: the regex engine holds the GIL for the whole match
                re.match(r"(a+)+$", "a" * 64 + "b")
    return worker.handle(request)


if __name__ == "__main__":
    serve(handle)
