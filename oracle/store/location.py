"""What `--store` (or `INVENTORY_STORE`) names: a local folder, the result store itself (today's
layout, published by rename), or a URL, a remote tier behind the local store
(`oracle/store/remote.py`: `file://` or `s3://BUCKET/PREFIX`, through fsspec).

The choice is made once per command (`choose`, from the command line) and read by the store
(`paths.store_root`, `store.stored`, `store.install`). Nothing here imports fsspec: a command
without a URL never loads it, and `--help` stays fast.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oracle.store.remote import RemoteStore

# `scheme://...`; a Windows drive (`C:\`) or a plain path has no `//` after its colon
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

_chosen: str | None = None  # `--store` of this command; None: INVENTORY_STORE, else the cache
_remote: RemoteStore | None = None


def _silent(_: str) -> None:
    pass


# Where the remote tier says a fetch or publish failed mid-run (the answer stands, from the
# local store): one line for the user whatever the progress setting.
notice: Callable[[str], None] = _silent


def is_url(value: str) -> bool:
    return bool(_URL.match(value))


def setting() -> str | None:
    """The store asked for: `--store`, else INVENTORY_STORE, else None (the cache)."""
    value = _chosen if _chosen is not None else os.environ.get("INVENTORY_STORE", "")
    return value.strip() or None


def local_setting() -> str | None:
    """The local folder asked for, if the setting is one (a URL's local tier is the cache)."""
    value = setting()
    return value if value is not None and not is_url(value) else None


def choose(value: str | None, on_notice: Callable[[str], None] | None = None) -> None:
    """Keep the command's store for the rest of the process, and connect its remote tier when
    it is a URL (checked now: a bad scheme, a missing extra, a bucket that cannot be reached
    is one line and exit 2, before any work)."""
    global _chosen, _remote, notice
    _chosen = value.strip() if value and value.strip() else None
    _remote = None
    notice = on_notice or _silent
    url = setting()
    if url is not None and is_url(url):
        from oracle.store.remote import connect

        _remote = connect(url)


def reset() -> None:
    """No command's choice: the environment's (each command starts from it)."""
    global _chosen, _remote, notice
    _chosen, _remote, notice = None, None, _silent


def remote() -> RemoteStore | None:
    """The remote tier of this run, if its store is a URL."""
    return _remote
