"""The catalogs as data and their typed reads: converter releases (`converters.toml`), fix records
and their kinds (`fixes.toml`), probe regimes, value conditions, the converter's own tests
(`conformance.toml`), runtimes, and the data files' schema.

The names other packages import are exported here and loaded on first use (each from its
module, so importing the package loads none of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle import lazy_exports

if TYPE_CHECKING:
    from oracle.catalog.conditions import Condition as Condition
    from oracle.catalog.conditions import ConditionCheck as ConditionCheck
    from oracle.catalog.conditions import check as check
    from oracle.catalog.conditions import load_conditions as load_conditions
    from oracle.catalog.fixes import FIXES_FILE as FIXES_FILE
    from oracle.catalog.fixes import Fix as Fix
    from oracle.catalog.fixes import FixError as FixError
    from oracle.catalog.fixes import between as between
    from oracle.catalog.fixes import find_fix as find_fix
    from oracle.catalog.fixes import load_fixes as load_fixes
    from oracle.catalog.record_kinds import BOTH as BOTH
    from oracle.catalog.record_kinds import DEFAULT_KIND as DEFAULT_KIND
    from oracle.catalog.record_kinds import KINDS as KINDS
    from oracle.catalog.record_kinds import LOWERING as LOWERING
    from oracle.catalog.record_kinds import OPTIMIZER as OPTIMIZER
    from oracle.catalog.record_kinds import Asset as Asset
    from oracle.catalog.record_kinds import Lowering as Lowering
    from oracle.catalog.record_kinds import Pipeline as Pipeline
    from oracle.catalog.regimes import Regime as Regime
    from oracle.catalog.regimes import for_constructs as for_constructs
    from oracle.catalog.regimes import load_regimes as load_regimes
    from oracle.catalog.releases import CATALOG_FILE as CATALOG_FILE
    from oracle.catalog.releases import PACKAGED as PACKAGED
    from oracle.catalog.releases import Catalog as Catalog
    from oracle.catalog.releases import EnvError as EnvError
    from oracle.catalog.releases import RunFault as RunFault
    from oracle.catalog.releases import base_version as base_version
    from oracle.catalog.releases import load_catalog as load_catalog
    from oracle.catalog.releases import version_key as version_key
    from oracle.catalog.runtimes import at_or_above as at_or_above
    from oracle.catalog.runtimes import cores as cores
    from oracle.catalog.runtimes import parse_runtime as parse_runtime
    from oracle.catalog.runtimes import pinned_core as pinned_core
    from oracle.catalog.runtimes import releases_pinning as releases_pinning
    from oracle.catalog.runtimes import runtime_label as runtime_label
    from oracle.catalog.schema import DECOMPOSITIONS as DECOMPOSITIONS
    from oracle.catalog.schema import PROBE_DTYPES as PROBE_DTYPES
    from oracle.catalog.schema import SHAPES as SHAPES
    from oracle.catalog.schema import DataFileError as DataFileError
    from oracle.catalog.schema import Fields as Fields

# each exported name -> the module of this package that defines it
_EXPORTS = {
    "BOTH": "record_kinds",
    "DEFAULT_KIND": "record_kinds",
    "KINDS": "record_kinds",
    "Asset": "record_kinds",
    "Lowering": "record_kinds",
    "Pipeline": "record_kinds",
    "LOWERING": "record_kinds",
    "OPTIMIZER": "record_kinds",
    "CATALOG_FILE": "releases",
    "Catalog": "releases",
    "Condition": "conditions",
    "ConditionCheck": "conditions",
    "DECOMPOSITIONS": "schema",
    "DataFileError": "schema",
    "EnvError": "releases",
    "FIXES_FILE": "fixes",
    "Fields": "schema",
    "Fix": "fixes",
    "FixError": "fixes",
    "PACKAGED": "releases",
    "PROBE_DTYPES": "schema",
    "Regime": "regimes",
    "RunFault": "releases",
    "SHAPES": "schema",
    "at_or_above": "runtimes",
    "base_version": "releases",
    "between": "fixes",
    "check": "conditions",
    "cores": "runtimes",
    "find_fix": "fixes",
    "for_constructs": "regimes",
    "load_catalog": "releases",
    "load_conditions": "conditions",
    "load_fixes": "fixes",
    "load_regimes": "regimes",
    "parse_runtime": "runtimes",
    "pinned_core": "runtimes",
    "releases_pinning": "runtimes",
    "runtime_label": "runtimes",
    "version_key": "releases",
}
__all__ = sorted(_EXPORTS)


if not TYPE_CHECKING:  # the type checker reads the imports above, never this
    __getattr__ = lazy_exports(__name__, _EXPORTS, globals())
