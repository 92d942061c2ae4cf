"""scripts/test-budget: each tier's wall and summed time, the largest groups and the slowest
tests, read from the JUnit XML pytest writes (`--junitxml`, as .ci/run has each tier write it)."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "test-budget"


def _report(
    path: Path,
    wall: float,
    cases: list[tuple[str, str, float]],
    starts: dict[str, int] | None = None,
) -> Path:
    """A report as pytest-xdist's run writes it: one testsuite (the session's wall time) inside
    testsuites, each test named with its `@group`, and `starts`: a test's `worker_starts`
    property (tests/conftest.py records it) by name."""
    started = starts or {}
    rows = "".join(
        f'<testcase classname="{module}" name="{name}" time="{seconds}">'
        + (
            f'<properties><property name="worker_starts" value="{started[name]}" /></properties>'
            if name in started
            else ""
        )
        + "</testcase>"
        for module, name, seconds in cases
    )
    path.write_text(
        '<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">'
        f'<testsuite name="pytest" tests="{len(cases)}" time="{wall}">{rows}</testsuite>'
        "</testsuites>"
    )
    return path


def _budget(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True)


def test_each_tier_gets_its_wall_and_summed_time_and_the_slowest_of_all_tiers_are_listed(
    tmp_path,
):
    fast = _report(
        tmp_path / "fast.xml",
        50.0,
        [("tests.a", "test_quick@tests/a.py", 30.0), ("tests.a", "test_quicker@tests/a.py", 40.0)],
    )
    slow = _report(
        tmp_path / "slow.xml",
        1000.0,
        [
            ("tests.m", "test_first_reader@matrix", 900.0),
            ("tests.n", "test_second_reader@matrix", 300.0),
            ("tests.v", "test_verify@tests/v.py", 700.0),
        ],
        {
            "test_first_reader@matrix": 9,
            "test_second_reader@matrix": 2,
            "test_verify@tests/v.py": 4,
        },
    )
    ran = _budget(str(fast), str(slow), "2")
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    rows = {ln.split()[0]: ln.split()[1:] for ln in lines[1:4]}
    # tests, wall, summed, busy (summed over wall)
    assert rows["fast"] == ["2", "50", "s", "1", "min", "10", "s", "1.40"]
    assert rows["slow"] == ["3", "16", "min", "40", "s", "31", "min", "40", "s", "1.90"]
    assert rows["all"] == ["5", "17", "min", "30", "s", "32", "min", "50", "s", "1.88"]
    # a group's tests summed: the matrix's two readers are one process's 1,200 s and 11 starts
    groups = lines[lines.index("the 3 largest groups (each runs in one process):") + 2 :]
    assert groups[0].split() == ["1200.0", "60.9%", "2", "11", "slow", "matrix"]
    assert groups[1].split()[-2:] == ["slow", "tests/v.py"] and groups[1].split()[3] == "4"
    assert groups[2].split()[3] == "0"  # the fast tests recorded none
    assert "worker start-ups in the test processes: 15" in lines
    # N = 2: the two slowest over both tiers, slowest first, with their cumulative share
    slowest = lines[lines.index("the 2 slowest tests:") + 2 :]
    assert [ln.split()[-1] for ln in slowest] == [
        "tests.m::test_first_reader@matrix",
        "tests.v::test_verify@tests/v.py",
    ]
    assert slowest[1].split()[2] == "81.2%"


def test_twenty_five_tests_are_listed_unless_told(tmp_path):
    cases = [("tests.t", f"test_{i}@tests/t.py", float(i)) for i in range(30)]
    ran = _budget(str(_report(tmp_path / "slow.xml", 100.0, cases)))
    assert ran.returncode == 0, ran.stderr
    listed = ran.stdout.split("the 25 slowest tests:\n", 1)[1].splitlines()[1:]
    assert [ln.split()[-1] for ln in listed] == [
        f"tests.t::test_{i}@tests/t.py" for i in range(29, 4, -1)
    ]


def test_a_missing_or_unreadable_report_is_one_line_and_exit_2(tmp_path):
    broken = tmp_path / "slow.xml"
    broken.write_text("<testsuites><testsuite")
    for args, says in (
        ([str(tmp_path / "none.xml")], "no such file"),
        ([str(broken)], "not a JUnit XML report"),
        ([], "usage: scripts/test-budget"),
    ):
        ran = _budget(*args)
        assert ran.returncode == 2, (args, ran.stdout)
        assert ran.stdout == ""
        assert len(ran.stderr.strip().splitlines()) == 1 and says in ran.stderr, ran.stderr
