"""The reliability page stays true to the tests: every row of its table (docs/reliability.md)
names tests that exist, and every reliability test has its row."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _reliability_rows() -> list[list[str]]:
    text = (ROOT / "docs" / "reliability.md").read_text()
    section = text[text.index("## Inputs and faults") :]
    section = section[: section.index("\n## ", 1)] if "\n## " in section[1:] else section
    rows = [ln for ln in section.splitlines() if ln.startswith("| ") and not ln.startswith("|--")]
    return [[c.strip() for c in row.strip("|").split(" | ")] for row in rows[1:]]  # no header


def test_every_reliability_row_names_tests_that_exist():
    rows = _reliability_rows()
    assert len(rows) >= 13
    for fault, _outcome, tests in rows:
        named = re.findall(r"`(test_\w+\.py)`: ([^;]+)", tests)
        assert named, f"row {fault!r} names no test"
        for file, functions in named:
            found = sorted((ROOT / "tests").rglob(file))
            assert len(found) == 1, f"row {fault!r}: {file} is {len(found)} files under tests/"
            source = found[0].read_text()
            for function in re.findall(r"`(test_\w+)`", functions):
                assert re.search(rf"^def {function}\(", source, re.M), (
                    f"row {fault!r}: {found[0].relative_to(ROOT)} has no {function}"
                )


def test_every_reliability_test_has_its_row():
    """The other direction: the table is the list of what the reliability tests cover, so a
    test added to a tests/reliability/test_reliability*.py file without its row fails here."""
    named = {
        t
        for _fault, _outcome, tests in _reliability_rows()
        for t in re.findall(r"`(test_\w+)`", tests)
    }
    for path in sorted((ROOT / "tests" / "reliability").glob("test_reliability*.py")):
        for function in re.findall(r"^def (test_\w+)\(", path.read_text(), re.M):
            assert function in named, (
                f"{path.relative_to(ROOT)}: {function} has no row in docs/reliability.md"
            )
