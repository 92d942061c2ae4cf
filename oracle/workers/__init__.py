"""Everything that runs inside a converter environment, under its Python: the in-environment
scripts (probe, scan, asset, whole-program, region-cut, location workers), their shared request
loop, and the probe builders they import. Standard library, torch, numpy, safetensors and the
converter only: no main-process code. This package's `__init__` imports none of its modules, so
a worker importing one module of it loads no other.

The names other packages import are exported here and loaded on first use (each from its
module, so importing the package loads none of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle import lazy_exports

if TYPE_CHECKING:
    from oracle.workers.asset_probe import LABEL as LABEL
    from oracle.workers.memory import peak_mb as peak_mb

# each exported name -> the module of this package that defines it
_EXPORTS = {
    "LABEL": "asset_probe",
    "peak_mb": "memory",
}
__all__ = sorted(_EXPORTS)


if not TYPE_CHECKING:  # the type checker reads the imports above, never this
    __getattr__ = lazy_exports(__name__, _EXPORTS, globals())
