"""scripts/typing-census: the string-key reads, `Any` annotations and `dict[str, Any]` in
signatures of each module, counted from the source (not from comments or docstrings)."""

from __future__ import annotations

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "typing-census"


def test_it_counts_reads_annotations_and_signatures_per_module(tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    folder.mkdir()
    (folder / "typed.py").write_text(
        '"""a docstring naming x["key"] and dict[str, Any] counts nothing"""\n'
        "def f(x: int) -> int:\n"
        "    return x\n"
    )
    (folder / "keyed.py").write_text(
        "from typing import Any\n"
        "def f(r: dict[str, Any], s: 'dict[str, Any]') -> dict[str, Any]:\n"
        "    v: Any = r['a']\n"
        "    r['b'] = r.get('c')\n"
        "    return {'d': v, 'e': r[0]}\n"
    )
    result = subprocess.run(
        [str(SCRIPT), str(folder)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines() if line}
    keyed = rows["pkg/keyed.py"]
    # r['a'], r['b'], r.get('c'); the integer index and the dict literal are no key reads
    assert keyed == ["3", "4", "3"]
    assert "pkg/typed.py" not in rows
    assert rows["pkg/"] == ["3", "4", "3"]


def test_a_missing_folder_is_one_line_and_exit_2() -> None:
    result = subprocess.run(
        [str(SCRIPT), "no-such-folder"], capture_output=True, text=True, cwd=ROOT
    )
    assert result.returncode == 2
    assert result.stderr.strip() == "typing-census: no-such-folder is not a folder"
