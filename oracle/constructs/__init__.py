"""The construct registry: one module per construct kind, found by listing this package.

Adding a construct is one new module here (ending with `CONSTRUCT = Construct(...)`, see
`_construct.py`) plus its regimes in `oracle/catalog/regimes.toml`;
`tests/oracle/constructs/test_constructs.py` checks that every kind is complete. Modules whose name
starts with `_` are shared helpers: `_probe.py` for probe builders (torch), `_graph.py` for
detectors (torch.fx graphs).

Importing this package, or the data of any construct, does not import torch.
"""

from __future__ import annotations

import functools
import importlib
import pkgutil
from pathlib import Path

from oracle.constructs._construct import DTYPE_SHORT, Construct, generic_label

PACKAGE_DIR = Path(__file__).parent


def kinds() -> list[str]:
    """Every construct kind, sorted (the module names of this package)."""
    return list(_kinds())


@functools.cache
def _kinds() -> tuple[str, ...]:
    # listed once per process: `get` is asked for every probe's label (a warm plan listed the
    # package thousands of times)
    return tuple(
        sorted(
            m.name for m in pkgutil.iter_modules([str(PACKAGE_DIR)]) if not m.name.startswith("_")
        )
    )


def get(kind: str) -> Construct:
    """The construct of one kind; KeyError when there is none."""
    if kind.startswith("_") or kind not in _kinds():
        raise KeyError(kind)
    module = importlib.import_module(f"{__name__}.{kind}")
    construct: Construct = module.CONSTRUCT
    return construct


def all_constructs() -> list[Construct]:
    return [get(kind) for kind in kinds()]


def probed() -> list[Construct]:
    """The constructs the probe library can build."""
    return [c for c in all_constructs() if c.has_probe]


def detected() -> list[Construct]:
    """The constructs a trace detects."""
    return [c for c in all_constructs() if c.detected]


def has_probe(kind: str) -> bool:
    try:
        return get(kind).has_probe
    except KeyError:
        return False


def probe_params(kind: str, params: dict) -> dict:
    """The instance parameters a probe takes (a trace may record more, e.g. module paths)."""
    keys = get(kind).params
    return {k: params[k] for k in keys if k in params}


def label(kind: str, params: dict, dtype: str) -> str:
    """A short human name for a probe, e.g. `ConvTranspose1d 512->256 k16 s8 p0 op0 @1x512x10`."""
    short = DTYPE_SHORT.get(dtype, dtype)
    try:
        custom = get(kind).label
    except KeyError:
        custom = None
    if custom is None:
        return generic_label(kind, params, short)
    return custom(params, short)
