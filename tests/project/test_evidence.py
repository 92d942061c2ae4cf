"""What the repository keeps names no machine and no number of this project's own tracker:
every committed evidence file is free of absolute paths (oracle/infra/portable_paths.py writes
it so), and
no doc, code, data or evidence file cites a tracker issue (upstream pull requests are written
`coreai-torch#N`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from oracle.infra.portable_paths import CHECKOUT, absolute_paths, main, portable

ROOT = Path(__file__).resolve().parents[2]
TRACKER_ISSUE = re.compile(r"[Ii]ssues? #?[0-9]+")


def _committed(*paths: str) -> list[Path]:
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", *paths],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [ROOT / p for p in listed.split("\0") if p and (ROOT / p).is_file()]


def test_no_committed_evidence_file_holds_an_absolute_path():
    files = _committed("evidence")
    assert files
    found = {
        str(f.relative_to(ROOT)): absolute_paths(f.read_text(errors="replace"))[:3] for f in files
    }
    assert not {f: p for f, p in found.items() if p}


def test_no_doc_code_data_or_evidence_file_cites_a_tracker_issue():
    files = _committed(
        "README.md",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "docs",
        "inventory",
        "oracle",
        "scripts",
        "evidence",
        "schemas",
        "tests",
        "recipes.toml",
        "pyproject.toml",
        "mkdocs.yml",
        ".ci",
    )
    cited = {
        str(f.relative_to(ROOT)): TRACKER_ISSUE.findall(f.read_text(errors="replace"))
        for f in files
        if f != Path(__file__)
    }
    assert not {f: c for f, c in cited.items() if c}
    assert not [f for f in files if re.search(r"issue\d", f.name)]


def test_portable_writes_each_root_by_name(monkeypatch, tmp_path):
    store, cache = tmp_path / "store", tmp_path / "cache"
    monkeypatch.setenv("INVENTORY_STORE", str(store))
    monkeypatch.setenv("INVENTORY_CACHE", str(cache))
    doc = {
        "evidence": f"{store}/results/batch_norm-0.4.1-0.4.2-0123456789abcdef0123",
        "log": f"worker died (log: {cache}/logs/w.log)",
        "error": f'at loc("{CHECKOUT}/oracle/constructs/pad.py":12:3)',
        "repo": str(tmp_path / "src" / "coreai-torch"),
        "list": [f"{store}/results/a", 3.5, None],
    }
    out = portable(doc, {tmp_path / "src" / "coreai-torch": "apple/coreai-torch"})
    key = "batch_norm-0.4.1-0.4.2-0123456789abcdef0123"
    assert out == {
        "evidence": f"$INVENTORY_STORE/results/{key}",
        "log": "worker died (log: $INVENTORY_CACHE/logs/w.log)",
        "error": 'at loc("oracle/constructs/pad.py":12:3)',
        "repo": "apple/coreai-torch",
        "list": ["$INVENTORY_STORE/results/a", 3.5, None],
    }
    assert not absolute_paths(str(out))


def test_absolute_paths_finds_paths_and_leaves_urls_ratios_and_relative_paths():
    assert absolute_paths('{"a": "/srv/data/x", "b": "(/home/me/y.log)"}') == [
        "/srv/data/x",
        "/home/me/y.log",
    ]
    assert not absolute_paths(
        "https://github.com/apple/coreai-torch/pull/54 evidence/bisect/x "
        "ray / local 1/2/3 $INVENTORY_CACHE/results/x ~/.cache/inventory/x"
    )


@pytest.mark.parametrize("left", [False, True])
def test_the_script_fails_when_a_path_under_no_known_root_is_left(monkeypatch, capsys, left):
    import io

    text = '{"result": "/srv/elsewhere/x"}' if left else f'{{"r": "{CHECKOUT}/oracle/x.py"}}'
    monkeypatch.setattr("sys.stdin", io.StringIO(text))
    assert main([]) == (1 if left else 0)
    out = capsys.readouterr()
    assert ("/srv/elsewhere" in out.err) == left
    assert left or out.out == '{"r": "oracle/x.py"}'
