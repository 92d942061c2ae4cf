"""The Ray cluster's address, checked before Ray is asked to join it: its form before Ray is
even imported, then that a Ray GCS could be answering there, within a bound.

`ray.init` joins an address with no limit of its own: on a port where something listens that
is not a cluster's GCS (a plain TCP server, an HTTP one), it retried for minutes (20 attempts of
35 s each), printing as it went, and a SIGTERM waited for its native call to return. So the
address is first checked here, in Python, where a signal lands at once: a TCP connection
(`CONNECT_SECONDS`), then one gRPC request, the GCS's `GetClusterId`, spoken as HTTP/2 frames
(Ray's own gRPC stack is native and has no timeout to give): a server that answers it with
gRPC headers within `ANSWER_SECONDS` is a gRPC server, and Ray takes it from there. A plain
listener, an HTTP/1 or TLS server, a silent port is one line, exit 2.
"""

from __future__ import annotations

import os
import socket
import struct
import time

from oracle.executors.api import ExecutorError

CONNECT_SECONDS = 5.0
ANSWER_SECONDS = 10.0
_METHOD = "/ray.rpc.NodeInfoGcsService/GetClusterId"
_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
# frame types and flags (RFC 9113)
_DATA, _HEADERS, _RST, _SETTINGS, _PING, _GOAWAY = 0x0, 0x1, 0x3, 0x4, 0x6, 0x7
_END_STREAM, _ACK, _END_HEADERS = 0x1, 0x1, 0x4


def given(address: str | None, executor: str) -> str | None:
    """The cluster's address this run names (`--ray-address`, else RAY_ADDRESS for `--executor
    ray`), its form checked: ExecutorError, one line, for an address without `--executor ray`
    or one that is not HOST:PORT (nothing is imported or sent for either)."""
    if executor != "ray":
        if address is not None:
            raise ExecutorError(
                f"--ray-address is for --executor ray; this run's executor is {executor} "
                "(add --executor ray, or leave --ray-address out)"
            )
        return None
    address = address or os.environ.get("RAY_ADDRESS", "").strip() or None
    if address is None:
        raise ExecutorError(
            "--executor ray needs a cluster: --ray-address HOST:PORT or "
            "RAY_ADDRESS (start one with `ray start --head`)"
        )
    if address != "auto":
        host_port(address)
    return address


def host_port(address: str) -> tuple[str, int]:
    """HOST:PORT with a port from 1 to 65535; ExecutorError, one line, otherwise."""
    if address.startswith("ray://"):
        raise ExecutorError(
            f"--ray-address {address[:80]}: Ray Client addresses are not supported; "
            "give the cluster's GCS address HOST:PORT (what `ray start --head` prints)"
        )
    host, _, port = address.rpartition(":")
    # a port of 5000 digits was exit 4 (int() refuses such a string): checked as text first
    if not host or not port.isdigit() or len(port) > 5 or not 0 < int(port) < 65536:
        raise ExecutorError(
            f"--ray-address {address[:80]!r}: not HOST:PORT with a port from 1 to 65535 (or 'auto')"
        )
    return host, int(port)


def _frame(kind: int, flags: int, stream: int, payload: bytes = b"") -> bytes:
    """One HTTP/2 frame: a 24-bit length, type, flags, a 31-bit stream id, the payload."""
    head = struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream)
    return head + payload


def _literal(name: str, value: str) -> bytes:
    """One header as HPACK's literal without indexing, new name, no Huffman coding (names and
    values here are under 127 bytes: a one-byte length)."""
    return b"\x00" + bytes([len(name)]) + name.encode() + bytes([len(value)]) + value.encode()


def _request(authority: str) -> bytes:
    headers = b"".join(
        _literal(k, v)
        for k, v in (
            (":method", "POST"),
            (":scheme", "http"),
            (":path", _METHOD),
            (":authority", authority),
            ("content-type", "application/grpc"),
            ("te", "trailers"),
        )
    )
    message = b"\x00" + struct.pack(">I", 0)  # an empty GetClusterIdRequest, not compressed
    return (
        _PREFACE
        + _frame(_SETTINGS, 0, 0)
        + _frame(_HEADERS, _END_HEADERS, 1, headers)
        + _frame(_DATA, _END_STREAM, 1, message)
    )


def _read(sock: socket.socket, size: int, deadline: float) -> bytes:
    data = b""
    while len(data) < size:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        sock.settimeout(left)
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionResetError("closed the connection")
        data += chunk
    return data


def check_gcs(address: str) -> None:
    """Something answering gRPC at `address` within the bounds (the GCS's `GetClusterId`, as
    HTTP/2 frames): ExecutorError, one line, if nothing listens or what listens does not answer
    so."""
    host, port = host_port(address)
    try:
        sock = socket.create_connection((host, port), timeout=CONNECT_SECONDS)
    except OSError as exc:
        raise ExecutorError(
            f"cannot reach the Ray cluster at {address}: {exc.strerror or exc}"
        ) from None
    deadline = time.monotonic() + ANSWER_SECONDS
    try:
        with sock:
            sock.sendall(_request(f"{host}:{port}"))
            while True:
                header = _read(sock, 9, deadline)
                size = int.from_bytes(header[:3], "big")
                kind, flags = header[3], header[4]
                stream = int.from_bytes(header[5:9], "big") & 0x7FFFFFFF
                payload = _read(sock, size, deadline) if size else b""
                if kind == _SETTINGS and not flags & _ACK:
                    sock.sendall(_frame(_SETTINGS, _ACK, 0))
                elif kind == _PING and not flags & _ACK:
                    sock.sendall(_frame(_PING, _ACK, 0, payload))
                elif kind in (_HEADERS, _DATA) and stream == 1:
                    return  # a gRPC server answered the request: Ray takes it from here
                elif kind in (_GOAWAY, _RST):
                    raise ConnectionResetError("refused the request")
    except TimeoutError:
        why = f"no answer as a Ray GCS within {ANSWER_SECONDS:g} s"
    except OSError as exc:
        why = f"not a Ray GCS ({exc.strerror or exc})"
    raise ExecutorError(
        f"--ray-address {address}: {why}; give the cluster's GCS address "
        "(what `ray start --head` prints)"
    )
