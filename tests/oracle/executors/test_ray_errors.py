"""What the driver says of a node's exception (`oracle/executors/ray_errors.py`): the exception
the node raised, its message and where, never the first line of Ray's text (which only names the
actor's method and process). The errors are Ray's own exception types, built as Ray builds them
(no cluster: what crosses from a node is this object)."""

from __future__ import annotations

import traceback
from pathlib import Path
from types import SimpleNamespace

import pytest

from inventory.errors import USER_ERRORS
from oracle.executors import ray_cluster
from oracle.executors.api import ExecutorError
from oracle.executors.ray_cluster import RayOracle
from oracle.executors.ray_errors import LIMIT, remote_error
from oracle.executors.ray_node import CallJob

exceptions = pytest.importorskip(
    "ray.exceptions", reason="the ray extra is not installed (scripts/test adds it)"
)


def _reads_a_missing_field(answer: dict[str, str]) -> str:
    return answer["files"]


def _raised_on_a_node(fail: type[BaseException] | None = None) -> BaseException:
    """The error Ray's driver raises for an exception `NodeAgent.run` raised on a node: the
    remote traceback and the exception as its cause (as Ray's worker stores it), handed to
    the caller as an instance of the cause's type (as `ray.get` raises it)."""
    try:
        if fail is None:
            _reads_a_missing_field({})
        else:
            raise fail("the node's own words\nand a second line")
    except Exception as raised:
        error = exceptions.RayTaskError(
            "NodeAgent.run",
            traceback.format_exc(),
            raised,
            proctitle="ray::NodeAgent.run",
            pid=31850,
            ip="127.0.0.1",
            actor_repr="<oracle.executors.ray_node.NodeAgent object at 0x7f822010e590>",
            actor_id="696ba12ae289108e209df22f0a000000",
        )
    as_raised: BaseException = error.as_instanceof_cause()
    return as_raised


def test_a_node_exception_is_its_type_message_and_where_not_rays_first_line():
    error = _raised_on_a_node()
    assert str(error).splitlines()[0].strip().startswith("\x1b[36mray::NodeAgent.run()")
    line = remote_error(error)
    assert "\n" not in line
    assert line.startswith("KeyError: 'files' (at ")
    raised_at = _reads_a_missing_field.__code__.co_firstlineno + 1
    assert line.endswith(f"test_ray_errors.py:{raised_at} in _reads_a_missing_field)")
    assert "ray::" not in line and "pid=" not in line


def test_a_message_of_several_lines_is_its_first_and_an_exception_ray_cannot_send_is_said():
    assert remote_error(_raised_on_a_node(ValueError)).startswith(
        "ValueError: the node's own words (at "
    )

    class Unsendable(Exception):
        def __reduce__(self) -> str:
            raise TypeError("cannot pickle this one")

    line = remote_error(_raised_on_a_node(Unsendable))
    # Ray sends a RayError in its place, naming the type it could not send
    assert line.startswith("RayError: Exception ")
    assert "Unsendable isn't serializable" in line
    assert len(line) <= LIMIT


def test_an_error_of_ray_itself_is_its_first_line():
    died = exceptions.RayActorError(error_msg="The actor died unexpectedly.\nmore details")
    assert remote_error(died) == "The actor died unexpectedly."


def _out_of_disk() -> BaseException:
    """`OutOfDiskError` as Ray's driver builds it for an object it could not store
    (`ray._private.serialization`: the object's id, its owner's address, its call site)."""
    error: BaseException = exceptions.OutOfDiskError(
        "7388d4a1c2b0e5f6ffffffffffffffffffffffff0100000001000000", b"\n\x1c\x8a\x04owner", ""
    )
    return error


def test_an_error_of_ray_opening_with_its_bare_arguments_is_its_type_and_what_happened():
    error = _out_of_disk()
    assert str(error).splitlines()[0].startswith("('7388d4a1")  # Ray's text opens with them
    line = remote_error(error)
    assert line.startswith("OutOfDiskError: The object cannot be created because the local ")
    assert "over capacity (95% by default)" in line
    assert "7388d4a1" not in line and "\n" not in line


