"""Where comparisons, load checks and calls run: the oracle interface, the comparison itself
(convert both, normalise, measure), the load check made from any runtimes, the calls of a
whole-program check and the one typed reading of their answers, the local executor, the Ray
executor and its node agent, and the choice between them.

The names other packages import are exported here and loaded on first use (each from its
module, so importing the package loads none of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle import lazy_exports

if TYPE_CHECKING:
    from oracle.executors.answers import AnswerError as AnswerError
    from oracle.executors.answers import AssetRun as AssetRun
    from oracle.executors.answers import BundleRead as BundleRead
    from oracle.executors.answers import CutAnswer as CutAnswer
    from oracle.executors.answers import ProgramAnswer as ProgramAnswer
    from oracle.executors.answers import Resaved as Resaved
    from oracle.executors.answers import WeightsRead as WeightsRead
    from oracle.executors.api import Comparison as Comparison
    from oracle.executors.api import Job as Job
    from oracle.executors.api import LoadRequest as LoadRequest
    from oracle.executors.calls import Call as Call
    from oracle.executors.calls import Ship as Ship
    from oracle.executors.choice import choose as choose

# each exported name -> the module of this package that defines it
_EXPORTS = {
    "AnswerError": "answers",
    "AssetRun": "answers",
    "BundleRead": "answers",
    "CutAnswer": "answers",
    "ProgramAnswer": "answers",
    "Resaved": "answers",
    "WeightsRead": "answers",
    "Call": "calls",
    "Comparison": "api",
    "Job": "api",
    "LoadRequest": "api",
    "Ship": "calls",
    "choose": "choice",
}
__all__ = sorted(_EXPORTS)


if not TYPE_CHECKING:  # the type checker reads the imports above, never this
    __getattr__ = lazy_exports(__name__, _EXPORTS, globals())
