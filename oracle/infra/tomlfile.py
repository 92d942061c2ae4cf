"""Reading the project's TOML data files with one clear line on failure."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from oracle.infra.inputfile import MAX_INPUT_BYTES, read_text


def read_toml(path: Path, error: type[Exception], limit: int = MAX_INPUT_BYTES) -> dict[str, Any]:
    """The parsed file, or `error` with the file, and for a syntax error its line and column.
    The file must be a regular file of at most `limit` bytes (oracle.infra.inputfile)."""
    text = read_text(path, error, limit)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise error(f"{path}: nested too deeply to read") from None
