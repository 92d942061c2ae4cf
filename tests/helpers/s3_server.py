"""An S3-compatible server on 127.0.0.1 for the remote store's tests: moto's server mode, the
stand-in for a cloud bucket. The environment it returns points the AWS SDK at it and nowhere
else: dummy credentials, no profile or config file of the user's, no instance metadata, no
proxy for loopback."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

moto_server = pytest.importorskip(
    "moto.server", reason="the test extra's moto[server] is not installed (scripts/test adds it)"
)


def aws_env(endpoint: str, tmp: Path) -> dict[str, str]:
    """What a process needs to reach the server at `endpoint`, and only it."""
    return {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_CONFIG_FILE": str(tmp / "no-aws-config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp / "no-aws-credentials"),
        "NO_PROXY": "127.0.0.1",
        "no_proxy": "127.0.0.1",
    }


_CLEARED = (
    "AWS_PROFILE",
    "AWS_SESSION_TOKEN",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
)


@contextlib.contextmanager
def s3_server(tmp: Path) -> Iterator[dict[str, str]]:
    """The server started on 127.0.0.1 (a free port), this process's environment pointed at it
    (for s3fs in the tests) and returned (for the processes they start); stopped after."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    env = aws_env(f"http://{host}:{port}", tmp)
    saved = {k: os.environ.get(k) for k in (*env, *_CLEARED)}
    os.environ.update(env)
    for k in _CLEARED:
        os.environ.pop(k, None)
    try:
        yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.stop()


def make_bucket(name: str) -> None:
    import s3fs

    s3fs.S3FileSystem(skip_instance_cache=True).mkdir(name)
