"""Accepted risks: an ignore file of (fix, bundle, reason, expiry) entries.

An entry that is in force turns that bundle's answer for that fix into `ignored` (kept in the
output with its reason, left out of the exit code). An expired entry no longer applies; it and an
entry that matches nothing are reported as warnings, so the file does not rot silently.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from inventory.errors import InputFileError
from oracle.tomlfile import read_toml


@dataclass(frozen=True)
class Ignore:
    fix: str
    bundle: str
    reason: str
    expires: dt.date | None


def load_ignores(path: Path | None) -> list[Ignore]:
    if path is None:
        return []
    data = read_toml(path, InputFileError)
    out = []
    for i, raw in enumerate(data.get("ignore", []), start=1):
        missing = [k for k in ("fix", "bundle", "reason") if k not in raw]
        if missing:
            raise InputFileError(f"{path}: ignore entry {i} lacks {', '.join(missing)}")
        expires = raw.get("expires")
        if isinstance(expires, str):
            try:
                expires = dt.date.fromisoformat(expires)
            except ValueError:
                raise InputFileError(f"{path}: ignore entry {i}: expires must be a date "
                                    f"(YYYY-MM-DD), not {expires!r}") from None
        out.append(Ignore(str(raw["fix"]).lstrip("#"), str(raw["bundle"]), str(raw["reason"]),
                          expires))
    return out


def in_force(ignores: list[Ignore], today: dt.date | None = None) -> tuple[list[Ignore],
                                                                           list[str]]:
    today = today or dt.date.today()
    active, warnings = [], []
    for entry in ignores:
        if entry.expires is not None and entry.expires < today:
            warnings.append(f"ignore entry for fix #{entry.fix} / {entry.bundle} expired on "
                            f"{entry.expires.isoformat()}; it no longer applies")
        else:
            active.append(entry)
    return active, warnings


def matching(ignores: list[Ignore], fix_ids: set[str], bundle: str) -> Ignore | None:
    return next((i for i in ignores if i.bundle == bundle and i.fix in fix_ids), None)


def unmatched(ignores: list[Ignore], seen: set[tuple[str, str]]) -> list[str]:
    """Warnings for entries whose (fix, bundle) this run never met."""
    return [f"ignore entry for fix #{i.fix} / {i.bundle} matches nothing in this run"
            for i in ignores if (i.fix, i.bundle) not in seen]
