"""The terminal answer reaches a reader: the summary first, one row per bundle worst first, the
bundle and level columns never split, the width of a pipe taken from COLUMNS, and every caveat
the markdown and JSON hold printed too."""

from __future__ import annotations

import re

from cli import invoke
from rich.console import Console
from rich.text import Text

from inventory.report.table_fit import Cell, Column, fitted_table, names

LEVELS = ("required", "inconclusive", "optional", "no")


def _render(table, width: int) -> str:
    console = Console(width=width, record=True, file=open("/dev/null", "w"))  # noqa: SIM115
    console.print(table)
    return console.export_text()


def test_a_narrow_table_leaves_out_the_least_important_columns_and_says_so():
    columns = [
        Column("bundle", 0, no_wrap=True),
        Column("level", 0, no_wrap=True),
        Column("why", 0),
        Column("extra", 2),
        Column("more", 1),
    ]
    rows: list[dict[str, Cell]]
    rows = [
        {
            "bundle": "a_long_bundle_name",
            "level": Text("inconclusive"),
            "why": "several words that may wrap",
            "extra": "x" * 30,
            "more": "y" * 20,
        }
    ]
    table = fitted_table(columns, rows)
    assert list(names(table, 200)) == ["bundle", "level", "why", "extra", "more"]
    assert list(names(table, 80)) == ["bundle", "level", "why", "more"]  # extra goes first
    assert list(names(table, 50)) == ["bundle", "level", "why"]
    text = _render(table, 50)
    assert "a_long_bundle_name" in text and "inconclusive" in text  # whole, on one line
    assert "left out at 50 columns: extra, more" in " ".join(text.split())


def _table_rows(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("│")]


def test_plan_at_120_columns_puts_the_summary_first_and_fits_a_screen(matrix):
    ran = invoke("plan", "--to", "0.4.3", "-q", COLUMNS="120")
    assert ran.returncode == 1, ran.stderr
    lines = ran.stdout.splitlines()
    assert all(len(line) <= 120 for line in lines)
    summary = next(n for n, line in enumerate(lines) if " of 5 bundles" in line)
    assert summary < 3, lines[:5]
    counts = {
        level: int(n) for n, level in re.findall(r"(\d+) (\w+)", lines[summary]) if level in LEVELS
    }
    data = matrix.run_cli(("plan", "--to", "0.4.3")).data["result"]
    assert counts == {
        level: sum(1 for b in data["bundles"] if b["reexport"] == level) for level in LEVELS
    }
    top = next(n for n, line in enumerate(lines) if line.startswith("┏"))
    bottom = next(n for n, line in enumerate(lines) if line.startswith("└"))
    assert bottom - top + 1 <= 40
    # one row per bundle, worst level first
    firsts = [row.split("│")[1:3] for row in _table_rows(ran.stdout) if row.split("│")[1].strip()]
    order = [level.strip() for _, level in firsts]
    assert order == sorted(order, key=LEVELS.index)
    assert sorted(b.strip() for b, _ in firsts) == sorted(b["bundle"] for b in data["bundles"])


def test_plan_at_80_columns_splits_no_bundle_or_level_and_prints_every_caveat(matrix):
    ran = invoke("plan", "--to", "0.4.3", "-q", COLUMNS="80")
    assert all(len(line) <= 80 for line in ran.stdout.splitlines())
    data = matrix.run_cli(("plan", "--to", "0.4.3")).data["result"]
    cells = {tuple(c.strip() for c in row.split("│")[1:3]) for row in _table_rows(ran.stdout)}
    for b in data["bundles"]:
        assert (b["bundle"], b["reexport"]) in cells, (b["bundle"], cells)
    # each reason the JSON gives a record at a re-export level, caveat included (#54's
    # running_var), is printed: the terminal answer is the same answer
    flat = " ".join(ran.stdout.split())
    for b in data["bundles"]:
        for level in ("required", "inconclusive", "optional"):
            for item in b[level]:
                assert " ".join(item["reason"].split()) in flat, (b["bundle"], item["fix"])
    assert "running_var" in flat


def test_piped_progress_is_one_line_per_phase_with_its_counts():
    from inventory.terminal import PhaseLines
    from oracle.infra.progress import Routine, Tally

    written: list[str] = []
    lines = PhaseLines(written.append)
    lines.update(Routine("parakeet: fix #23"))
    lines.update(
        Routine(
            "dwconv k9 -> BatchNorm1d 1024 var=tiny params fp16 fp16: locating the "
            "change, 0.4.1 -> 0.4.2"
        )
    )  # a probe's own label: the phase in course
    for _ in range(3):
        lines.tally(Tally.STORED)
    lines.tally(Tally.CONVERTED)
    lines.update(Routine("parakeet: fix #24"))
    lines.update(Routine("sweep 0.4.1->0.4.2 [1/47]: layer_norm/parakeet:layer_norm"))
    lines.update(Routine("sweep 0.4.1->0.4.2 [2/47]: pad/parakeet:pad"))
    lines.tally(Tally.STORED)
    lines.close()
    assert written == [
        "parakeet: 3 steps; 4 probes: 3 stored, 1 converted",
        "sweep 0.4.1->0.4.2: 2 steps; 1 probe: 1 stored, 0 converted",
    ]
