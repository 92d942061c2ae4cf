"""What a probe regime needs to be built here."""

from __future__ import annotations

import importlib.util

from oracle.catalog.regimes import Regime


def needs_converter(regime: Regime) -> bool:
    """A probe of coreai-torch's own custom ops: buildable only where coreai-torch is."""
    if regime.construct != "quantize":
        return False
    return importlib.util.find_spec("coreai_torch") is None
