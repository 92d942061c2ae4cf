"""Every format renders the same document: from the session's real answers (the answer matrix's
store), each finding the JSON holds — each (bundle, record, level), each reason with its caveats,
each ignored record with its reason, each change no record explains — appears in the terminal
table and in the markdown too. A format that drops one gives a different answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import invoke

from inventory.report.text import for_release_page

LEVELS = (("required", "required"), ("inconclusive", "inconclusive"),
          ("optional", "optional"), ("not_affected", "no"))
# wide enough that no table cell wraps: a finding is then one run of text in each format
WIDE = "2000"


def _flat(text: str) -> str:
    return " ".join(text.split())


def _label(fix: str) -> str:
    return f"#{fix}" if fix.isdigit() else fix


def _formats(*args: str, details: bool = True) -> tuple[dict, str, str]:
    """The JSON result, the terminal table (plan's --details: every record named) and the
    markdown of one answer, each from the CLI on the same store."""
    ran = invoke(*args, "--json", "-q")
    document = json.loads(ran.stdout)
    table = invoke(*args, *(["--details"] if details else []), "-q", COLUMNS=WIDE).stdout
    markdown = invoke(*args, "-f", "markdown", "-q").stdout
    return document["result"], _flat(table), _flat(markdown)


def _check_plan(result: dict, table: str, markdown: str) -> None:
    for b in result["bundles"]:
        name = b["bundle"]
        # the bundle's level: the row of the table, the summary table of the markdown
        assert f"│ {name} │ {b['reexport']} │" in table, name
        assert f"| {name} | **{b['reexport']}** |" in markdown, name
        for key, level in LEVELS:
            for item in b[key]:
                label = _label(item["fix"])
                if level == "no":
                    # folded to a count by default; named with its verdict under --details
                    assert f"{label} ({item['verdict']})" in table, (name, label)
                    assert f"{for_release_page(label)} ({item['verdict']})" in markdown, (
                        name, label)
                    continue
                reason = _flat(item["reason"])  # its caveats included (#54's running_var)
                assert f"{name} {label} ({level}): {reason}" in table, (name, label)
                assert f"{for_release_page(label)}** ({item['verdict']}): " \
                       f"{_flat(for_release_page(reason))}" in markdown, (name, label)
        for item in b["ignored"]:
            label = _label(item["fix"])
            said = f"{name} {label}: ignored ({item['ignored']['reason']}"
            assert said in table, said
            assert f"{name} {for_release_page(label)}: ignored ({item['ignored']['reason']}" \
                in markdown, said
        for u in b["unexplained"]:
            said = f"{name}: unexplained change in {u['step']}: {u['probe']}: re-export " \
                   f"{u['reexport']}"
            assert said in table, said
            assert _flat(for_release_page(said)) in markdown, said


def test_every_finding_of_a_plan_is_in_every_format(matrix):
    _check_plan(*_formats("plan", "--to", "0.4.3"))


def test_every_unrecorded_change_of_a_draft_plan_is_in_every_format(matrix):
    result, table, markdown = _formats("plan", "--to", "0.4.2", "--fixes",
                                       "tests/golden/drafts/no54.toml")
    assert any(b["unexplained"] for b in result["bundles"])  # the batch-norm change, unrecorded
    _check_plan(result, table, markdown)


def test_an_ignored_finding_and_its_reason_are_in_every_format(matrix, tmp_path: Path):
    ignore = tmp_path / "ignore.toml"
    ignore.write_text('[[ignore]]\nfix = "28"\nbundle = "sam3"\nreason = "repaired in place"\n'
                      'expires = "2999-01-01"\n')
    result, table, markdown = _formats("plan", "--to", "0.4.3", "--ignore", str(ignore))
    (sam3,) = [b for b in result["bundles"] if b["bundle"] == "sam3"]
    assert [i["fix"] for i in sam3["ignored"]] == ["28"]
    _check_plan(result, table, markdown)


@pytest.mark.parametrize("fix", ["28", "54"])
def test_every_bundle_of_an_affected_answer_is_in_every_format(fix, matrix):
    result, table, markdown = _formats("affected", "--fix", fix, details=False)
    for b in result["bundles"]:
        assert f"│ {b['bundle']} │" in table and f"| {b['bundle']} |" in markdown
        assert f"| {b['verdict']} | **{b['reexport']}** | " \
               f"{_flat(for_release_page(b['reason'])).replace('|', chr(92) + '|')} |" \
               in markdown, b["bundle"]
        assert _flat(b["reason"]) in table, b["bundle"]
