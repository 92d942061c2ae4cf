"""The slowest tests of one run and their share of its time, from pytest's JUnit XML.

Each test's time there is setup + call + teardown, so a session fixture (the answer matrix, an
environment build) is charged to the first test that asks for it: the table says where the
minutes go, not which assertion is slow. Standard library only: it runs before any install.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path


def rows(path: Path) -> list[tuple[float, str]]:
    cases = ET.parse(path).getroot().iter("testcase")
    return sorted(
        ((float(c.get("time", 0)), f"{c.get('classname')}::{c.get('name')}") for c in cases),
        reverse=True,
    )


def main(argv: list[str]) -> int:
    if not argv or len(argv) > 2 or not Path(argv[0]).is_file():
        print("usage: scripts/test-budget JUNIT.xml [N]", file=sys.stderr)
        return 2
    n = int(argv[1]) if len(argv) == 2 else 20
    timed = rows(Path(argv[0]))
    total = sum(t for t, _ in timed)
    print(
        f"{len(timed)} tests, {total:.0f} s in tests ({total / 60:.1f} min); "
        f"the {min(n, len(timed))} slowest:"
    )
    print(f"{'s':>7}  {'share':>6}  {'cum.':>6}  test")
    cumulative = 0.0
    for t, name in timed[:n]:
        cumulative += t
        print(f"{t:7.1f}  {t / total:6.1%}  {cumulative / total:6.1%}  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
