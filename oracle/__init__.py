"""The oracle: what does converter B do differently from converter A to a probe, on one runtime.

Nothing here knows about the registry of shipped bundles. Its parts are sub-packages by concept
(`catalog`, `envs`, `workers`, `clients`, `store`, `executors`, `compare`, `constructs`, and
`infra`, the shared infrastructure), with the error root, the session and the load check at the
top; docs/architecture.md tables who may import whom, and tests/project/test_layering.py holds it.
Only code that runs inside a converter environment (`oracle/workers/`, and the probe builder of
coreai-torch's own ops, `oracle/constructs/quantize.py`) imports coreai-torch / coreai-core,
never the main process.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, exports: dict[str, str], namespace: dict[str, Any]
) -> Callable[[str], Any]:
    """The module `__getattr__` of a part that exports names from its modules (`exports`: name ->
    module of the package): each is imported on first use and then kept in the package's
    `namespace`, so importing a part loads none of its modules, and a worker importing one module
    of `oracle.workers` loads no other."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
