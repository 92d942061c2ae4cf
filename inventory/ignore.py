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
from oracle.infra import read_toml


@dataclass(frozen=True)
class Ignore:
    fix: str
    bundle: str
    reason: str
    expires: dt.date | None


def load_ignores(path: Path | None) -> list[Ignore]:
    """The file's entries; a malformed file (any entry of the wrong shape) is one line naming
    the file, the entry and the field."""
    if path is None:
        return []
    data = read_toml(path, InputFileError)
    unknown = [k for k in data if k != "ignore"]
    if unknown:
        raise InputFileError(
            f"{path}: unknown table or key {unknown[0]!r} (an ignore file "
            "holds [[ignore]] entries only)"
        )
    entries = data.get("ignore", [])
    if not isinstance(entries, list):
        raise InputFileError(f"{path}: 'ignore' must be an array of tables ([[ignore]])")
    return [_entry(raw, f"{path}: ignore entry {i}") for i, raw in enumerate(entries, start=1)]


_KEYS = ("fix", "bundle", "reason", "expires")


def _entry(raw: object, where: str) -> Ignore:
    if not isinstance(raw, dict):
        raise InputFileError(f"{where} must be a table ([[ignore]])")
    unknown = [k for k in raw if k not in _KEYS]
    if unknown:
        # a misspelt `expire` would make an entry that never expires
        raise InputFileError(
            f"{where} has an unknown key {unknown[0]!r} (known: {', '.join(_KEYS)})"
        )
    missing = [k for k in ("fix", "bundle", "reason") if k not in raw]
    if missing:
        raise InputFileError(f"{where} lacks {', '.join(missing)}")
    fix = raw["fix"]
    # a fix is its id ("40", "#40") or the PR number itself (40); a bool is neither
    if isinstance(fix, bool) or not isinstance(fix, str | int) or not str(fix).lstrip("#"):
        raise InputFileError(f'{where}: fix must be a fix id (e.g. "40"), not {fix!r}')
    for key in ("bundle", "reason"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise InputFileError(f"{where}: {key} must be a non-empty string, not {raw[key]!r}")
    if not raw["bundle"].isprintable() or not str(fix).isprintable():
        # both are printed in warnings, one line each
        raise InputFileError(f"{where}: fix and bundle must be printable text on one line")
    return Ignore(
        str(fix).lstrip("#"), raw["bundle"], raw["reason"], _expires(raw.get("expires"), where)
    )


def _expires(value: object, where: str) -> dt.date | None:
    """A TOML date or a YYYY-MM-DD string; a date-time is refused (an expiry is a day)."""
    if value is None or (isinstance(value, dt.date) and not isinstance(value, dt.datetime)):
        return value
    if isinstance(value, str):
        try:
            return dt.date.fromisoformat(value)
        except ValueError:
            pass
    # TOML date-times and times are shown as written, not as Python reprs
    shown = value.isoformat() if isinstance(value, dt.date | dt.time) else repr(value)
    raise InputFileError(f"{where}: expires must be a date (YYYY-MM-DD), not {shown}")


def in_force(ignores: list[Ignore], today: dt.date | None = None) -> tuple[list[Ignore], list[str]]:
    today = today or dt.date.today()
    active, warnings = [], []
    for entry in ignores:
        if entry.expires is not None and entry.expires < today:
            warnings.append(
                f"ignore entry for fix #{entry.fix} / {entry.bundle} expired on "
                f"{entry.expires.isoformat()}; it no longer applies"
            )
        else:
            active.append(entry)
    return active, warnings


def matching(ignores: list[Ignore], fix_ids: set[str], bundle: str) -> Ignore | None:
    return next((i for i in ignores if i.bundle == bundle and i.fix in fix_ids), None)


def unmatched(ignores: list[Ignore], seen: set[tuple[str, str]]) -> list[str]:
    """Warnings for entries whose (fix, bundle) this run never met."""
    return [
        f"ignore entry for fix #{i.fix} / {i.bundle} matches nothing in this run"
        for i in ignores
        if (i.fix, i.bundle) not in seen
    ]
