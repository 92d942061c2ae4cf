"""Shared infrastructure both the oracle and the inventory use: the settings read from the
environment, where the store and caches lie, bounded input files and TOML reads, atomic writes,
scratch folders, progress callbacks, file digests and evidence that names no machine.

The names other packages import are exported here and loaded on first use (each from its
module, so importing the package loads none of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle import lazy_exports

if TYPE_CHECKING:
    from oracle.infra.atomic import write_text_atomic as write_text_atomic
    from oracle.infra.checkpoint import Checkpoint as Checkpoint
    from oracle.infra.checkpoint import WeightsError as WeightsError
    from oracle.infra.checkpoint import instance_tensors as instance_tensors
    from oracle.infra.inputfile import MAX_INPUT_BYTES as MAX_INPUT_BYTES
    from oracle.infra.inputfile import file_kind as file_kind
    from oracle.infra.inputfile import read_text as read_text
    from oracle.infra.inputfile import regular_file as regular_file
    from oracle.infra.paths import cache_root as cache_root
    from oracle.infra.paths import in_store as in_store
    from oracle.infra.paths import moved as moved
    from oracle.infra.paths import safe_name as safe_name
    from oracle.infra.paths import store_root as store_root
    from oracle.infra.portable_paths import portable as portable
    from oracle.infra.progress import Notice as Notice
    from oracle.infra.progress import Progress as Progress
    from oracle.infra.progress import Routine as Routine
    from oracle.infra.progress import Tally as Tally
    from oracle.infra.scratch_dirs import scratch as scratch
    from oracle.infra.scratch_dirs import scratch_environ as scratch_environ
    from oracle.infra.settings import CATALOG_VAR as CATALOG_VAR
    from oracle.infra.settings import check_all as check_all
    from oracle.infra.settings import check_cache as check_cache
    from oracle.infra.settings import seconds as seconds
    from oracle.infra.tomlfile import parse_toml as parse_toml
    from oracle.infra.tomlfile import read_toml as read_toml

# each exported name -> the module of this package that defines it
_EXPORTS = {
    "CATALOG_VAR": "settings",
    "Checkpoint": "checkpoint",
    "MAX_INPUT_BYTES": "inputfile",
    "Notice": "progress",
    "Progress": "progress",
    "Routine": "progress",
    "Tally": "progress",
    "WeightsError": "checkpoint",
    "cache_root": "paths",
    "check_all": "settings",
    "check_cache": "settings",
    "file_kind": "inputfile",
    "in_store": "paths",
    "instance_tensors": "checkpoint",
    "moved": "paths",
    "portable": "portable_paths",
    "read_text": "inputfile",
    "parse_toml": "tomlfile",
    "read_toml": "tomlfile",
    "regular_file": "inputfile",
    "safe_name": "paths",
    "scratch": "scratch_dirs",
    "scratch_environ": "scratch_dirs",
    "seconds": "settings",
    "store_root": "paths",
    "write_text_atomic": "atomic",
}
__all__ = sorted(_EXPORTS)


if not TYPE_CHECKING:  # the type checker reads the imports above, never this
    __getattr__ = lazy_exports(__name__, _EXPORTS, globals())
