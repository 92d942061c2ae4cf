"""Every format renders the same document: from the session's real answers (the answer matrix's
store), each finding the JSON holds — each (bundle, record, level), each reason with its caveats,
each ignored record with its reason, each change no record explains — appears in the terminal
table, the markdown, the HTML report and the CycloneDX VEX too. A format that drops one gives a
different answer."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from cli import invoke
from pages import WIDE, Page, flat

from inventory.answer_types import unrecorded_said
from inventory.coverage import Coverage
from inventory.report.text import for_release_page, md_line, md_text

LEVELS = (
    ("required", "required"),
    ("inconclusive", "inconclusive"),
    ("unchecked", "unchecked"),
    ("optional", "optional"),
    ("not_affected", "no"),
)


def _label(fix: str) -> str:
    return f"#{fix}" if fix.isdigit() else fix


@dataclass(frozen=True)
class Answer:
    """One answer in every format, each from the CLI on the same store."""

    result: dict[str, Any]
    table: str
    markdown: str
    html: Page
    vex: dict[tuple[str, str], dict[str, Any]]  # (vulnerability id, bundle) -> its entry
    bom: dict[str, Any]  # the CycloneDX document whole


def _vex(text: str) -> dict[tuple[str, str], dict[str, Any]]:
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for v in json.loads(text).get("vulnerabilities", []):
        [target] = v["affects"]
        out[(v["id"], target["ref"].removeprefix("bundle:"))] = v
    return out


def _formats(*args: str, details: bool = True) -> Answer:
    """The JSON result, the terminal table (plan's --details: every record named), the
    markdown, the HTML and the CycloneDX of one answer, each from the CLI on the same store."""
    ran = invoke(*args, "--json", "-q")
    document = json.loads(ran.stdout)
    table = invoke(*args, *(["--details"] if details else []), "-q", COLUMNS=WIDE).stdout
    markdown = invoke(*args, "-f", "markdown", "-q").stdout
    html = invoke(*args, "-f", "html", "-q").stdout
    vex = invoke(*args, "-f", "cyclonedx", "-q").stdout
    return Answer(
        document["result"], flat(table), flat(markdown), Page.of(html), _vex(vex), json.loads(vex)
    )


# the VEX state and rated severity each level maps to (docs/reports.md)
STATE = {
    "required": "exploitable",
    "optional": "not_affected",
    "inconclusive": "in_triage",
    # nothing found where it looked, the bundle's own program not checked: never a pass
    "unchecked": "in_triage",
    "no": "not_affected",
}
SEVERITY = {
    "required": "high",
    "optional": "low",
    "inconclusive": "unknown",
    "unchecked": "unknown",
    "no": "none",
}


def _vex_ref(fix: str) -> str:
    return f"apple/coreai-torch#{fix}" if fix.isdigit() else fix


def _check_report(
    a: Answer,
    name: str,
    fix: str,
    title: str,
    level: str,
    item: dict[str, Any],
    ignored: str | None = None,
) -> None:
    """One finding in the HTML (its level, reason, caveats, ignore) and in the VEX (its state,
    reason, caveats, ignore)."""
    reason = flat(item["reason"])
    if level == "no" and not ignored:
        assert flat(f"{_vex_ref(fix)} {title}: {item['verdict']}") in a.html.text, (name, fix)
    else:
        assert reason in a.html.text, (name, fix)
    for remedy in item.get("remedies") or []:
        assert flat(f"remedy: {remedy}") in a.html.text, (name, fix, remedy)
    if ignored:
        assert (
            flat(f"{_vex_ref(fix)} ({level}, {item['verdict']}): ignored: {ignored}") in a.html.text
        ), (name, fix)
    entry = a.vex[(_vex_ref(fix), name)]
    assert entry["analysis"]["state"] == STATE[level], (name, fix)
    assert [r["severity"] for r in entry["ratings"]] == [SEVERITY[level]], (name, fix)
    assert reason in flat(entry["analysis"]["detail"]), (name, fix)
    for remedy in item.get("remedies") or []:
        assert flat(remedy) in flat(entry["recommendation"]), (name, fix)
    props = {p["name"]: p["value"] for p in entry.get("properties", [])}
    assert props.get("inventory:ignored") == ignored, (name, fix)
    assert ("will_not_fix" in entry["analysis"].get("response", [])) == bool(ignored)


def _check_coverage(a: Answer, b: dict[str, Any]) -> None:
    """What the answer rests on, in every format: the cell in the bundle's row, the line with
    the uncovered kinds and the command (terminal, markdown, HTML with its bar), the property of
    the bundle's CycloneDX component."""
    name = b["bundle"]
    [model] = [c for c in a.bom["components"] if c.get("bom-ref") == f"bundle:{name}"]
    props = {p["name"]: p["value"] for p in model.get("properties", [])}
    if b["coverage"] is None:
        assert "inventory:coverage" not in props, name
        return
    cover = Coverage.from_json(b["coverage"])
    start = a.table.index(f"│ {name} │")
    row = re.split("[├└]", a.table[start:])[0]
    assert flat(cover.cell()) in flat(row.replace("│", " ")), (name, row)
    line = cover.line(name)
    assert flat(line) in a.table, name
    assert flat(md_text(line)) in a.markdown, name
    assert flat(line) in a.html.text, name
    assert props["inventory:coverage"] == line, name


def _check_plan(a: Answer) -> None:
    result, table, markdown = a.result, a.table, a.markdown
    for b in result["bundles"]:
        name = b["bundle"]
        _check_coverage(a, b)
        # the bundle's level: the row of the table, the summary table of the markdown
        assert f"│ {name} │ {b['reexport']} │" in table, name
        # the markdown writes each value from data escaped (md_text): it renders as that text
        assert f"| {md_text(name)} | **{b['reexport']}** |" in markdown, name
        assert a.html.bundle_level(name) == b["reexport"], name
        for key, level in LEVELS:
            for item in b[key]:
                label = _label(item["fix"])
                _check_report(a, name, item["fix"], item["title"], level, item)
                if level == "no":
                    # folded to a count by default; named with its verdict under --details
                    assert f"{label} ({item['verdict']})" in table, (name, label)
                    assert f"{for_release_page(label)} ({item['verdict']})" in markdown, (
                        name,
                        label,
                    )
                    continue
                reason = flat(item["reason"])  # its caveats included (#54's running_var)
                assert f"{name} {label} ({level}): {reason}" in table, (name, label)
                assert (
                    f"{for_release_page(label)}** ({item['verdict']}): "
                    f"{flat(for_release_page(md_text(reason)))}" in markdown
                ), (name, label)
        for item in b["ignored"]:
            label = _label(item["fix"])
            _check_report(
                a,
                name,
                item["fix"],
                item["title"],
                item["ignored"]["level"],
                item,
                item["ignored"]["reason"],
            )
            said = f"{name} {label}: ignored ({item['ignored']['reason']}"
            assert said in table, said
            assert (
                f"{md_line(name)} {for_release_page(label)}: ignored "
                f"({md_text(item['ignored']['reason'])}" in markdown
            ), said
        for u in b["unexplained"]:
            said = (
                f"{name}: unexplained change in {u['step']}: {u['probe']}: re-export "
                f"{u['reexport']}"
            )
            assert said in table, said
            assert flat(for_release_page(md_line(said))) in markdown, said
            assert flat(u["reason"]) in a.html.text, said
            entry = a.vex[(f"unrecorded:{u['probe']}@{u['step']}", name)]
            assert entry["analysis"]["state"] == STATE[u["reexport"]], said


def test_every_finding_of_a_plan_is_in_every_format(matrix):
    _check_plan(_formats("plan", "--to", "0.4.3"))


def test_every_unrecorded_change_of_a_draft_plan_is_in_every_format(matrix):
    answer = _formats("plan", "--to", "0.4.2", "--fixes", "tests/golden/drafts/no54.toml")
    # the batch-norm change, unrecorded
    assert any(b["unexplained"] for b in answer.result["bundles"])
    _check_plan(answer)


def test_an_ignored_finding_and_its_reason_are_in_every_format(matrix, tmp_path: Path):
    ignore = tmp_path / "ignore.toml"
    ignore.write_text(
        '[[ignore]]\nfix = "28"\nbundle = "sam3"\nreason = "repaired in place"\n'
        'expires = "2999-01-01"\n'
    )
    answer = _formats("plan", "--to", "0.4.3", "--ignore", str(ignore))
    (sam3,) = [b for b in answer.result["bundles"] if b["bundle"] == "sam3"]
    assert [i["fix"] for i in sam3["ignored"]] == ["28"]
    _check_plan(answer)


@pytest.mark.parametrize("fix", ["28", "54", "core-b2"])
def test_every_bundle_of_an_affected_answer_is_in_every_format(fix, matrix):
    a = _formats("affected", "--fix", fix, details=False)
    result, table, markdown = a.result, a.table, a.markdown
    for b in result["bundles"]:
        _check_coverage(a, b)
        assert f"│ {b['bundle']} │" in table and f"| {md_text(b['bundle'])} |" in markdown
        assert (
            f"| {b['verdict']} | **{b['reexport']}** | "
            f"{flat(for_release_page(md_text(b['reason'])))} |" in markdown
        ), b["bundle"]
        assert flat(b["reason"]) in table, b["bundle"]
        assert a.html.bundle_level(b["bundle"]) == b["reexport"], b["bundle"]
        ignored = (b.get("ignored") or {}).get("reason")
        if b["reexport"] != "no":  # a "no" of affected is named with its reason too
            assert flat(b["reason"]) in a.html.text, b["bundle"]
        entry = a.vex[(_vex_ref(fix), b["bundle"])]
        _check_facts(a, b, entry)
        assert entry["analysis"]["state"] == STATE[b["reexport"]], b["bundle"]
        assert flat(b["reason"]) in flat(entry["analysis"]["detail"]), b["bundle"]
        # not_affected says why: an optional finding's program changes within the tolerance
        assert (entry["analysis"].get("justification") is not None) == (
            b["reexport"] in ("no", "optional")
        )
        assert [r["severity"] for r in entry["ratings"]] == [SEVERITY[b["reexport"]]]
        assert {p["name"]: p["value"] for p in entry.get("properties", [])}.get(
            "inventory:ignored"
        ) == ignored, b["bundle"]


def _check_facts(a: Answer, b: dict[str, Any], entry: dict[str, Any]) -> None:
    """What the table says of a bundle besides its level, in every format: its exporter, "(assumed)"
    when the registry records none, and each runtime a probe was measured on after another refused
    it, with why (lfm_audio's 0.4.0 probe of #54 runs on b1: the b2 worker aborts)."""
    name = b["bundle"]
    exporter = b["exporter"]
    if b["exporter_recorded"] == "unknown" and exporter != "unknown":
        exporter += " (assumed)"
    [model] = [c for c in a.bom["components"] if c.get("bom-ref") == f"bundle:{name}"]
    props = {p["name"]: p["value"] for p in model["properties"]}
    # how its step's changes no record explains were had (on the matrix's store: read from
    # the stored sweep), in every format
    assert props.get("inventory:unrecorded_state") == b["unrecorded_state"], name
    if b["unrecorded_state"] is not None:
        state = unrecorded_said(b["unrecorded_state"])
        assert flat(state) in a.table and flat(state) in a.html.text, name
        assert flat(md_text(state)) in a.markdown, name
    # the exporter is a cell of the bundle's row (affected's table, as wide as it takes): the
    # row runs to the rule under it
    start = a.table.index(f"│ {name} │")
    row = re.split("[├└]", a.table[start:])[0]
    assert f"│ {exporter} │" in row, (name, row)
    assert f"| {md_text(name)} | {md_text(exporter)} |" in a.markdown, name
    assert f"{name} {b['reexport']} coreai-torch {exporter}" in a.html.text, name
    assert props["inventory:exporter"] == exporter, name
    said = {(p["name"], p["value"]) for p in entry.get("properties", [])}
    if b["runtime"]:
        assert ("inventory:runtime", b["runtime"]) in said, name
    for p in b["probes"]:
        for attempt in p["runtime_attempts"]:
            moved = f"measured on {p['runtime']} after {attempt}"
            assert flat(moved) in a.table, moved
            assert flat(for_release_page(md_text(moved))) in a.markdown, moved
            assert flat(moved) in a.html.text, moved
            assert ("inventory:measured_after", moved) in said, moved


def test_a_load_that_depends_on_the_exporter_is_that_state_in_the_html(matrix):
    """The HTML load matrix of a plan: a bundle whose exporter is not recorded (lfm_audio) shows,
    on each runtime where its candidate releases' assets differ, that it depends on the exporter
    and what each does, as the table's "depends on the exporter" says; never the oldest
    candidate's crash alone."""
    a = _formats("plan", "--to", "0.4.3")
    depending = [
        b for b in a.result["bundles"] if (b["load"] or {}).get("verdict") == "depends-on-exporter"
    ]
    assert depending
    for b in depending:
        assert f"│ {b['bundle']} │" in a.table and "depends on the exporter" in a.table
        row = a.html.raw[a.html.raw.index(f"<tr><td>{b['bundle']}</td>") :].split("</tr>")[0]
        runtimes: dict[str, list[str]] = {}
        for check in b["load"]["checks"]:
            for o in check["outcomes"]:
                runtimes.setdefault(o["runtime"], []).append(f"{check['exporter']} {o['outcome']}")
        differ = [r for r, said in runtimes.items() if len({s.split()[1] for s in said}) > 1]
        assert differ, b["bundle"]
        assert row.count('class="outcome-depends-on-exporter"') == len(differ), row
        for r in differ:
            assert f"{', '.join(runtimes[r])}</td>" in row, (b["bundle"], r)


def test_the_summary_of_an_affected_answer_with_an_accepted_risk_is_in_every_format(tmp_path):
    """The summary block (each bundle's level and what sets it: here an ignore file's accepted
    risk and its reason) in the table, the markdown, the HTML and the VEX, as the JSON holds it:
    a bundle exported with the record's own release, answered without a conversion."""
    registry = tmp_path / "recipes.toml"
    registry.write_text(
        '[bundles.a]\nfiles = ["a"]\ndtype = "float32"\n'
        '[bundles.a.exporter]\nconverter = "0.4.2"\nsource = "test"\n'
    )
    ignore = tmp_path / "ignore.toml"
    ignore.write_text(
        '[[ignore]]\nfix = "40"\nbundle = "a"\nreason = "we ship b1 only"\nexpires = "2999-01-01"\n'
    )
    store = str(tmp_path / "store")

    def cli(*more: str) -> str:
        args = ("affected", "--fix", "40", "--registry", str(registry), "--ignore", str(ignore))
        return invoke(*args, *more, "-q", COLUMNS=WIDE, INVENTORY_CACHE=store).stdout

    document = json.loads(cli("--json"))
    [line] = document["summary"]["bundles"]
    assert (line["bundle"], line["level"]) == ("a", "ignored")
    table, markdown = flat(cli()), flat(cli("-f", "markdown"))
    html, vex = Page.of(cli("-f", "html")), _vex(cli("-f", "cyclonedx"))
    assert "│ a │ no (ignored) │" in table and "re-export no, ignored (we ship b1 only)" in table
    said = f"| a | **ignored** | {flat(for_release_page(md_text(line['reason'])))} |"
    assert said in markdown, markdown
    assert "ignored: we ship b1 only" in html.text
    props = {p["name"]: p["value"] for p in vex[(_vex_ref("40"), "a")]["properties"]}
    assert props["inventory:ignored"] == "we ship b1 only"
