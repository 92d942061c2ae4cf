"""Reading the project's TOML data files with one clear line on failure."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from oracle.infra.inputfile import MAX_INPUT_BYTES, read_text


def read_toml(path: Path, error: type[Exception], limit: int = MAX_INPUT_BYTES) -> dict[str, Any]:
    """The parsed file, or `error` with the file, and for a syntax error its line and column.
    The file must be a regular file of at most `limit` bytes (oracle.infra.inputfile)."""
    return parse_toml(read_text(path, error, limit), path, error)


def parse_toml(text: str, path: Path, error: type[Exception]) -> dict[str, Any]:
    """`text`, read from `path`, parsed; `error` as `read_toml` raises it."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise error(f"{path}: nested too deeply to read") from None
