"""How much of the whole-program check `plan` and `affected` measure (`--verify`): none (a
stored check is read), every bundle's (`--verify`), or only where the answer would otherwise be
`unchecked` (`--verify auto`)."""

from __future__ import annotations

from enum import StrEnum


class VerifyMode(StrEnum):
    """The values `--verify` takes; bare `--verify` is `all`."""

    ALL = "all"
    AUTO = "auto"


def measures_all(mode: VerifyMode | None) -> bool:
    return mode == VerifyMode.ALL


def measures_unchecked(mode: VerifyMode | None) -> bool:
    """`--verify auto`: a check is measured where a bundle's answer would be `unchecked`."""
    return mode == VerifyMode.AUTO
