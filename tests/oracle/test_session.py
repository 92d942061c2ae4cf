"""A session's environments and the workers it starts ahead (`oracle/session.py`). The builds
and the worker starts are test doubles here: what is tested is when the session hands over an
environment and starts its worker, which real builds (minutes) and starts (seconds) cannot be
timed to show (the real ones: tests/oracle/envs/test_envs.py, the slow tier)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from doubles.starting_worker import StartingWorker

import oracle.session as session_module
from oracle.catalog.releases import Catalog, load_catalog
from oracle.envs.environment import Env
from oracle.session import Session


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Env]:
    """Every release's environment, built at once when asked (never really built)."""
    catalog = load_catalog()
    envs = {
        v: Env(v, r.core, tmp_path / v, tmp_path / v / "bin" / "python", {}, ())
        for v, r in catalog.releases.items()
    }
    monkeypatch.setattr(session_module, "ready_env", lambda version, catalog: None)
    monkeypatch.setattr(
        session_module, "ensure_env", lambda version, catalog, progress: envs[version]
    )
    StartingWorker.started.clear()
    StartingWorker.release.clear()
    return envs


def test_an_environment_built_ahead_is_handed_over_while_its_worker_is_still_starting(
    built, tmp_path
):
    version = sorted(built)[0]
    session = Session(load_catalog(), log_dir=tmp_path / "logs", worker=StartingWorker)
    try:
        planned = session.env(version)
        session._build_ahead([planned])  # a comparison was not stored: built, its worker started
        assert StartingWorker.started.wait(timeout=30)  # its worker is starting
        handed: list[Env] = []
        asked = threading.Thread(target=lambda: handed.append(session.ready(planned)))
        asked.start()
        asked.join(timeout=10)
        # the start goes on in its own thread: the environment was not held back by it
        assert handed == [built[version]]
        assert not StartingWorker.release.is_set()
    finally:
        StartingWorker.release.set()
        session.close()


def test_each_release_is_planned_once_per_session(tmp_path, monkeypatch):
    planned: list[str] = []
    real = session_module.planned_env

    def counting(version: str, catalog: Catalog) -> Env:
        planned.append(version)
        return real(version, catalog)

    monkeypatch.setattr(session_module, "planned_env", counting)
    catalog = load_catalog()
    versions = sorted(catalog.releases)[:2]
    session = Session(catalog, log_dir=tmp_path / "logs")
    try:
        first = [session.env(v) for v in versions]
        for _ in range(3):
            # one object per release: a result's path is computed once for it
            assert all(session.env(v) is e for v, e in zip(versions, first, strict=True))
            assert all(session.had(v) is e for v, e in zip(versions, first, strict=True))
    finally:
        session.close()
    assert planned == versions  # its manifest read once, not once per ask
