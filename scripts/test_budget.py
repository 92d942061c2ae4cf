"""Where a run's time went, from the JUnit XML pytest wrote for each tier: each tier's wall time
and the time summed over its tests, the groups that took the most (a group runs in one process
under `--dist loadgroup`), and the slowest tests of all tiers.

Each test's time there is setup + call + teardown, so a session fixture (the answer matrix, an
environment build) is charged to the first test that asks for it: the table says where the
minutes go, not which assertion is slow. A tier's wall time is pytest's own (the testsuite's
`time`: collection included, the venv and lint not). With two processes the summed time is about
twice the wall time when the processes were kept busy; a group much larger than half the sum is
a tail one process runs alone. `starts`: the worker processes a group's tests started in the test
process (the `worker_starts` property tests/conftest.py records; each imports torch and a
converter, about 7 CPU-s), where the suite still pays for cold workers. Standard library only:
it runs before any install.

    scripts/test-budget JUNIT.xml [JUNIT.xml ...] [N]     (N: how many tests, default 25)
"""

from __future__ import annotations

import signal
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

SLOWEST = 25  # tests listed by default
GROUPS = 10  # groups listed


@dataclass(frozen=True)
class Case:
    tier: str  # the report's file name without .xml: `fast`, `slow`
    name: str  # module::test
    group: str  # its xdist group (the name's `@group` suffix), else its module
    seconds: float
    starts: int = 0  # worker start-ups (the `worker_starts` property), 0 where none is recorded


@dataclass(frozen=True)
class Tier:
    name: str
    wall: float  # pytest's session time, from the testsuite element
    cases: list[Case]

    @property
    def summed(self) -> float:
        return sum(c.seconds for c in self.cases)


def read(path: Path) -> Tier:
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    cases = []
    for suite in suites:
        for c in suite.iter("testcase"):
            test = c.get("name", "")
            module = c.get("classname", "")
            group = test.rsplit("@", 1)[1] if "@" in test else module
            starts = sum(
                int(p.get("value", 0))
                for p in c.iter("property")
                if p.get("name") == "worker_starts"
            )
            seconds = float(c.get("time", 0))
            cases.append(Case(path.stem, f"{module}::{test}", group, seconds, starts))
    return Tier(path.stem, sum(float(s.get("time", 0)) for s in suites), cases)


def minutes(seconds: float) -> str:
    m, s = divmod(round(seconds), 60)
    return f"{m} min {s:02d} s" if m else f"{s} s"


def report(tiers: list[Tier], n: int = SLOWEST) -> list[str]:
    w = max([4, *(len(t.name) for t in tiers)])  # the tier column's width
    out = [f"{'tier':<{w}} {'tests':>6} {'wall':>12} {'summed':>12} {'busy':>5}"]
    wall = sum(t.wall for t in tiers)
    summed = sum(t.summed for t in tiers)
    cases = sorted((c for t in tiers for c in t.cases), key=lambda c: c.seconds, reverse=True)
    for name, count, wall_s, s in [
        *((t.name, len(t.cases), t.wall, t.summed) for t in tiers),
        ("all", len(cases), wall, summed),
    ]:
        # busy: how many processes the tests kept busy on average (summed over wall)
        busy = f"{s / wall_s:5.2f}" if wall_s else f"{'-':>5}"
        out.append(f"{name:<{w}} {count:>6} {minutes(wall_s):>12} {minutes(s):>12} {busy}")
    total = summed or 1.0
    groups: dict[tuple[str, str], float] = {}
    counts: Counter[tuple[str, str]] = Counter()
    starts: Counter[tuple[str, str]] = Counter()
    for c in cases:
        groups[(c.tier, c.group)] = groups.get((c.tier, c.group), 0.0) + c.seconds
        counts[(c.tier, c.group)] += 1
        starts[(c.tier, c.group)] += c.starts
    out += ["", f"the {min(GROUPS, len(groups))} largest groups (each runs in one process):"]
    out.append(f"{'s':>7}  {'share':>6}  {'tests':>5}  {'starts':>6}  {'tier':<{w}}  group")
    largest = sorted(groups.items(), key=lambda kv: kv[1], reverse=True)[:GROUPS]
    for (tier, group), seconds in largest:
        tests, started = counts[(tier, group)], starts[(tier, group)]
        out.append(
            f"{seconds:7.1f}  {seconds / total:6.1%}  {tests:>5}  {started:>6}  "
            f"{tier:<{w}}  {group}"
        )
    out.append(f"worker start-ups in the test processes: {sum(c.starts for c in cases)}")
    out += ["", f"the {min(n, len(cases))} slowest tests:"]
    out.append(f"{'s':>7}  {'share':>6}  {'cum.':>6}  {'tier':<{w}}  test")
    cumulative = 0.0
    for c in cases[:n]:
        cumulative += c.seconds
        out.append(
            f"{c.seconds:7.1f}  {c.seconds / total:6.1%}  {cumulative / total:6.1%}  "
            f"{c.tier:<{w}}  {c.name}"
        )
    return out


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the listing quietly
    n = SLOWEST
    if argv and argv[-1].isdigit():
        n = int(argv[-1])
        argv = argv[:-1]
    missing = [a for a in argv if not Path(a).is_file()]
    if not argv or missing:
        why = f"no such file: {missing[0]}; " if missing else ""
        print(f"{why}usage: scripts/test-budget JUNIT.xml [JUNIT.xml ...] [N]", file=sys.stderr)
        return 2
    tiers = []
    for a in argv:
        try:
            tiers.append(read(Path(a)))
        except ET.ParseError as exc:
            print(f"{a}: not a JUnit XML report ({exc})", file=sys.stderr)
            return 2
    print("\n".join(report(tiers, n)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
