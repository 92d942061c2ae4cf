"""`--store URL`: the result store's remote tier (`oracle/store/remote.py`), against an
S3-compatible server on 127.0.0.1 (moto's server mode, a cloud bucket's stand-in; no other
address is reached) and a `file://` folder.

A result exists remotely only through a complete manifest whose every file matches: a writer
killed before its manifest, a truncated manifest, a file gone or edited is a miss, never half a
result taken in; two writers of one key keep the first complete manifest. The slow test runs
`sweep` in separate processes with separate local stores through one bucket: the answer is a
local store's, the second driver reads what the first published, and what was damaged in the
bucket is recomputed and published again. A driver with no environment answers from a warm
bucket building nothing, and where the bucket lacks one comparison builds only its two.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import s3fs
from cli import invoke, one_line, spawn, start
from doubles.faults import fault_env
from doubles.remote_fs import REMOTE_FAULT, RecordingFileSystem
from registries import conv_transpose_registry
from s3_server import make_bucket, s3_server
from store_answers import answer_in, borrowing_store, without

from oracle.catalog.releases import load_catalog
from oracle.envs.installer import uv_cache
from oracle.infra.paths import envs_dir
from oracle.store import location as store_location
from oracle.store import result_store as store
from oracle.store.remote import MANIFEST, SELF_DIGEST, RemoteStore, _manifest_digest
from oracle.store.remote_reads import MAX_MANIFEST_BYTES, MAX_MANIFEST_FILES, RemoteStopped
from oracle.store.result_store import results_root

BUCKET = "inventory-results"


@pytest.fixture(scope="module")
def s3(tmp_path_factory) -> Iterator[dict[str, str]]:
    """The server, its bucket, and the environment a process needs to reach it."""
    with s3_server(tmp_path_factory.mktemp("aws")) as env:
        make_bucket(BUCKET)
        yield env


@pytest.fixture
def tier(s3, tmp_path, monkeypatch, request) -> Iterator[RemoteStore]:
    """A local store of this test's own with the bucket behind it, under a prefix of its own."""
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "local"))
    monkeypatch.delenv("INVENTORY_STORE", raising=False)
    store_location.choose(f"s3://{BUCKET}/{request.node.name}")
    remote = store_location.remote()
    assert remote is not None
    yield remote
    store_location.reset()


def _made(folder: Path, verdict: str) -> Path:
    """A result folder as the store writes one (`store.write_record`): evidence, then the
    record with every file's sha256 and its own."""
    (folder / "old-0.4.1").mkdir(parents=True)
    (folder / "old-0.4.1" / "shipped.mlir").write_text(f"module {{ // {verdict}\n}}\n")
    store.write_record(folder, {"verdict": verdict, "key": folder.name})
    return folder


def _published(name: str, verdict: str) -> Path:
    """A result built in the local store and put in place, so published to the remote tier."""
    final = results_root() / name
    with store.building(final) as work:
        _made(work, verdict)
        assert store.install(work, final, store.read_record, replace_stored=False) is None
    return final


def _fetched(name: str) -> dict[str, Any] | None:
    """What a driver with an empty local store reads for `name` (and leaves behind)."""
    final = results_root() / name
    shutil.rmtree(final, ignore_errors=True)
    found = store.stored(final, store.read_record)
    left = [p.name for p in results_root().iterdir() if p.name.startswith(".")]
    assert left == [], f"temp folders left: {left}"
    assert (found is None) == (not final.exists()), "a miss must leave nothing in place"
    return found


def _verdict(name: str) -> str:
    """The verdict of the result a driver with an empty local store reads (a hit, asserted)."""
    found = _fetched(name)
    assert found is not None, f"{name}: a miss"
    return str(found["verdict"])


def _objects(tier: RemoteStore, name: str) -> list[str]:
    return sorted(tier.fs.find(f"{tier.root}/results/{name}"))


