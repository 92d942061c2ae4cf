"""Where the store lies is resolved once per setting (a warm plan asks thousands of times), and
still follows the setting: a changed INVENTORY_CACHE, XDG_CACHE_HOME or HOME is a new answer, and
a setting that cannot be resolved fails every time it is asked, never remembered as a path."""

from __future__ import annotations

import pytest

from oracle.infra.paths import StorePathError, cache_root, store_root


def test_the_cache_root_follows_inventory_cache(tmp_path, monkeypatch):
    for name in ("one", "two", "one"):
        (tmp_path / name).mkdir(exist_ok=True)
        monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / name))
        assert cache_root() == (tmp_path / name).resolve()


def test_without_inventory_cache_it_follows_xdg_and_home(tmp_path, monkeypatch):
    monkeypatch.delenv("INVENTORY_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    for home in ("a", "b"):
        monkeypatch.setenv("HOME", str(tmp_path / home))
        assert cache_root() == (tmp_path / home / ".cache" / "inventory").resolve()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == (tmp_path / "xdg" / "inventory").resolve()


def test_a_store_setting_resolves_through_its_symlink(tmp_path, monkeypatch):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("INVENTORY_STORE", str(tmp_path / "link"))
    assert store_root() == (tmp_path / "real").resolve()


def test_a_loop_fails_each_time_and_is_not_remembered(tmp_path, monkeypatch):
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    monkeypatch.setenv("INVENTORY_CACHE", str(loop))
    for _ in range(2):
        with pytest.raises(StorePathError, match="cannot be a store"):
            cache_root()
    loop.unlink()
    loop.mkdir()  # the same setting, now a folder: answered, not the remembered failure
    assert cache_root() == loop.resolve()
