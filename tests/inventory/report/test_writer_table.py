"""A format is one writer module and one table entry (CONTRIBUTING.md, "Adding an output
format"): a toy format added that way is held whole by mypy (a member of `OutputFormat` without
its branch in `writer_for` fails the type check) and, once added, renders a command's document
through the same `render` every command uses."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from mypy import api as mypy_api
from rich.console import Console

ROOT = Path(__file__).resolve().parents[3]

TOY_WRITER = '''"""A toy format's writer: the command and its record's keys, one line."""

from __future__ import annotations

from typing import Any

from inventory.report.document import Document


def write(document: Document[Any]) -> str:
    return f"toy {document.command}: {', '.join(sorted(document.record()))}"
'''

BRANCH = """        case OutputFormat.TOY:
            from toyformat import toy_report

            return toy_report.write
        case _:
            assert_never(fmt)"""


def _package(tmp_path: Path, branch: bool) -> Path:
    """The format machinery as a package of its own, `toyformat`, with the toy member added to
    `OutputFormat` and, with `branch`, its writer module and its branch in `writer_for`."""
    package = tmp_path / "toyformat"
    package.mkdir()
    (package / "__init__.py").write_text("")
    formats = (ROOT / "inventory" / "report" / "formats.py").read_text()
    member = '    CYCLONEDX = "cyclonedx"'
    assert member in formats
    formats = formats.replace(member, f'{member}\n    TOY = "toy"', 1)
    (package / "formats.py").write_text(formats)
    output = (ROOT / "inventory" / "output.py").read_text()
    assert "inventory.report.formats import" in output
    output = output.replace("inventory.report.formats import", "toyformat.formats import")
    if branch:
        tail = "        case _:\n            assert_never(fmt)"
        assert output.count(tail) == 1
        output = output.replace(tail, BRANCH)
        (package / "toy_report.py").write_text(TOY_WRITER)
    (package / "output.py").write_text(output)
    return package


def _typecheck(package: Path) -> tuple[str, int]:
    # strict, the package alone: what it imports of the project is skipped (Any, so returning
    # it is allowed), and the check is of the switch and its enum, in seconds
    out, err, code = mypy_api.run(
        [
            "--strict",
            "--warn-unreachable",
            "--follow-imports=skip",
            "--ignore-missing-imports",
            "--no-warn-return-any",
            "--no-incremental",
            "--cache-dir=" + str(package.parent / ".mypy_cache"),
            str(package),
        ]
    )
    return out + err, code


def test_a_format_without_its_writer_branch_fails_the_type_check(tmp_path):
    said, code = _typecheck(_package(tmp_path, branch=False))
    assert code == 1, said
    assert 'Argument 1 to "assert_never" has incompatible type' in said, said
    assert "OutputFormat.TOY" in said, said


def test_a_toy_format_is_one_writer_module_and_one_table_entry(tmp_path, monkeypatch, capsys):
    package = _package(tmp_path, branch=True)
    said, code = _typecheck(package)
    assert code == 0, said
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        formats = importlib.import_module("toyformat.formats")
        output = importlib.import_module("toyformat.output")
        from inventory.report.document import Renderer

        toy = formats.OutputFormat("toy")
        renderer: Renderer[dict[str, int]] = Renderer(
            "plan", lambda v: v, lambda v: str(v), forms=frozenset({toy})
        )
        output.render(renderer, {"bundles": 1, "reexport": 2}, toy, Console())
        assert capsys.readouterr().out == "toy plan: bundles, reexport\n"
        # a command that does not state the format refuses it, before the run
        with pytest.raises(Exception, match="plan has no toy form"):
            formats.OutputFormat.choose(chosen="toy", command="plan")
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "toyformat"]:
            del sys.modules[name]
