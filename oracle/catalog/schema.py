"""The data files' schema: typed reads of TOML tables that fail in one line.

Every loader of a data file (registry, fixes, regimes, conditions, policy, converters, ignore)
reads its values through `Fields`, so a typo is never an answer: a value of the wrong type, an
unknown construct kind or dtype, a release the catalog does not know, an unknown key or a
duplicate id is one line naming the file, the key path and what was expected,

    recipes.toml: [bundles.x] instance 1 kind must be a construct kind (arange, ...), not 'bn'

and the command exits 2 before anything runs. The vocabularies (dtypes, pipelines, values) are
declared here once; the construct kinds and releases come from their own sources of truth.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from oracle.errors import OracleUserError

# The dtypes a probe (and so a bundle, an instance, a regime) is built in; the policy has a
# tolerance for each. Equal to oracle.constructs._graph.PROBE_DTYPES
# (tests/reliability/test_reliability_typos.py).
PROBE_DTYPES = ("float32", "float16", "bfloat16")
DECOMPOSITIONS = ("coreai", "default", "none")
SHAPES = ("static", "dynamic")
VALUES = ("init", "trained", "adversarial")
# A longer value is shown cut: an error line stays one readable line.
_SHOWN = 60


class DataFileError(OracleUserError):
    """A project data file (conditions, policy) is malformed: one line naming the file, the key
    path and what was expected."""


def shown(value: Any) -> str:
    """A value as the user wrote it, cut to one short line."""
    text = value.isoformat() if isinstance(value, dt.date | dt.time) else repr(value)
    return text if len(text) <= _SHOWN else text[: _SHOWN - 3] + "..."


def construct_kinds() -> tuple[str, ...]:
    from oracle.constructs import kinds  # the package listing; imports no torch

    return tuple(kinds())


def _listed(choices: Iterable[str]) -> str:
    items = list(choices)
    return ", ".join(items[:8]) + (", ..." if len(items) > 8 else "")


@dataclass(frozen=True)
class Fields:
    """Typed reads of one file's tables; each failure is `error` with the file and key path."""

    path: Path
    error: type[Exception]

    def fail(self, where: str, key: str, what: str, value: Any) -> NoReturn:
        place = f"{where} {key}" if where else key
        raise self.error(f"{self.path}: {place} must be {what}, not {shown(value)}")

    def problem(self, message: str) -> NoReturn:
        raise self.error(f"{self.path}: {message}")

    def need(self, table: dict[str, Any], key: str, where: str) -> Any:
        if key not in table:
            self.problem(f"{where} lacks '{key}'" if where else f"lacks '{key}'")
        return table[key]

    def keys(self, table: dict[str, Any], allowed: Iterable[str], where: str) -> None:
        """Refuse a key the file kind does not have: a misspelt key is otherwise ignored and its
        default answers silently."""
        known = tuple(allowed)
        for key in table:
            if key not in known:
                self.problem(f"{where} has an unknown key {key!r} (known: {', '.join(known)})")

    def table(
        self, table: dict[str, Any], key: str, where: str, required: bool = False
    ) -> dict[str, Any]:
        value = self.need(table, key, where) if required else table.get(key, {})
        if not isinstance(value, dict):
            self.fail(where, key, "a table", value)
        return value

    def tables(self, data: dict[str, Any], key: str) -> list[tuple[str, dict[str, Any]]]:
        """`[[key]]` entries as (`key N`, table), numbered from 1."""
        entries = data.get(key, [])
        if not isinstance(entries, list):
            self.problem(f"'{key}' must be an array of tables ([[{key}]])")
        out = []
        for i, raw in enumerate(entries, start=1):
            if not isinstance(raw, dict):
                self.problem(f"{key} {i} must be a table ([[{key}]])")
            out.append((f"{key} {i}", raw))
        return out

    def text(self, table: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
        """A string; a required one (no default) must not be blank either."""
        value = self.need(table, key, where) if default is None else table.get(key, default)
        if not isinstance(value, str) or (default is None and not value.strip()):
            self.fail(where, key, "a non-empty string" if default is None else "a string", value)
        return value

    def line(self, table: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
        """A string printed in answers and error lines: printable, on one line."""
        value = self.text(table, key, where, default)
        if not value.isprintable():
            self.fail(where, key, "printable text on one line", value)
        return value

    def ident(self, table: dict[str, Any], key: str, where: str) -> str:
        """An id (a PR number or a short name): a string or a whole number, no blank, no space."""
        value = self.need(table, key, where)
        text = str(value) if isinstance(value, int) and not isinstance(value, bool) else value
        if (
            not isinstance(text, str)
            or not text
            or text != text.strip()
            or any(c.isspace() or not c.isprintable() for c in text)
        ):
            self.fail(where, key, "an id (a string or a whole number, no spaces)", value)
        return text

    def strings(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        required: bool = False,
        blank: bool = False,
    ) -> tuple[str, ...]:
        """A list of strings (non-blank unless `blank`); a required one must not be empty."""
        value = self.need(table, key, where) if required else table.get(key, [])
        if (
            not isinstance(value, list)
            or (required and not value)
            or not all(isinstance(v, str) and (blank or v.strip()) for v in value)
        ):
            what = "a non-empty list of strings" if required else "a list of strings"
            self.fail(where, key, what, value)
        return tuple(value)

    def version(self, table: dict[str, Any], key: str, where: str) -> str:
        """A PEP 440 version ("2.13.0", "1.0.0b3"): it becomes a folder name and an installer's
        `==` pin, so a path ("../../x") or an option never gets that far."""
        from oracle.catalog.requirements import is_version

        value = self.text(table, key, where)
        if not is_version(value):
            self.fail(where, key, 'a PEP 440 version (e.g. "1.0.0b3")', value)
        return value

    def boolean(self, table: dict[str, Any], key: str, where: str, default: bool) -> bool:
        value = table.get(key, default)
        if not isinstance(value, bool):
            self.fail(where, key, "true or false", value)
        return value

    def integer(
        self, table: dict[str, Any], key: str, where: str, default: int | None, low: int, high: int
    ) -> int:
        value = self.need(table, key, where) if default is None else table.get(key, default)
        # bool is an int to Python, never a number to a reader
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.fail(where, key, f"a whole number from {low} to {high}", value)
        return value

    def number(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        default: float | None,
        positive: bool = False,
    ) -> float:
        """A finite number (an int is one too); `positive`: above 0."""
        value = self.need(table, key, where) if default is None else table.get(key, default)
        ok = (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and math.isfinite(value)
            and (not positive or value > 0)
        )
        if not ok:
            self.fail(
                where, key, "a finite number above 0" if positive else "a finite number", value
            )
        return float(value)

    def choice(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        choices: Iterable[str],
        default: str | None = None,
        what: str = "",
    ) -> str:
        known = tuple(choices)
        value = self.need(table, key, where) if default is None else table.get(key, default)
        if not isinstance(value, str) or value not in known:
            self.fail(
                where,
                key,
                f"{what or 'one of'} ({_listed(known)})" if what else f"one of {_listed(known)}",
                value,
            )
        return value

    def choices(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        choices: Iterable[str],
        what: str,
        required: bool = False,
    ) -> tuple[str, ...]:
        values = self.strings(table, key, where, required=required)
        known = tuple(choices)
        for value in values:
            if value not in known:
                self.fail(where, key, f"a list of {what} ({_listed(known)})", value)
        return values

    def aten_overloads(self, table: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
        """A list of aten overload names as torch prints them ("aten.reflection_pad1d.default"):
        a misspelt one would silently keep nothing out of a decomposition table."""
        values = self.strings(table, key, where)
        for value in values:
            parts = value.split(".")
            if (
                len(parts) != 3
                or parts[0] != "aten"
                or not all(p.replace("_", "").isalnum() for p in parts[1:])
            ):
                self.fail(where, key, "a list of aten overloads (aten.NAME.OVERLOAD)", value)
        return values

    def kind(self, table: dict[str, Any], key: str, where: str) -> str:
        return self.choice(table, key, where, construct_kinds(), what="a construct kind")

    def dtype(self, table: dict[str, Any], key: str, where: str, default: str | None = None) -> str:
        return self.choice(table, key, where, PROBE_DTYPES, default, what="a probe dtype")

    def release(
        self,
        table: dict[str, Any],
        key: str,
        where: str,
        releases: Iterable[str],
        default: str | None = None,
        also: tuple[str, ...] = (),
    ) -> str:
        """A coreai-torch release of the catalog (written exactly: "0.4.2", not "v0.4.2")."""
        return self.choice(
            table,
            key,
            where,
            (*_sorted_releases(releases), *also),
            default,
            what="a release in converters.toml",
        )


def _sorted_releases(releases: Iterable[str]) -> list[str]:
    def key(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.split(".") if p.isdigit())

    return sorted(releases, key=key)


def unique(fields: Fields, ids: Iterable[tuple[str, str]], what: str) -> None:
    """Refuse a duplicate id: the second record would shadow or double the first."""
    seen: dict[str, str] = {}
    for where, value in ids:
        if value in seen:
            fields.problem(f"{where}: {what} {value!r} is already used by {seen[value]}")
        seen[value] = where