def test_a_result_exists_remotely_only_through_a_complete_matching_manifest(tier):
    _published("whole", "same-program")
    _published("killed", "values-move")
    _published("truncated", "values-move")
    _published("file-gone", "values-move")
    _published("edited", "values-move")
    base = f"{tier.root}/results"
    # a writer killed after its files, before its manifest: objects no reader follows
    tier.fs.rm(f"{base}/killed/{MANIFEST}")
    manifest = tier.fs.cat_file(f"{base}/truncated/{MANIFEST}")
    tier.fs.pipe_file(f"{base}/truncated/{MANIFEST}", manifest[: len(manifest) // 2])
    token = json.loads(tier.fs.cat_file(f"{base}/file-gone/{MANIFEST}"))["token"]
    tier.fs.rm(f"{base}/file-gone/{token}/old-0.4.1/shipped.mlir")
    # an edited verdict whose record digest is recomputed: only the manifest can tell
    token = json.loads(tier.fs.cat_file(f"{base}/edited/{MANIFEST}"))["token"]
    record = json.loads(tier.fs.cat_file(f"{base}/edited/{token}/{store.RESULT_FILE}"))
    record["verdict"] = "same-program"
    record[store.RECORD_DIGEST] = store.record_digest(record)
    tier.fs.pipe_file(f"{base}/edited/{token}/{store.RESULT_FILE}", json.dumps(record).encode())

    whole = _fetched("whole")
    assert whole is not None and whole["verdict"] == "same-program"
    assert (
        results_root() / "whole" / "old-0.4.1" / "shipped.mlir"
    ).read_text() == "module { // same-program\n}\n"
    for name in ("killed", "truncated", "file-gone", "edited"):
        assert _fetched(name) is None, name
    # made again (here: the same record) and published over what was there: read whole again
    for name in ("truncated", "file-gone", "edited"):
        _published(name, "values-move")
        again = _fetched(name)
        assert again is not None and again["verdict"] == "values-move", name


def test_of_two_writers_of_one_key_the_first_complete_manifest_wins(tier, tmp_path):
    first = _made(tmp_path / "first", "first")
    second = _made(tmp_path / "second", "second")

    def files(folder: Path) -> dict[str, Path]:
        return {str(p.relative_to(folder)): p for p in folder.rglob("*") if p.is_file()}

    assert tier.publish("key", files(first)) is True
    before = _objects(tier, "key")
    assert tier.publish("key", files(second)) is False
    assert _objects(tier, "key") == before  # the second writer's prefix is removed
    assert _verdict("key") == "first"
    # --no-cache: the fresh result replaces it, and the prefix the old manifest named goes
    assert tier.publish("key", files(second), replace=True) is True
    assert len(_objects(tier, "key")) == len(before)
    assert not set(_objects(tier, "key")) & (set(before) - {f"{tier.root}/results/key/{MANIFEST}"})
    assert _verdict("key") == "second"


def test_a_file_url_is_the_same_protocol_in_a_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "local"))
    shared = tmp_path / "shared"
    store_location.choose(f"file://{shared}")
    try:
        _published("r", "same-program")
        [manifest] = shared.glob(f"results/r/{MANIFEST}")
        assert json.loads(manifest.read_text())["files"].keys() == {
            store.RESULT_FILE,
            "old-0.4.1/shipped.mlir",
        }
        assert _verdict("r") == "same-program"
    finally:
        store_location.reset()


@pytest.fixture
def folder_tier(tmp_path, monkeypatch) -> Iterator[tuple[RemoteStore, list[str]]]:
    """A local store of this test's own with a `file://` folder behind it, and the lines the
    remote tier says."""
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path / "local"))
    monkeypatch.delenv("INVENTORY_STORE", raising=False)
    said: list[str] = []
    store_location.choose(f"file://{tmp_path / 'shared'}", on_notice=said.append)
    remote = store_location.remote()
    assert remote is not None
    yield remote, said
    store_location.reset()


def _object(tier: RemoteStore, name: str, rel: str) -> Path:
    """Where a published result's file lies in a `file://` tier."""
    base = Path(tier.root) / "results" / name
    return base / json.loads((base / MANIFEST).read_text())["token"] / rel


def _sparse(path: Path, size: int) -> None:
    with path.open("ab") as handle:
        handle.truncate(size)


GiB = 1024**3


