"""The converter environments the suite runs in: built if need be; one that cannot be built fails
the run under CI and skips the test elsewhere (tests/conftest.py's fixtures ask here)."""

from __future__ import annotations

import os

import pytest

from oracle.catalog.releases import EnvError
from oracle.envs.environment import Env, ensure_env


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need_env(version: str, catalog) -> Env:
    """The environment, built if need be; one that cannot be built fails the run under CI and
    skips the test elsewhere (say, a laptop without the package registry), saying why."""
    try:
        return ensure_env(version, catalog)
    except EnvError as exc:
        if in_ci():
            pytest.fail(
                f"CI: coreai-torch {version} environment cannot be built: {exc}", pytrace=False
            )
        pytest.skip(f"coreai-torch {version} environment cannot be built here: {exc}")
