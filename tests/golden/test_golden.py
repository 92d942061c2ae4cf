"""The headline answers, pinned: a fresh CLI run must give what `tests/golden/` holds.

Which fields are kept, and why the measured floats are left out, is said in
`tests/golden/answers.py` (the one extraction both this test and `scripts/golden --update` use) and
in `tests/golden/README.md`. A run that measures otherwise fails here, naming the field, e.g.
`affected/54/sortformer/probes[0]/verdict: expected values-move, got same-program`.
"""

from __future__ import annotations

import answers
import pytest

ENTRIES = {e.key: e for e in answers.entries()}
KEYS = list(ENTRIES) + [k for k in answers.stored_keys() if k not in ENTRIES]


@pytest.mark.parametrize("key", KEYS)
def test_a_fresh_run_gives_the_golden_answer(key, matrix, json_schema):
    """Each entry's run comes from the session's matrix (computed once, through the CLI)."""
    if key not in ENTRIES:
        pytest.fail(answers.orphan(key), pytrace=False)
    entry = ENTRIES[key]
    problems = answers.check(entry)
    if entry.file.exists():
        # the raw document of the same run must also keep its published shape
        json_schema(answers.run_entry(entry).data)
    if problems:
        pytest.fail("\n".join([*problems, answers.UPDATE_HINT]), pytrace=False)


def test_every_fix_record_and_release_pair_has_an_entry():
    """The entries come from the sources, never from a list written here."""
    keys = set(ENTRIES)
    assert {f"affected/{f}" for f in answers.fix_ids()} <= keys
    rel = answers.releases()
    assert {f"release-notes/{a}-{b}" for a, b in zip(rel, rel[1:], strict=False)} <= keys
    assert {"plan/0.4.2", "plan/0.4.3"} <= keys


def test_the_diff_names_the_field_that_moved():
    snapshot = {
        "bundles": {"sortformer": {"probes": [{"verdict": "values-move"}], "reexport": "optional"}},
        "fixes": {"40": {"probes": {"conv_transpose/1d-op1-p0": {"shipped": "differs"}}}},
    }
    got = {
        "bundles": {
            "sortformer": {"probes": [{"verdict": "same-program"}, {}], "reexport": "optional"},
            "extra": {},
        },
        "fixes": {"40": {"probes": {}}},
    }
    assert answers.diff(snapshot, got, "affected/54") == [
        "affected/54/bundles/sortformer/probes[0]/verdict: expected values-move, got same-program",
        "affected/54/bundles/sortformer/probes[1]: not in the snapshot, got {}",
        "affected/54/bundles/extra: not in the snapshot, got {}",
        'affected/54/fixes/40/probes[conv_transpose/1d-op1-p0]: expected {"shipped": "differs"},'
        " missing",
    ]
    assert answers.diff(snapshot, snapshot, "affected/54") == []


def test_a_missing_entry_says_to_update_the_snapshot(tmp_path, monkeypatch):
    monkeypatch.setattr(answers, "GOLDEN", tmp_path)
    entry = answers.Entry("affected/28", ("affected", "--fix", "28"))
    (line,) = answers.check(entry)  # no file: nothing is run
    assert line.startswith("affected/28: no golden entry") and "scripts/golden --update" in line