def test_an_object_past_its_size_is_refused_by_its_metadata_and_never_read_whole(
    folder_tier, monkeypatch
):
    """A large object (a sparse GiB) where a manifest or a result file lies is refused from its
    metadata before a byte of it is read (once read whole: 3.15 GB of memory for a 3 GB one);
    one that grows between its listing and its read is read only up to the size its manifest
    names. No read asks for more than the manifest's cap."""
    tier, said = folder_tier
    for name in ("huge-manifest", "huge-file", "grown"):
        _published(name, "same-program")
    _sparse(Path(tier.root) / "results" / "huge-manifest" / MANIFEST, GiB)
    _sparse(_object(tier, "huge-file", "old-0.4.1/shipped.mlir"), GiB)
    grown = _object(tier, "grown", "old-0.4.1/shipped.mlir")
    reads = RecordingFileSystem(tier.fs, grow={str(grown): GiB})
    monkeypatch.setattr(tier, "fs", reads)

    assert _fetched("huge-manifest") is None
    assert _fetched("huge-file") is None
    assert _verdict("grown") == "same-program"  # what its manifest names, read whole
    assert reads.largest_read() <= MAX_MANIFEST_BYTES + 1, reads.reads
    assert not [path for path, _ in reads.reads if "huge-file" in path and "shipped" in path]
    assert [line.split(": ", 1)[1].split(" (")[0] for line in said] == ["huge-manifest not fetched"]
    assert f"{GiB} bytes, more than the 4 MiB allowed); computing it here" in said[0]
    # refused, then computed here and published over it: read whole again
    _published("huge-manifest", "values-move")
    assert _verdict("huge-manifest") == "values-move"


def test_a_manifest_past_the_file_limit_is_refused_in_one_line_before_any_file_is_read(
    tier, monkeypatch
):
    """A manifest naming more files than a result may have (one of 20,000 once kept a run busy
    for over 600 s) is refused as soon as it is read: no listing, no file read; one line, and
    the result is computed here and published over it."""
    said: list[str] = []
    monkeypatch.setattr(store_location, "notice", said.append)
    _published("many", "same-program")
    path = f"{tier.root}/results/many/{MANIFEST}"
    body = json.loads(tier.fs.cat_file(path))
    entry = next(iter(body["files"].values()))
    body["files"] = {f"f{i}": entry for i in range(MAX_MANIFEST_FILES + 1)}
    body[SELF_DIGEST] = _manifest_digest(body)
    tier.fs.pipe_file(path, json.dumps(body).encode())
    reads = RecordingFileSystem(tier.fs)
    monkeypatch.setattr(tier, "fs", reads)

    assert _fetched("many") is None
    assert reads.listed == [] and {p for p, _ in reads.reads} == {path}
    assert said == [
        f"--store {tier.url}: many not fetched (RemoteLimitError: many: its manifest names "
        f"{MAX_MANIFEST_FILES + 1} files, more than the {MAX_MANIFEST_FILES} a result may "
        "have); computing it here"
    ]
    _published("many", "values-move")
    assert _verdict("many") == "values-move"


def test_a_stopped_run_reads_nothing_more_from_the_remote_tier(folder_tier, monkeypatch):
    """SIGTERM or Ctrl-C (the session stops the tier): a fetch in a job's thread ends at its
    next read, neither a miss nor a line for the user."""
    tier, said = folder_tier
    _published("r", "same-program")
    reads = RecordingFileSystem(tier.fs)
    monkeypatch.setattr(tier, "fs", reads)
    store_location.stop()
    with pytest.raises(RemoteStopped):
        _fetched("r")
    assert reads.reads == [] and said == []


