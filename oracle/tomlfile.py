"""Reading the project's TOML data files with one clear line on failure."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any


def read_toml(path: Path, error: type[Exception]) -> dict[str, Any]:
    """The parsed file, or `error` with the file, and for a syntax error its line and column."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(f"{path}: {exc}") from None
    except RecursionError:  # tomllib parses nested arrays and tables recursively
        raise error(f"{path}: nested too deeply to read") from None
