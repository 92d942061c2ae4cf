"""Where a comparison is stored: each result path computed once per run and the store's
results folder checked once (a warm plan names a result path about a thousand times), while a
store that changes, or whose results folder leads out of it, is still seen."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oracle.catalog import load_regimes
from oracle.envs.environment import Env
from oracle.infra.paths import StorePathError
from oracle.store import result_store as store


def _env(version: str) -> Env:
    """An environment's identity as its packages name it (nothing here runs in it)."""
    packages = {"coreai-torch": version, "coreai-core": "1.0.0b2", "torch": "2.13.0", "numpy": "2"}
    return Env(version, "1.0.0b2", Path("envs") / version, Path("python"), packages, ())


def _counted(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    """Each call of `result_store.<name>`, recorded, the real function still answering."""
    calls: list[Any] = []
    real: Callable[..., Any] = getattr(store, name)

    def counting(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(store, name, counting)
    return calls


@pytest.fixture()
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache of this test's own, and nothing remembered of another's."""
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("INVENTORY_STORE", raising=False)
    store._checked_results.cache_clear()
    store._result_dirs.clear()
    return tmp_path


def test_each_result_path_is_computed_once_and_the_store_checked_once(fresh, monkeypatch):
    specs = [r.spec for r in load_regimes()[:20]]
    old, new = _env("0.4.1"), _env("0.4.2")
    checks, keys = _counted(monkeypatch, "in_store"), _counted(monkeypatch, "cache_key")
    first = [store.result_dir(s, old, new) for s in specs]
    again = [store.result_dir(s, old, new) for s in specs]
    assert first == again
    assert len(set(first)) == len(specs)
    assert len(keys) == len(specs)  # once per comparison, not once per ask
    assert len(checks) == 1  # the results folder, not every path under it
    root = (fresh / "cache").resolve() / "results"
    assert {p.parent for p in first} == {root}
    assert first[0].name.endswith(store.cache_key(specs[0], old, new))


def test_another_store_gets_paths_of_its_own(fresh, monkeypatch):
    spec = load_regimes()[0].spec
    old, new = _env("0.4.1"), _env("0.4.2")
    here = store.result_dir(spec, old, new)
    monkeypatch.setenv("INVENTORY_STORE", str(fresh / "other"))
    there = store.result_dir(spec, old, new)
    assert there.parent == (fresh / "other").resolve() / "results"
    assert there.name == here.name


def test_a_results_folder_that_leads_out_of_the_store_is_refused(fresh):
    outside = fresh / "outside"
    outside.mkdir()
    (fresh / "cache").mkdir()
    (fresh / "cache" / "results").symlink_to(outside)
    with pytest.raises(StorePathError, match="outside the store"):
        store.result_dir(load_regimes()[0].spec, _env("0.4.1"), _env("0.4.2"))
    assert list(outside.iterdir()) == []


def test_a_path_holding_its_record_is_not_looked_at_again(fresh, monkeypatch):
    specs = [r.spec for r in load_regimes()[:5]]
    old, new = _env("0.4.1"), _env("0.4.2")
    paths = [store.result_dir(s, old, new) for s in specs]
    for path in paths:
        path.mkdir(parents=True)
        (path / store.RESULT_FILE).write_text("{}")
    looks = _counted(monkeypatch, "legacy_or")
    for _ in range(3):
        assert [store.result_dir(s, old, new) for s in specs] == paths
    assert looks == []  # settled by its record, not a look for the earlier key each ask


def test_a_record_under_the_earlier_key_is_still_found_once_it_appears(fresh):
    spec = load_regimes()[0].spec
    old, new = _env("0.4.1"), _env("0.4.2")
    final = store.result_dir(spec, old, new)  # nothing stored: not settled by its absence
    legacy = final.parent / (store._stem(spec, old, new) + store._legacy_key(spec, old, new))
    legacy.mkdir(parents=True)
    (legacy / store.RESULT_FILE).write_text("{}")
    assert store.result_dir(spec, old, new) == legacy
