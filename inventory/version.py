"""The tool's version: the installed package's metadata, which pyproject.toml's `version` sets.
`inventory --version` prints it and every JSON envelope carries it, so a kept answer says which
inventory made it."""

from __future__ import annotations

import functools
import importlib.metadata


@functools.cache
def version() -> str:
    try:
        return importlib.metadata.version("inventory")
    except importlib.metadata.PackageNotFoundError:
        # run from a checkout that was never installed: no metadata to read, and no guess
        return "unknown (not installed)"
