"""Shared fixtures: real converter environments, built once per test session and reused.

Environments live in INVENTORY_CACHE (CI gives each run a fresh one), so the first session on a
machine builds them from the package registry exactly as a user's first run does.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from oracle.client import Pool
from oracle.envs import Env, ensure_env, load_catalog


@pytest.fixture(scope="session")
def catalog():
    return load_catalog()


@pytest.fixture(scope="session")
def env(catalog):
    """env("0.4.1") -> the ready environment for that release (built on first request)."""
    built: dict[str, Env] = {}

    def get(version: str) -> Env:
        if version not in built:
            built[version] = ensure_env(version, catalog)
        return built[version]

    return get


@pytest.fixture(scope="session")
def pool(tmp_path_factory) -> Iterator[Pool]:
    with Pool(Path(tmp_path_factory.mktemp("worker-logs"))) as p:
        yield p
