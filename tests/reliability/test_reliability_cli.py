"""Reliability V: the command line's own inputs and outputs (a hostile round's and a new user's).

A format a command has no form in is refused without importing its writer.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli import ROOT, invoke, one_line

from inventory.errors import ExitCode


def refused(tmp_path: Path, *args: str) -> str:
    """The one line of a run refused (exit 2) before anything ran: its store never made."""
    store = tmp_path / "store"
    ran = invoke(*args, INVENTORY_CACHE=str(store), INVENTORY_STORE=str(store))
    assert ran.returncode == ExitCode.USAGE, (ran.returncode, ran.stdout, ran.stderr)
    assert not store.exists(), sorted(store.rglob("*"))
    return one_line(ran)


# ---- a format a command has no form in --------------------------------------------------


@pytest.mark.parametrize(
    "args, fmt",
    [
        (["sweep", "--from", "0.4.1", "--to", "0.4.2"], "html"),
        (["release-notes", "--from", "0.4.1", "--to", "0.4.2"], "cyclonedx"),
        (["verify", "mimi", "--to", "0.4.2"], "cyclonedx"),
        (["scan", "."], "html"),
        (["envs", "list"], "markdown"),
    ],
)
def test_a_format_without_a_form_is_refused_before_any_import_or_store(tmp_path, args, fmt):
    """It was refused after 17-21 s on a loaded machine: deciding whether html had a form
    imported the html writer, and with it the cyclonedx one and its schema validator. In a
    process of its own, so what the refusal imported is seen."""
    store = tmp_path / "store"
    probe = (
        "import sys\n"
        "from inventory.cli import app\n"
        "try:\n"
        "    app(args=sys.argv[1:], prog_name='inventory')\n"
        "except SystemExit as e:\n"
        "    code = e.code\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('cyclonedx', 'jsonschema',"
        " 'jinja2') or m.endswith(('.html_report', '.cyclonedx_report')))\n"
        "print('EXIT', code, 'HEAVY', ','.join(heavy), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, *args, "-f", fmt],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "INVENTORY_CACHE": str(store), "INVENTORY_STORE": str(store)},
    )
    *said, last = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    command = " ".join(args[:2]) if args[0] == "envs" else args[0]
    assert len(said) == 1, proc.stderr
    assert said[0].startswith(
        f"error: --format {fmt}: {command} has no {fmt} form (commands with one: "
    )
    assert last == f"EXIT {ExitCode.USAGE} HEAVY ", last
    assert not store.exists()


def test_each_writer_has_the_forms_the_refusal_states():
    """`FORMS` says which commands a format has a form in without importing the writer: each
    writer's builders are exactly those, and each command with a markdown form renders one."""
    from inventory.output import FORMS, OutputFormat
    from inventory.report import cyclonedx_report, html_report

    assert set(html_report.BUILDERS) == FORMS[OutputFormat.HTML]
    assert set(cyclonedx_report.BUILDERS) == FORMS[OutputFormat.CYCLONEDX]
    with_markdown = {
        f.stem
        for f in (ROOT / "inventory" / "commands").glob("*.py")
        if "markdown" in f.read_text() and "Renderer(" in f.read_text()
    }
    assert {c.replace("-", "_") for c in FORMS[OutputFormat.MARKDOWN]} == with_markdown
