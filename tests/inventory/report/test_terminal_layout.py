"""The terminal answer reaches a reader: the summary first, one row per bundle worst first, the
bundle and level columns never split, the width of a pipe taken from COLUMNS, and every caveat
the markdown and JSON hold printed too."""

from __future__ import annotations

import json
import re

import pytest
from cli import invoke, spawn
from pages import WIDE, flat
from rich.console import Console
from rich.text import Text

from inventory.registry import load_registry
from inventory.report.table_fit import Cell, Column, fitted_table, names

LEVELS = ("required", "inconclusive", "unchecked", "optional", "no")


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
        for level in ("required", "inconclusive", "unchecked", "optional"):
            for item in b[level]:
                assert " ".join(item["reason"].split()) in flat, (b["bundle"], item["fix"])
    assert "running_var" in flat


@pytest.mark.parametrize("fix", ["54", "56"])
def test_affected_at_80_columns_splits_no_word_and_says_which_columns_it_leaves_out(fix, matrix):
    """#54: every column fits; #56: sam3's traced view has a 49-character parameter, so the
    instances column leaves no room for all five and the least important are left out."""
    narrow = invoke("affected", "--fix", fix, "-q", COLUMNS="80").stdout
    wide = invoke("affected", "--fix", fix, "-q", COLUMNS=WIDE).stdout
    data = matrix.run_cli(("affected", "--fix", fix)).data["result"]
    evidence = {p["evidence"] for b in data["bundles"] for p in b["probes"]}
    for line in narrow.splitlines():
        if line.startswith("  evidence"):  # a path is kept whole, past the width if need be
            assert line.split(": ", 1)[1] in evidence, line
        else:
            assert len(line) <= 80, line
    # each bundle and its level whole, on its row
    cells = {tuple(c.strip() for c in row.split("│")[1:3]) for row in _table_rows(narrow)}
    for b in data["bundles"]:
        assert (b["bundle"], b["reexport"]) in cells, (b["bundle"], cells)
        # the reason whole, as the JSON gives it
        assert flat(b["reason"]) in flat(narrow), b["bundle"]
    # no word split: every word at 80 columns is a word of the wide rendering, but for the
    # one note that says which columns were left out
    note = re.search(r"\(left out at 80 columns: ([^;]*);", flat(narrow))
    header = " ".join(line for line in narrow.splitlines() if line.startswith("┃"))
    if note:
        for name in note[1].split(", "):
            assert name.split()[0] not in header, name  # left out, and said so
        words = set(flat(narrow)[note.start() : flat(narrow).index(")", note.end()) + 1].split())
    else:
        words = set()
    split = [
        w
        for w in narrow.split()
        if w not in set(wide.split()) | words and not all("\u2500" <= c <= "\u257f" for c in w)
    ]  # rules are as wide as the table
    assert split == [], split[:10]
    if fix == "56":
        assert note, narrow[:2000]
    assert "bundle" in header and "re-export" in header


def test_piped_progress_is_a_line_when_a_phase_starts_and_one_with_its_counts_at_its_end():
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
        "parakeet: starting",
        "parakeet: 3 steps; 4 probes: 3 stored, 1 converted",
        "sweep 0.4.1->0.4.2: starting, 47 steps",
        "sweep 0.4.1->0.4.2: 2 steps; 1 probe: 1 stored, 0 converted",
    ]


def test_a_piped_release_notes_says_when_each_phase_starts_and_keeps_stdout_the_document(matrix):
    """Piped (a CI log), a phase that runs for minutes printed its one line only at its end: the
    notes said nothing on stderr for 11 minutes. Each phase now says when it starts, on stderr
    and in order, and stdout is the same document as without progress."""
    args = ("release-notes", "--from", "0.4.1", "--to", "0.4.2")
    matrix.run_cli(args)  # stored: this run reads it
    quiet = spawn(*args, "-q", COLUMNS=WIDE)
    piped = spawn(*args, COLUMNS=WIDE)  # its stderr is a pipe: progress as lines
    assert piped.returncode == quiet.returncode == 0, piped.stderr
    assert piped.stdout == quiet.stdout
    assert "starting" not in quiet.stderr
    lines = piped.stderr.splitlines()
    starts = [(n, m[1]) for n, line in enumerate(lines) if (m := _STARTS.fullmatch(line))]
    ends = [(n, m[1]) for n, line in enumerate(lines) if (m := _ENDS.fullmatch(line))]
    data = json.loads(spawn(*args, "--json", COLUMNS=WIDE).stdout)  # progress on stderr only
    concerned = {b for f in data["result"]["fixes"] for b in f["bundles"]}
    # the registry sweep of the step, the records' probes, then each concerned bundle's own
    # answers (in registry order): each phase started, then ended, one after the other
    assert [phase for _, phase in starts] == [
        "sweep 0.4.1->0.4.2",
        "records 0.4.1->0.4.2",
        *(b.name for b in load_registry() if b.name in concerned),
    ]
    assert [phase for _, phase in ends] == [phase for _, phase in starts]
    order = [n for pair in zip(starts, ends, strict=True) for n, _ in pair]
    assert order == sorted(order), lines


_STARTS = re.compile(r"(.+): starting(?:, \d+ steps)?")
_ENDS = re.compile(r"(.+): \d+ steps?(?:; \d+ probes?: \d+ stored, \d+ converted)?")