def test_a_node_exception_caused_by_an_error_of_ray_is_what_happened_and_where():
    try:
        raise _out_of_disk()
    except exceptions.OutOfDiskError as raised:
        error = exceptions.RayTaskError(
            "NodeAgent.run",
            traceback.format_exc(),
            raised,
            proctitle="ray::NodeAgent.run",
            pid=31850,
            ip="127.0.0.1",
        ).as_instanceof_cause()
    line = remote_error(error)
    assert line.startswith("OutOfDiskError: The object cannot be created because the local ")
    assert "7388d4a1" not in line
    assert "test_ray_errors.py:" in line and "in test_a_node_exception_caused_by" in line


def test_files_the_clusters_store_cannot_take_are_one_line_of_a_cluster_fault(tmp_path: Path):
    """Stand-in (a double): the driver's `ray.put` is a function raising Ray's real
    `OutOfDiskError`, built as Ray builds it; no cluster is joined (a real store over Ray's disk
    threshold cannot be made here). The driver says it as a fault of the cluster (exit 2), not
    an internal error."""

    def put(value: object) -> object:
        raise _out_of_disk()

    oracle = RayOracle.__new__(RayOracle)  # no cluster: only what `_object` reads
    oracle.ray = SimpleNamespace(put=put, exceptions=exceptions)
    oracle._objects = {}
    shipped = tmp_path / "model.mlpackage"
    shipped.write_bytes(b"weights")
    with pytest.raises(ExecutorError) as caught:
        oracle._object(shipped, "**/*")
    assert isinstance(caught.value, USER_ERRORS)  # exit 2, one line
    line = str(caught.value)
    assert line.startswith(
        "the Ray cluster cannot take the files of model.mlpackage: OutOfDiskError: The object "
        "cannot be created because the local object store is full"
    )
    assert "\n" not in line and "7388d4a1" not in line


def test_a_result_the_cluster_cannot_give_back_is_one_line_of_a_cluster_fault(
    monkeypatch: pytest.MonkeyPatch,
):
    """Stand-ins (doubles): the driver's `ray.wait` and `ray.get`, the agent's handle and the
    agents made ready are functions of this test; `ray.get` raises Ray's real `OutOfDiskError`,
    built as Ray builds it for a result it could not store. No cluster is joined. The dispatch
    ends in one line naming the node, a fault of the cluster (exit 2), not an internal error."""
    result = object()  # the job's result, as Ray refers to it

    def get(ref: object) -> object:
        assert ref is result
        raise _out_of_disk()

    def wait(refs: list[object], num_returns: int, timeout: float) -> tuple[list[object], list]:
        return refs[:num_returns], refs[num_returns:]

    oracle = RayOracle.__new__(RayOracle)  # no cluster: only what the dispatch reads
    oracle.ray = SimpleNamespace(get=get, wait=wait, exceptions=exceptions)
    oracle.progress = oracle.notice = lambda line: None
    oracle.address = "127.0.0.1:6379"
    oracle._shipped = {}
    handle = SimpleNamespace(run=SimpleNamespace(remote=lambda *args: result))
    agent = ray_cluster._Agent("298b6eda0123456789", "127.0.0.1", handle)
    monkeypatch.setattr(oracle, "_ready", lambda envs: [("agent", agent)], raising=False)
    monkeypatch.setattr(ray_cluster, "_ledger", {"dispatched": 0})
    job = CallJob("convert", "9.0", {}, (), None, "call-0")
    with pytest.raises(ExecutorError) as caught:
        oracle._dispatch([job], {}, use_cache=True)
    assert isinstance(caught.value, USER_ERRORS)  # exit 2, one line
    assert str(caught.value).startswith(
        "node 298b6eda (127.0.0.1): OutOfDiskError: The object cannot be created because"
    )
