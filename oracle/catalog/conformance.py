"""The converter's own tests as data (`conformance.toml`): per fix record, the upstream test cases
its pull request adds or changes, and the library's regimes that hold each.

Read by `scripts/conformance` (which converts them) and by
`tests/oracle/catalog/test_conformance.py` (which holds the mapping: every record with an upstream
PR is listed, every case has a regime or says why not). Plain data; nothing here converts anything.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

from oracle.catalog.schema import Fields
from oracle.errors import OracleUserError
from oracle.infra.tomlfile import read_toml

CONFORMANCE_FILE = Path(__file__).with_name("conformance.toml")
# what an upstream case checks: the asset's numerics against torch, substrings of its program, or
# the location every op of the emitted program carries (the debug-location tests of record #28)
CHECKS = ("numerical", "ir", "locations")
# the table an upstream test exports with: torch's default (the test helper's) or coreai-torch's
TABLES = ("default", "coreai")
# the program an IR test reads: after optimize() (the test helpers' get_ir) or as to_coreai()
# returns it (a test that prints the converter's program itself)
PROGRAMS = ("shipped", "emitted")


class ConformanceError(OracleUserError):
    """The conformance file is malformed; one line naming the file and the key."""


@dataclass(frozen=True)
class Case:
    test: str
    params: str
    count: int
    regimes: tuple[str, ...]
    keep: tuple[str, ...]
    checks: str
    table: str = "default"
    ir_has: tuple[str, ...] = ()
    ir_lacks: tuple[str, ...] = ()
    aten_has: tuple[str, ...] = ()
    unmapped: str = ""
    program: str = "shipped"

    @property
    def file(self) -> str:
        return self.test.split("::", 1)[0]

    @property
    def name(self) -> str:
        return self.test.split("::", 1)[1]


@dataclass(frozen=True)
class Unrelated:
    """Test functions the record's commits add or change that do not test the record's change
    (a sync commit carries many): `tests` are patterns (fnmatch, `*` any text) over the record's
    `tests`, `why` says what they test instead."""

    tests: tuple[str, ...]
    why: str


@dataclass(frozen=True)
class Record:
    fix: str
    commits: tuple[str, ...]
    tests: tuple[str, ...]
    cases: tuple[Case, ...]
    pending: str = ""
    unrelated: tuple[Unrelated, ...] = ()

    @property
    def count(self) -> int:
        return sum(c.count for c in self.cases)

    def unrelated_tests(self) -> dict[str, str]:
        """Each listed test that no case holds and an `unrelated` group matches: its reason (the
        first matching group's)."""
        held = {c.test for c in self.cases}
        out: dict[str, str] = {}
        for test in self.tests:
            if test in held:
                continue
            why = next(
                (g.why for g in self.unrelated if any(fnmatchcase(test, p) for p in g.tests)), None
            )
            if why is not None:
                out[test] = why
        return out


_RECORD_KEYS = ("fix", "commits", "tests", "case", "pending", "unrelated")
_UNRELATED_KEYS = ("tests", "why")
_CASE_KEYS = (
    "test",
    "params",
    "count",
    "regimes",
    "keep",
    "checks",
    "ir_has",
    "ir_lacks",
    "aten_has",
    "unmapped",
    "table",
    "program",
)


def _subtables(
    fields: Fields, raw: dict, key: str, where: str, keys: tuple[str, ...]
) -> Iterator[tuple[str, dict]]:
    """A record's `[[record.<key>]]` tables, each checked to be a table with known keys, with
    where it is for error lines."""
    for n, table in enumerate(raw.get(key, []), start=1):
        at = f"{where} {key} {n}"
        if not isinstance(table, dict):
            fields.problem(f"{at} must be a table ([[record.{key}]])")
        fields.keys(table, keys, at)
        yield at, table


def load_records(path: Path = CONFORMANCE_FILE) -> list[Record]:
    data = read_toml(path, ConformanceError)
    fields = Fields(path, ConformanceError)
    fields.keys(data, ("record",), "the file")
    records: list[Record] = []
    for where, raw in fields.tables(data, "record"):
        fields.keys(raw, _RECORD_KEYS, where)
        fix = fields.ident(raw, "fix", where)
        cases = []
        for at, case in _subtables(fields, raw, "case", f"{where} (fix {fix})", _CASE_KEYS):
            cases.append(
                Case(
                    test=fields.line(case, "test", at),
                    params=fields.line(case, "params", at),
                    count=fields.integer(case, "count", at, None, 1, 10_000),
                    regimes=fields.strings(case, "regimes", at),
                    keep=fields.aten_overloads(case, "keep", at),
                    checks=fields.choice(case, "checks", at, CHECKS),
                    table=fields.choice(case, "table", at, TABLES, "default"),
                    ir_has=fields.strings(case, "ir_has", at),
                    ir_lacks=fields.strings(case, "ir_lacks", at),
                    aten_has=fields.aten_overloads(case, "aten_has", at),
                    unmapped=fields.line(case, "unmapped", at, ""),
                    program=fields.choice(case, "program", at, PROGRAMS, "shipped"),
                )
            )
        tests = fields.strings(raw, "tests", where)
        held = {c.test for c in cases}
        groups = []
        for at, group in _subtables(
            fields, raw, "unrelated", f"{where} (fix {fix})", _UNRELATED_KEYS
        ):
            patterns = fields.strings(group, "tests", at, required=True)
            for pattern in patterns:
                # a pattern that matches nothing is a misspelt test name, not a harmless no-op
                if not any(fnmatchcase(t, pattern) for t in tests if t not in held):
                    fields.problem(
                        f"{at}: '{pattern}' matches none of the record's tests that no case holds"
                    )
            groups.append(Unrelated(patterns, fields.line(group, "why", at)))
        records.append(
            Record(
                fix,
                fields.strings(raw, "commits", where),
                tests,
                tuple(cases),
                fields.line(raw, "pending", where, ""),
                tuple(groups),
            )
        )
    return records
