"""What a command reads from the remote tier is taken in together (`store.stored_all`), not one
result after the other as the answer reads each: a batch the command dispatches, a sweep's
stored results. Against an S3-compatible server on 127.0.0.1 (moto's server mode) and a
`file://` folder, with results written by the tests (the comparisons' content is a test
double's: what is tested is how they travel, not what they say).

Taken in together means the same requests as one at a time (each object once, nothing the
answer will not read), several in flight at once, and the same results; a damaged, oversized or
missing result in the batch is refused exactly as alone, and a stopped run reads nothing more.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from doubles.oracles import DyingWorkers, RunsNothing
from doubles.remote_fs import RecordingFileSystem
from s3_server import make_bucket, s3_server

from oracle.catalog.regimes import load_regimes
from oracle.catalog.releases import load_catalog
from oracle.compare.results import to_json
from oracle.compare.spec import ProbeSpec
from oracle.envs.environment import Env
from oracle.executors.api import Comparison
from oracle.store import location as store_location
from oracle.store import result_store as store
from oracle.store.remote import MANIFEST, RemoteStore
from oracle.store.remote_reads import MAX_MANIFEST_BYTES, RemoteStopped
from oracle.store.result_store import results_root

BUCKET = "inventory-batches"
MANY = 12  # results a command reads: more than are fetched at once
DELAY = 0.05  # seconds per read: long enough that reads made at once are seen to overlap


@pytest.fixture(scope="module")
def s3(tmp_path_factory) -> Iterator[dict[str, str]]:
    with s3_server(tmp_path_factory.mktemp("aws")) as env:
        make_bucket(BUCKET)
        yield env


@pytest.fixture
def driver(s3, tmp_path, monkeypatch, request) -> Iterator[Any]:
    """`driver(name)`: a driver with a local store of its own (empty until it reads) and the
    bucket behind it, under this test's prefix; its remote tier's reads recorded."""
    monkeypatch.delenv("INVENTORY_STORE", raising=False)

    def connected(name: str) -> RecordingFileSystem:
        monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / name))
        store_location.choose(f"s3://{BUCKET}/{request.node.name}")
        remote = store_location.remote()
        assert remote is not None
        reads = RecordingFileSystem(remote.fs, delay=DELAY)
        remote.fs = reads
        return reads

    yield connected
    store_location.reset()


def _pair() -> tuple[Env, Env]:
    """0.4.1 and 0.4.2 as the store keys them (their pins): nothing is built."""
    from oracle.envs.environment import planned_env

    catalog = load_catalog()
    return planned_env("0.4.1", catalog), planned_env("0.4.2", catalog)


def _specs(n: int) -> list[ProbeSpec]:
    return [regime.spec for regime in load_regimes()[:n]]


def _published_comparisons(specs: list[ProbeSpec], old: Env, new: Env) -> None:
    """Each comparison stored by this driver, so published to the bucket (a test double's
    result: both sides as a dead worker leaves them)."""
    for spec in specs:
        final = store.result_dir(spec, old, new)
        with store.building(final) as work:
            store.publish(DyingWorkers().compare(spec, old, new), work, final)


def _records(specs: list[ProbeSpec], old: Env, new: Env) -> list[dict[str, Any] | None]:
    return [store.read_record(store.result_dir(spec, old, new)) for spec in specs]


def _read_paths(reads: RecordingFileSystem) -> list[str]:
    """Every object read and prefix listed, by its path below the results folder."""
    return sorted(
        [path.split("/results/", 1)[1] for path, _ in reads.reads]
        + [f"list {path.split('/results/', 1)[1]}" for path in reads.listed]
    )


def test_a_sweeps_read_of_many_remote_results_fetches_them_at_once_as_one_at_a_time_would(
    driver,
):
    """The stored read of a sweep or a plan's coverage (`Session.stored_all`): the same
    objects read and prefixes listed as one result after another (each once, none more),
    several in flight at once where one after another has one, and the same results."""
    from oracle.session import Session

    old, new = _pair()
    specs = _specs(MANY)
    driver("first")
    _published_comparisons(specs, old, new)
    catalog = load_catalog()

    alone = driver("one-at-a-time")
    with Session(catalog, oracle=RunsNothing()) as session:
        serial = [session.stored(spec, old, new) for spec in specs]
    serial_records = _records(specs, old, new)

    together = driver("together")
    with Session(catalog, oracle=RunsNothing()) as session:
        batched = session.stored_all([(spec, old, new) for spec in specs])
        again = session.stored_all([(spec, old, new) for spec in specs])
    batched_records = _records(specs, old, new)

    assert all(r is not None for r in batched) and len(batched) == MANY
    assert alone.most_at_once == 1
    assert 1 < together.most_at_once <= store.FETCHES_AT_ONCE
    assert _read_paths(together) == _read_paths(alone)
    assert len({path for path, _ in together.reads}) == len(together.reads)  # each once
    assert batched_records == serial_records and None not in batched_records

    def said(results: list[Any]) -> list[dict[str, Any]]:
        return [{**to_json(r), "evidence": None} for r in results]

    assert said(batched) == said(serial)
    assert [r is not None and r.cached for r in batched] == [True] * MANY
    assert said(again) == said(batched)  # read again: from this store, nothing fetched twice
    assert len(together.reads) == len(alone.reads)


def test_a_dispatched_batch_takes_in_what_the_bucket_holds_at_once_and_hands_over_the_rest(
    driver,
):
    """A command's batch (`Session.dispatch`: plan's, release-notes', affected's, sweep's): what
    the bucket holds is fetched together before the batch is handed to the executor, with the
    follow-ups a stored result calls for (a change located step by step); the executor gets
    only the comparison the bucket lacks (to convert) and the one whose follow-ups it queues. A
    second dispatch of the same batch fetches nothing."""
    from oracle.session import Session

    old, new = _pair()
    specs = _specs(MANY + 4)
    batch_specs, follow_specs, lacking = specs[:MANY], specs[MANY:-1], specs[-1]
    driver("first")
    _published_comparisons(specs[:-1], old, new)  # the bucket lacks the last one
    called: list[Any] = []

    def then(result: Any) -> list[Comparison]:
        called.append(result.spec)
        return [Comparison(spec, old, new) for spec in follow_specs]

    batch = [
        Comparison(batch_specs[0], old, new, then=then),
        *(Comparison(spec, old, new) for spec in batch_specs[1:]),
        Comparison(lacking, old, new),
    ]
    reads = driver("second")
    executor = RunsNothing()
    with Session(load_catalog(), oracle=executor) as session:
        session.dispatch(batch)
        [handed] = executor.dispatched
        assert [c.spec for c in handed if isinstance(c, Comparison)] == [batch_specs[0], lacking]
        assert called == [batch_specs[0]]
        assert [store.result_dir(s, old, new).exists() for s in specs] == [True] * (
            len(specs) - 1
        ) + [False]
        assert 1 < reads.most_at_once <= store.FETCHES_AT_ONCE
        read = len(reads.reads)
        session.dispatch(batch[1:-1])
        assert len(reads.reads) == read and len(executor.dispatched) == 1
    assert None not in _records(specs[:-1], old, new)


def _published_sides(specs: list[ProbeSpec], *envs: Env) -> None:
    """Each spec's side under each of `envs` stored by this driver, so published to the bucket
    (a side as the converter leaves one, written by the test)."""
    from oracle.compare.results import Side
    from oracle.store import sides

    for spec in specs:
        for env in envs:
            final = sides.side_dir(spec, env)
            with store.building(final) as work:
                (work / "shipped.mlir").write_text(f"module {{ // {spec.key()}\n}}\n")
                made = Side(env.converter, {}, True, files={"shipped": str(work / "shipped.mlir")})
                sides.publish_side(made, spec, work, final)


def test_the_sides_of_a_batch_the_bucket_lacks_the_comparisons_of_are_taken_in_at_once(driver):
    """Comparisons no driver made yet, over sides another driver stored (its other comparisons
    shared them): the batch takes those sides in together before it is handed to the executor,
    which then converts none of them again (`executors/shared_sides.py` reads them here)."""
    from oracle.session import Session
    from oracle.store import sides

    old, new = _pair()
    specs = _specs(MANY)
    driver("first")
    _published_sides(specs, old, new)
    reads = driver("second")
    executor = RunsNothing()
    with Session(load_catalog(), oracle=executor) as session:
        session.dispatch([Comparison(spec, old, new) for spec in specs])
        [handed] = executor.dispatched
        assert len(handed) == MANY  # no comparison is stored: each is made, over stored sides
    taken = [sides.load_side(sides.side_dir(s, env)) for s in specs for env in (old, new)]
    assert None not in taken
    assert 1 < reads.most_at_once <= store.FETCHES_AT_ONCE


@pytest.fixture
def folder(tmp_path, monkeypatch) -> Iterator[tuple[RemoteStore, list[str]]]:
    """A local store of this test's own with a `file://` folder behind it (where an object can
    be a sparse GiB), and the lines the remote tier says."""
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "local"))
    monkeypatch.delenv("INVENTORY_STORE", raising=False)
    said: list[str] = []
    store_location.choose(f"file://{tmp_path / 'shared'}", on_notice=said.append)
    remote = store_location.remote()
    assert remote is not None
    yield remote, said
    store_location.reset()


def _published(name: str) -> Path:
    """A result as the store writes one, put in place here, so published to the tier."""
    final = results_root() / name
    with store.building(final) as work:
        (work / "old-0.4.1").mkdir()
        (work / "old-0.4.1" / "shipped.mlir").write_text(f"module {{ // {name}\n}}\n")
        store.write_record(work, {"key": name})
        assert store.install(work, final, store.read_record, replace_stored=False) is None
    return final


def _object(tier: RemoteStore, name: str, rel: str) -> Path:
    base = Path(tier.root) / "results" / name
    return base / json.loads((base / MANIFEST).read_text())["token"] / rel


GiB = 1024**3
WHOLE = ("a", "b", "c", "d")
DAMAGED = ("huge-manifest", "huge-file", "edited", "killed")


def test_a_damaged_or_oversized_result_in_a_batch_is_refused_as_alone_and_the_rest_taken_in(
    folder, monkeypatch
):
    """In one batch beside whole results: a manifest past its size (a sparse GiB) refused from
    its metadata in one line, a file past its manifest's size never read, an edited file and a
    manifest gone each a miss; nothing of them reaches the local store, no temp folder is
    left, no read asks for more than a manifest's cap, and the whole ones are taken in."""
    tier, said = folder
    finals = [_published(name) for name in (*WHOLE, *DAMAGED)]
    base = Path(tier.root) / "results"
    with (base / "huge-manifest" / MANIFEST).open("ab") as handle:
        handle.truncate(GiB)
    with _object(tier, "huge-file", "old-0.4.1/shipped.mlir").open("ab") as handle:
        handle.truncate(GiB)
    edited = _object(tier, "edited", "old-0.4.1/shipped.mlir")
    edited.write_text(edited.read_text().replace("edited", "EDITED"))  # the same size
    (base / "killed" / MANIFEST).unlink()
    for final in finals:
        shutil.rmtree(final)
    reads = RecordingFileSystem(tier.fs, delay=DELAY)
    monkeypatch.setattr(tier, "fs", reads)

    store.stored_all((final, store.read_record) for final in finals)

    assert [f.name for f in finals if f.exists()] == list(WHOLE)
    assert [store.read_record(f) is not None for f in finals[: len(WHOLE)]] == [True] * 4
    assert (finals[0] / "old-0.4.1" / "shipped.mlir").read_text() == "module { // a\n}\n"
    assert [p.name for p in results_root().iterdir() if p.name.startswith(".")] == []
    assert reads.largest_read() <= MAX_MANIFEST_BYTES + 1, reads.reads
    assert not [p for p, _ in reads.reads if "huge-file" in p and "shipped" in p]
    assert [line.split(": ", 1)[1].split(" (")[0] for line in said] == ["huge-manifest not fetched"]
    assert f"{GiB} bytes, more than the 4 MiB allowed); computing it here" in said[0]
    assert 1 < reads.most_at_once <= store.FETCHES_AT_ONCE


def test_a_stopped_run_takes_nothing_more_in_from_a_batch(folder, monkeypatch):
    """SIGTERM or Ctrl-C (the session stops the tier) before a batch: RemoteStopped, neither a
    miss nor a line; nothing read, nothing placed, no temp folder left."""
    tier, said = folder
    finals = [_published(name) for name in WHOLE]
    for final in finals:
        shutil.rmtree(final)
    reads = RecordingFileSystem(tier.fs)
    monkeypatch.setattr(tier, "fs", reads)
    store_location.stop()
    with pytest.raises(RemoteStopped):
        store.stored_all((final, store.read_record) for final in finals)
    assert reads.reads == [] and said == []
    assert list(results_root().iterdir()) == []
