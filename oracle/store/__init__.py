"""The result store: results keyed by everything that can change them, their load-check records,
the remote tier behind it (object storage), what it holds and takes on disk, and its
housekeeping.

The names other packages import are exported here and loaded on first use (each from its
module, so importing the package loads none of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle import lazy_exports

if TYPE_CHECKING:
    from oracle.store.housekeeping import prune as prune
    from oracle.store.load_records import LoadCheck as LoadCheck
    from oracle.store.load_records import RuntimeOutcome as RuntimeOutcome
    from oracle.store.result_store import RESULT_FILE as RESULT_FILE
    from oracle.store.result_store import StoreError as StoreError
    from oracle.store.result_store import building as building
    from oracle.store.result_store import manifest as manifest
    from oracle.store.result_store import results_root as results_root
    from oracle.store.usage import AGES as AGES
    from oracle.store.usage import DiskUsage as DiskUsage
    from oracle.store.usage import Listing as Listing
    from oracle.store.usage import Usage as Usage
    from oracle.store.usage import disk_usage as disk_usage
    from oracle.store.usage import listing as listing

# each exported name -> the module of this package that defines it
_EXPORTS = {
    "AGES": "usage",
    "DiskUsage": "usage",
    "Listing": "usage",
    "LoadCheck": "load_records",
    "RESULT_FILE": "result_store",
    "RuntimeOutcome": "load_records",
    "StoreError": "result_store",
    "Usage": "usage",
    "building": "result_store",
    "disk_usage": "usage",
    "listing": "usage",
    "manifest": "result_store",
    "prune": "housekeeping",
    "results_root": "result_store",
}
__all__ = sorted(_EXPORTS)


if not TYPE_CHECKING:  # the type checker reads the imports above, never this
    __getattr__ = lazy_exports(__name__, _EXPORTS, globals())
