"""What a comparison is and what it finds: the probe spec, IR normalisation, output statistics and
the plain result types the store keeps.

The names other packages import are exported here and loaded on first use (each from its
module, so importing the package loads none of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle import lazy_exports

if TYPE_CHECKING:
    from oracle.compare.normalisation import compare_texts as compare_texts
    from oracle.compare.normalisation import normalise as normalise
    from oracle.compare.results import Identity as Identity
    from oracle.compare.results import ProbeResult as ProbeResult
    from oracle.compare.results import Side as Side
    from oracle.compare.spec import Pipeline as Pipeline
    from oracle.compare.spec import ProbeSpec as ProbeSpec

# each exported name -> the module of this package that defines it
_EXPORTS = {
    "Identity": "results",
    "Pipeline": "spec",
    "ProbeResult": "results",
    "ProbeSpec": "spec",
    "Side": "results",
    "compare_texts": "normalisation",
    "normalise": "normalisation",
}
__all__ = sorted(_EXPORTS)


if not TYPE_CHECKING:  # the type checker reads the imports above, never this
    __getattr__ = lazy_exports(__name__, _EXPORTS, globals())
