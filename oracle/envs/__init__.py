"""Converter environments: built per release (or from a source tree) with uv or pip, recorded file
by file and checked before use; the machine's package sources and releases discovered on them.

The names other packages import are exported here and loaded on first use (each from its
module, so importing the package loads none of them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oracle import lazy_exports

if TYPE_CHECKING:
    from oracle.envs.discovery import Discovery as Discovery
    from oracle.envs.discovery import Found as Found
    from oracle.envs.discovery import discover as discover
    from oracle.envs.environment import Env as Env
    from oracle.envs.environment import damaged_envs as damaged_envs
    from oracle.envs.environment import deviations_with_evidence as deviations_with_evidence
    from oracle.envs.environment import ensure_env as ensure_env
    from oracle.envs.environment import ensure_venv as ensure_venv
    from oracle.envs.environment import installed_envs as installed_envs
    from oracle.envs.environment import python_ok as python_ok
    from oracle.envs.environment import record_line as record_line
    from oracle.envs.environment import site_packages as site_packages
    from oracle.envs.environment import torch_installs as torch_installs
    from oracle.envs.environment import warmed_up as warmed_up
    from oracle.envs.source import PACKAGE as PACKAGE
    from oracle.envs.source import ensure_source_env as ensure_source_env
    from oracle.envs.source import package_digest as package_digest

# each exported name -> the module of this package that defines it
_EXPORTS = {
    "Discovery": "discovery",
    "Env": "environment",
    "Found": "discovery",
    "PACKAGE": "source",
    "damaged_envs": "environment",
    "deviations_with_evidence": "environment",
    "discover": "discovery",
    "ensure_env": "environment",
    "ensure_source_env": "source",
    "ensure_venv": "environment",
    "installed_envs": "environment",
    "package_digest": "source",
    "python_ok": "environment",
    "record_line": "environment",
    "site_packages": "environment",
    "torch_installs": "environment",
    "warmed_up": "environment",
}
__all__ = sorted(_EXPORTS)


if not TYPE_CHECKING:  # the type checker reads the imports above, never this
    __getattr__ = lazy_exports(__name__, _EXPORTS, globals())
