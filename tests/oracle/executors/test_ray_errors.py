"""What the driver says of a node's exception (`oracle/executors/ray_errors.py`): the exception
the node raised, its message and where, never the first line of Ray's text (which only names the
actor's method and process). The errors are Ray's own exception types, built as Ray builds them
(no cluster: what crosses from a node is this object)."""

from __future__ import annotations

import traceback

import pytest

from oracle.executors.ray_errors import LIMIT, remote_error

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
