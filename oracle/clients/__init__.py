"""The main process's side of the in-environment scripts: one long-lived worker per environment,
pooled, and the client of each script.

The names other packages import are exported here and loaded on first use (each from its
module, so importing the package loads none of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle import lazy_exports

if TYPE_CHECKING:
    from oracle.clients.worker_clients import AssetWorker as AssetWorker
    from oracle.clients.worker_clients import CutWorker as CutWorker
    from oracle.clients.worker_clients import ProgramWorker as ProgramWorker
    from oracle.clients.worker_clients import ScanWorker as ScanWorker
    from oracle.clients.worker_pool import WorkerFailure as WorkerFailure
    from oracle.clients.worker_pool import Workers as Workers
    from oracle.clients.worker_pool import kill_all as kill_all

# each exported name -> the module of this package that defines it
_EXPORTS = {
    "AssetWorker": "worker_clients",
    "CutWorker": "worker_clients",
    "ProgramWorker": "worker_clients",
    "ScanWorker": "worker_clients",
    "WorkerFailure": "worker_pool",
    "Workers": "worker_pool",
    "kill_all": "worker_pool",
}
__all__ = sorted(_EXPORTS)


if not TYPE_CHECKING:  # the type checker reads the imports above, never this
    __getattr__ = lazy_exports(__name__, _EXPORTS, globals())
