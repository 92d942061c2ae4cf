"""The parsed registry, cached under `$INVENTORY_CACHE/registry/`: read back as the same bundles
the parse gives, and never a wrong registry: an entry of another file content, of other parser
code, damaged or half-written is ignored and written again, and concurrent readers and writers
all get the parse."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from inventory import registry, registry_cache
from inventory.registry import DEFAULT_REGISTRY, load_registry
from oracle.catalog import load_catalog

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("INVENTORY_STORE", raising=False)
    (tmp_path / "cache").mkdir()  # a store some run made
    return tmp_path / "cache" / registry_cache.FOLDER


def parsed(path: Path = DEFAULT_REGISTRY) -> list[registry.Bundle]:
    """The registry as parsing the file gives it, no cache involved."""
    return registry._parsed(path, path.read_text(), load_catalog())


def no_parse(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(*_: object) -> list[registry.Bundle]:
        raise AssertionError("parsed again")

    monkeypatch.setattr(registry, "_parsed", refused)


def counted_parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    calls: list[Path] = []
    real = registry._parsed

    def counting(path: Path, text: str, catalog: object) -> list[registry.Bundle]:
        calls.append(path)
        return real(path, text, catalog)  # type: ignore[arg-type]  # the catalog passed on

    monkeypatch.setattr(registry, "_parsed", counting)
    return calls


def test_a_second_read_is_the_first_parse_read_back(cache, monkeypatch):
    first = load_registry()
    assert first == parsed()
    (entry,) = cache.iterdir()
    no_parse(monkeypatch)
    assert load_registry() == first


@pytest.mark.parametrize(
    "damage",
    ["truncated", "a changed value", "empty", "not json", "another key", "a folder"],
)
def test_a_damaged_entry_is_ignored_and_written_again(cache, monkeypatch, damage):
    load_registry()
    (entry,) = cache.iterdir()
    text = entry.read_bytes()
    digest, _, body = text.partition(b"\n")
    if damage == "truncated":
        entry.write_bytes(text[: len(text) // 2])
    elif damage == "a changed value":  # still JSON, still a registry: a wrong one
        assert body.count(b'"sortformer"') > 0
        entry.write_bytes(digest + b"\n" + body.replace(b'"sortformer"', b'"sortformeR"'))
    elif damage == "empty":
        entry.write_bytes(b"")
    elif damage == "not json":
        entry.write_bytes(b"\x00\xff" * 100)
    elif damage == "another key":  # intact, but written for other content
        doc = json.loads(body)
        doc["key"] = "0" * 64
        other = json.dumps(doc).encode()
        entry.write_bytes(registry_cache.hashlib.sha256(other).hexdigest().encode() + b"\n" + other)
    else:
        entry.unlink()
        entry.mkdir()
    want = parsed()
    calls = counted_parses(monkeypatch)
    assert load_registry() == want
    assert calls == [DEFAULT_REGISTRY]
    if damage != "a folder":  # a folder in its place is not replaced: parsed each time
        no_parse(monkeypatch)  # written again whole: the next read is the entry
        assert load_registry() == want


def test_the_entry_follows_the_file_and_the_parser(cache, monkeypatch, tmp_path):
    copy = tmp_path / "recipes.toml"
    copy.write_text(DEFAULT_REGISTRY.read_text())
    before = load_registry(copy)
    calls = counted_parses(monkeypatch)
    shipped = "mimi_decoder_float32_ring272_outer_q_gs.aimodel"
    copy.write_text(copy.read_text().replace(shipped, "edited.aimodel", 1))
    after = load_registry(copy)
    assert calls == [copy]
    assert next(b for b in after if b.name == "mimi").files == ("edited.aimodel",)
    assert next(b for b in before if b.name == "mimi").files == (shipped,)
    monkeypatch.setattr(registry_cache, "parser_version", lambda: "other parser code")
    assert load_registry(copy) == after
    assert calls == [copy, copy]


def test_a_new_store_is_not_made_by_reading_the_registry(tmp_path, monkeypatch):
    """A run refused after reading the registry leaves a new store as it found it: absent."""
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "new"))
    assert load_registry() == parsed()
    assert not (tmp_path / "new").exists()


def test_a_cache_that_cannot_be_written_is_no_error(cache, monkeypatch):
    cache.write_text("a file where the folder would be")
    want = parsed()
    calls = counted_parses(monkeypatch)
    assert load_registry() == want
    assert load_registry() == want
    assert len(calls) == 2


# Writes the entry again and again (as a run that found it damaged does), reading it between.
_READER = """
from inventory import registry_cache
from inventory.registry import DEFAULT_REGISTRY, Bundle, Exporter, Instance, _parsed, load_registry
from oracle.catalog import load_catalog
from oracle.compare import Pipeline
catalog = load_catalog()
text = DEFAULT_REGISTRY.read_text()
want = _parsed(DEFAULT_REGISTRY, text, catalog)
key = registry_cache.entry_key(text, f"{DEFAULT_REGISTRY}\\0{catalog!r}")
where = registry_cache.entry_path(DEFAULT_REGISTRY)
for _ in range(20):
    registry_cache.write_entry(where, key, want, (Bundle, Exporter, Instance, Pipeline))
    assert load_registry() == want
print("same")
"""


def test_concurrent_readers_and_writers_all_get_the_parse(cache):
    """Four processes on one cache, each writing the entry and reading it in turn."""
    env = {**os.environ, "INVENTORY_CACHE": str(cache.parent)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _READER], cwd=ROOT, env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    assert [o.split() for o in outs] == [["same"]] * 4
    assert [p.name for p in cache.iterdir()] == [registry_cache.entry_path(DEFAULT_REGISTRY).name]