def test_a_bucket_gone_mid_run_costs_the_remote_copy_only_and_says_so(tier, monkeypatch):
    """The network gone after the command connected: a fetch is a miss and a publish is skipped,
    each said in one line; the result is made and kept in the local store all the same."""
    said: list[str] = []
    gone = s3fs.S3FileSystem(
        skip_instance_cache=True,
        use_listings_cache=False,
        endpoint_url=f"http://127.0.0.1:{_closed_port()}",
        config_kwargs={"retries": {"max_attempts": 1}},
    )
    monkeypatch.setattr(tier, "fs", gone)
    monkeypatch.setattr(store_location, "notice", said.append)
    assert _fetched("r") is None
    final = _published("r", "same-program")
    kept = store.read_record(final)
    assert kept is not None and kept["verdict"] == "same-program"
    assert [line.split(" (")[0] for line in said] == [
        f"--store {tier.url}: r not fetched",
        f"--store {tier.url}: r not published",
    ]
    assert all("\n" not in line and "EndpointConnectionError" in line for line in said)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize(
    "url, aws, said",
    [
        (
            "ftp://host/results",
            {},
            "a store is a local path, file:///PATH or s3://BUCKET/PREFIX, not ftp://",
        ),
        (f"s3://no-such-{BUCKET}/p", {}, f"no bucket no-such-{BUCKET}"),
        (
            f"s3://{BUCKET}/p",
            {"AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{_closed_port()}"},
            f"cannot reach bucket {BUCKET}: EndpointConnectionError",
        ),
    ],
    ids=["scheme", "no-bucket", "unreachable"],
)
def test_a_store_that_cannot_be_used_is_one_line_and_exit_2_before_any_work(
    s3, tmp_path, url, aws, said
):
    ran = invoke("affected", "--fix", "40", "--store", url, INVENTORY_CACHE=str(tmp_path), **aws)
    assert ran.returncode == 2
    line = one_line(ran)
    assert said in line and "testing" not in line  # never a credential
    assert not (tmp_path / "results").exists()


# ---- through the command line, with real converters ------------------------------------------
CHANNELS = (3, 5, 7)  # three probes: one read back whole, one edited, one whose writer died
SWEEP = ("sweep", "--registry", "--from", "0.4.1", "--to", "0.4.2", "--json", "-q")


def _registry(folder: Path, channels: tuple[int, ...] = CHANNELS) -> Path:
    path = folder / f"{len(channels)}.toml"
    text = (
        '[bundles.a]\nfiles = ["a"]\ndtype = "float32"\n'
        '[bundles.a.exporter]\nconverter = "0.4.1"\nsource = "test"\n'
    )
    for c in channels:
        text += (
            '[[bundles.a.instances]]\nkind = "conv_transpose"\ndtype = "float32"\n'
            f'source = "test"\nparams = {{ dim = 1, in_channels = {c}, out_channels = 2, '
            "kernel = [4], stride = [2], padding = [0], output_padding = [1], "
            f"input_shape = [1, {c}, 11] }}\n"
        )
    path.write_text(text)
    return path


def _cached(data: Any) -> list[bool]:
    """Every `cached` flag of the document, in its order."""
    if isinstance(data, dict):
        return ([data["cached"]] if "cached" in data else []) + [
            f for v in data.values() for f in _cached(v)
        ]
    if isinstance(data, list):
        return [f for v in data for f in _cached(v)]
    return []


