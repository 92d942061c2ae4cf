"""`inventory envs build` and `inventory envs list`: the converter environments, one per
coreai-torch release."""

from __future__ import annotations

from typing import Annotated

import typer

from inventory.terminal import out, progress
from oracle.envs import (
    damaged_envs,
    deviations_with_evidence,
    ensure_env,
    installed_envs,
    python_ok,
)
from oracle.releases import load_catalog


def envs_build(
    versions: Annotated[list[str] | None, typer.Argument(
        help="coreai-torch releases (default: every supported release).")] = None,
) -> None:
    """Build converter environments ahead of time (needs the package registry once)."""
    python_ok()
    catalog = load_catalog()
    for version in versions or sorted(catalog.releases):
        with progress(True) as report_progress:
            env = ensure_env(version, catalog, report_progress)
        out.print(f"{env.name}: ready ({env.runtime}) at {env.path}", highlight=False)
        for deviation in deviations_with_evidence(env, catalog):
            out.print(f"  deviation: {deviation}", highlight=False, soft_wrap=True)


def envs_list() -> None:
    """List the converter environments that are ready, with their exact versions."""
    envs = installed_envs()
    catalog = load_catalog()
    damaged = damaged_envs()
    if not envs and not damaged:
        out.print("no converter environments yet (inventory envs build)")
    for line in damaged:
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    for env in envs:
        pkgs = ", ".join(f"{k} {env.packages[k]}" for k in
                         ("coreai-torch", "coreai-core", "torch", "numpy") if k in env.packages)
        out.print(f"{env.name}: {pkgs}", highlight=False)
        for deviation in deviations_with_evidence(env, catalog):
            out.print(f"  deviation: {deviation}", highlight=False, soft_wrap=True)
