"""What `--store` (or `INVENTORY_STORE`) asks for, read by where the cache and the store lie
(`oracle/infra/paths.py`) before any store is opened: a local folder, or a URL whose remote tier
`oracle/store/location.py` connects (that half lives with the store: reading the setting must not
reach an object-store client).
"""

from __future__ import annotations

import os
import re

# `scheme://...`; a Windows drive (`C:\`) or a plain path has no `//` after its colon
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")

_chosen: str | None = None  # `--store` of this command; None: INVENTORY_STORE, else the cache


def is_url(value: str) -> bool:
    return bool(_URL.match(value))


def choose(value: str | None) -> None:
    """Keep the command's `--store` for the rest of the process (None: the environment's)."""
    global _chosen
    _chosen = value.strip() if value and value.strip() else None


def setting() -> str | None:
    """The store asked for: `--store`, else INVENTORY_STORE, else None (the cache)."""
    value = _chosen if _chosen is not None else os.environ.get("INVENTORY_STORE", "")
    return value.strip() or None


def local_setting() -> str | None:
    """The local folder asked for, if the setting is one (a URL's local tier is the cache)."""
    value = setting()
    return value if value is not None and not is_url(value) else None