def test_two_drivers_through_one_bucket_answer_as_a_local_store(env, s3, tmp_path):
    env("0.4.1"), env("0.4.2")
    registry = _registry(tmp_path)
    args = (*SWEEP, "--registry-file", str(registry))
    local_cache = borrowing_store(tmp_path, "local")
    local = spawn(*args, INVENTORY_CACHE=str(local_cache))
    assert local.returncode == 0, local.stderr
    local_answer = without(answer_in(local.stdout, local_cache), "cached")

    url = f"s3://{BUCKET}/two-drivers"
    first_cache = borrowing_store(tmp_path, "first")
    first = spawn(*args, "--store", url, INVENTORY_CACHE=str(first_cache), **s3)
    assert first.returncode == 0, first.stderr
    assert without(answer_in(first.stdout, first_cache), "cached") == local_answer
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    names = sorted(p.rsplit("/", 1)[1] for p in fs.ls(f"{BUCKET}/two-drivers/results"))
    # the bucket holds the comparisons and the sides they were made over
    assert names == sorted(
        p.name
        for kind in ("results", "sides")
        for p in (first_cache / kind).iterdir()
        if not p.name.startswith(".")
    )
    comparisons = [n for n in names if not n.startswith("side-")]
    assert len(comparisons) == len(CHANNELS) and len(names) == 3 * len(CHANNELS)
    tier = RemoteStore(url, fs, f"{BUCKET}/two-drivers")
    whole, edited, killed = comparisons
    body = tier.manifest(edited)
    assert body is not None
    shipped = next(rel for rel in body["files"] if rel.endswith("shipped.mlir"))
    path = f"{BUCKET}/two-drivers/results/{edited}/{body['token']}/{shipped}"
    fs.pipe_file(path, fs.cat_file(path).replace(b"%", b"#", 1))  # one byte changed
    fs.rm(f"{BUCKET}/two-drivers/results/{killed}/{MANIFEST}")  # its writer died before it

    second_cache = borrowing_store(tmp_path, "second")
    second = spawn(*args, INVENTORY_CACHE=str(second_cache), INVENTORY_STORE=url, **s3)
    assert second.returncode == 0, second.stderr
    second_answer = answer_in(second.stdout, second_cache)
    assert without(second_answer, "cached") == local_answer
    # read back: the whole one; computed again: the edited one and the one without manifest
    assert sorted(_cached(second_answer)) == [False, False, True]
    for name in names:  # and what was damaged is published whole again
        assert tier.manifest(name) is not None
        assert tier.fetch(name, tmp_path / "check" / name), name


@pytest.mark.parametrize(
    "sig, code, said",
    [
        (signal.SIGTERM, 143, ["error: stopped by SIGTERM; nothing answered"]),
        (signal.SIGINT, 130, []),
    ],
    ids=["sigterm", "ctrl-c"],
)
def test_a_run_stopped_during_a_long_remote_read_ends_at_once_without_a_traceback(
    env, tmp_path, sig, code, said
):
    """A result in the folder tier whose manifest names 4000 files, read slowly (a double of the
    file system: each file 20 ms, 80 s in all, where a bucket far away is slow): SIGTERM or
    Ctrl-C while a job's thread reads it ends the run at the fetch's next read, with its exit
    code and no traceback, leaving no temp folder (it once waited for every read to end, and
    ignored a second SIGTERM)."""
    env("0.4.1"), env("0.4.2")
    args = (*SWEEP, "--registry-file", str(_registry(tmp_path, (11,))))
    shared = tmp_path / "shared"
    first = spawn(
        *args,
        "--store",
        f"file://{shared}",
        INVENTORY_CACHE=str(borrowing_store(tmp_path, "first")),
    )
    assert first.returncode == 0, first.stderr
    # the comparison (its two sides are stored beside it, each a result of its own)
    [folder] = [p for p in (shared / "results").iterdir() if not p.name.startswith("side-")]
    body = json.loads((folder / MANIFEST).read_text())
    for i in range(4000):  # a large result, within the limit
        data = f"{i}\n".encode()
        (folder / body["token"] / f"many/{i}").parent.mkdir(exist_ok=True)
        (folder / body["token"] / f"many/{i}").write_bytes(data)
        body["files"][f"many/{i}"] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    body[SELF_DIGEST] = _manifest_digest(body)
    (folder / MANIFEST).write_text(json.dumps(body))

    second = borrowing_store(tmp_path, "second")
    run = start(
        *args,
        "--store",
        f"file://{shared}",
        INVENTORY_CACHE=str(second),
        INVENTORY_FAULT_DIR=str(tmp_path),
        **fault_env(**{REMOTE_FAULT: "slow:0.02"}),
    )
    deadline = time.monotonic() + 300
    while not (tmp_path / "remote-read").exists():
        assert run.poll() is None and time.monotonic() < deadline, run.communicate()
        time.sleep(0.05)
    run.send_signal(sig)
    try:
        _, err = run.communicate(timeout=40)  # the whole read would take 80 s
    except subprocess.TimeoutExpired:
        run.kill()
        raise AssertionError(f"the run did not end within 40 s of its {sig.name}") from None
    assert run.returncode == code, err
    assert "Traceback" not in err, err
    assert [ln for ln in err.splitlines() if ln.strip()] == said
    assert [p.name for p in (second / "results").iterdir() if p.name.startswith(".")] == []


