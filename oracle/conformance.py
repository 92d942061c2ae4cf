"""The converter's own tests as data (`conformance.toml`): per fix record, the upstream test cases
its pull request adds or changes, and the library's regimes that hold each.

Read by `scripts/conformance` (which converts them) and by `tests/test_conformance.py` (which
holds the mapping: every record with an upstream PR is listed, every case has a regime or says
why not). Plain data; nothing here converts anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oracle.schema import Fields
from oracle.tomlfile import read_toml

CONFORMANCE_FILE = Path(__file__).with_name("conformance.toml")
CHECKS = ("numerical", "ir")
# the table an upstream test exports with: torch's default (the test helper's) or coreai-torch's
TABLES = ("default", "coreai")


class ConformanceError(Exception):
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

    @property
    def file(self) -> str:
        return self.test.split("::", 1)[0]

    @property
    def name(self) -> str:
        return self.test.split("::", 1)[1]


@dataclass(frozen=True)
class Record:
    fix: str
    commits: tuple[str, ...]
    tests: tuple[str, ...]
    cases: tuple[Case, ...]
    pending: str = ""

    @property
    def count(self) -> int:
        return sum(c.count for c in self.cases)


_RECORD_KEYS = ("fix", "commits", "tests", "case", "pending")
_CASE_KEYS = ("test", "params", "count", "regimes", "keep", "checks", "ir_has", "ir_lacks",
              "aten_has", "unmapped", "table")


def load_records(path: Path = CONFORMANCE_FILE) -> list[Record]:
    data = read_toml(path, ConformanceError)
    fields = Fields(path, ConformanceError)
    fields.keys(data, ("record",), "the file")
    records: list[Record] = []
    for where, raw in fields.tables(data, "record"):
        fields.keys(raw, _RECORD_KEYS, where)
        fix = fields.ident(raw, "fix", where)
        cases = []
        for n, case in enumerate(raw.get("case", []), start=1):
            at = f"{where} (fix {fix}) case {n}"
            if not isinstance(case, dict):
                fields.problem(f"{at} must be a table ([[record.case]])")
            fields.keys(case, _CASE_KEYS, at)
            cases.append(Case(
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
            ))
        records.append(Record(fix, fields.strings(raw, "commits", where),
                              fields.strings(raw, "tests", where), tuple(cases),
                              fields.line(raw, "pending", where, "")))
    return records
