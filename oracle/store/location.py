"""What `--store` (or `INVENTORY_STORE`) names: a local folder, the result store itself (today's
layout, published by rename), or a URL, a remote tier behind the local store
(`oracle/store/remote.py`: `file://` or `s3://BUCKET/PREFIX`, through fsspec).

The choice is made once per command (`choose`, from the command line); the setting itself is
`oracle/infra/store_setting.py` (read by `paths.store_root` before any store is opened), and
the remote tier this module connects is read by the store (`stored`, `install`). Nothing here
imports fsspec until a URL is chosen: a command without one never loads it, and `--help` stays
fast.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from oracle.infra import store_setting
from oracle.infra.store_setting import is_url, local_setting, setting

if TYPE_CHECKING:
    from oracle.store.remote import RemoteStore

__all__ = ["choose", "is_url", "local_setting", "notice", "remote", "reset", "setting", "stop"]

_remote: RemoteStore | None = None


def _silent(_: str) -> None:
    pass


# Where the remote tier says a fetch or publish failed mid-run (the answer stands, from the
# local store): one line for the user whatever the progress setting.
notice: Callable[[str], None] = _silent


def choose(value: str | None, on_notice: Callable[[str], None] | None = None) -> None:
    """Keep the command's store for the rest of the process, and connect its remote tier when
    it is a URL (checked now: a bad scheme, a missing extra, a bucket that cannot be reached
    is one line and exit 2, before any work)."""
    global _remote, notice
    store_setting.choose(value)
    _remote = None
    notice = on_notice or _silent
    url = setting()
    if url is not None and is_url(url):
        from oracle.store.remote import connect

        _remote = connect(url)


def reset() -> None:
    """No command's choice: the environment's (each command starts from it)."""
    global _remote, notice
    store_setting.choose(None)
    _remote, notice = None, _silent


def remote() -> RemoteStore | None:
    """The remote tier of this run, if its store is a URL."""
    return _remote


def stop() -> None:
    """The run is being stopped (SIGTERM, Ctrl-C): a fetch from the remote tier in progress in
    a job's thread ends at its next read, so the run does not wait for it to exit."""
    if _remote is not None:
        _remote.stop()