# ---- a second driver: answers from the bucket, builds only what it lacks ---------------------
AFFECTED = ("affected", "--fix", "40", "--json")
PLAN = ("plan", "--to", "0.4.3", "--json")


def _published_answers(
    tmp_path: Path, s3: dict[str, str], url: str, registry: Path
) -> dict[str, Any]:
    """`affected --fix 40` and `plan --to 0.4.3` computed by a first driver (the environments
    built) and published to `url`: each answer, without its `cached` flags."""
    first_cache = borrowing_store(tmp_path, "first")
    answers = {}
    for args in (AFFECTED, PLAN):
        where = {"INVENTORY_CACHE": str(first_cache), **s3}
        first = spawn(*args, "--registry", str(registry), "--store", url, **where)
        answer = without(answer_in(first.stdout, first_cache), "cached")
        assert answer["error"] is None, first.stderr
        # the exit code says the answer (a re-export is required: 1), the same for the others
        answers[args[0]] = (first.returncode, answer)
    return answers


def test_a_second_driver_answers_from_a_warm_bucket_building_nothing(env, s3, tmp_path):
    """Every comparison and load check in the bucket: a driver with an empty store and no
    environment at all (not even the shared torch) answers as the first did, and builds
    nothing and starts no worker (it once built the shared torch and every environment of the
    range before reading what it only had to read)."""
    env("0.4.1"), env("0.4.2"), env("0.4.3")
    registry = conv_transpose_registry(tmp_path, 17)
    url = f"s3://{BUCKET}/second-driver"
    answers = _published_answers(tmp_path, s3, url, registry)

    second_cache = tmp_path / "second"
    second_cache.mkdir()
    for args in (AFFECTED, PLAN):
        second = spawn(
            *args,
            "--registry",
            str(registry),
            INVENTORY_CACHE=str(second_cache),
            INVENTORY_STORE=url,
            **s3,
        )
        answer = without(answer_in(second.stdout, second_cache), "cached")
        assert (second.returncode, answer) == answers[args[0]], second.stderr
        assert ", 0 converted" in second.stderr and " 0 stored" not in second.stderr
    assert not (second_cache / "envs").exists()  # no environment, no shared torch
    assert not (second_cache / "logs").exists()  # no worker: each writes its log there


def test_a_bucket_missing_one_comparison_builds_only_that_comparisons_two_environments(
    env, s3, tmp_path
):
    """One comparison of `plan --to 0.4.3` gone from the bucket (its writer died before its
    manifest): a driver with no converter environment builds the two of that comparison, and
    none of the other releases the plan spans."""
    env("0.4.1"), env("0.4.2"), env("0.4.3")
    registry = conv_transpose_registry(tmp_path, 19)
    url = f"s3://{BUCKET}/missing-one"
    answers = _published_answers(tmp_path, s3, url, registry)
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    names = [p.rsplit("/", 1)[1] for p in fs.ls(f"{BUCKET}/missing-one/results")]
    [victim] = [n for n in names if n.startswith("conv_transpose-0.4.1-0.4.3-")]
    fs.rm(f"{BUCKET}/missing-one/results/{victim}/{MANIFEST}")

    third_cache = tmp_path / "third"
    (third_cache / "envs").mkdir(parents=True)
    # the shared torch and uv's cache borrowed: what is built is the converters' environments
    torch = envs_dir() / f"torch-{load_catalog().torch}"
    (third_cache / "envs" / torch.name).symlink_to(torch)
    (third_cache / "uv").symlink_to(uv_cache())
    third = spawn(
        *PLAN,
        "--registry",
        str(registry),
        INVENTORY_CACHE=str(third_cache),
        INVENTORY_STORE=url,
        **s3,
    )
    answer = without(answer_in(third.stdout, third_cache), "cached")
    assert (third.returncode, answer) == answers["plan"], third.stderr
    built = sorted(
        p.name for p in (third_cache / "envs").iterdir() if p.is_dir() and not p.is_symlink()
    )
    assert built == ["coreai-torch-0.4.1", "coreai-torch-0.4.3"]
    assert "3 stored, 1 converted" in third.stderr
