"""Every format renders the same document, for the commands beside `plan` and `affected`
(tests/inventory/report/test_parity.py): from the session's real answers, each finding the JSON
holds — each (record, probe, verdict) of release notes with the bundles a record concerns and each
change no record explains; each changing probe of a sweep with what explains it; each bundle of a
whole-program check with its status, answer, level, regions, unrecorded changes, caveats and
the torch it was built on; each bundle a scan reads with its exporter, weights and load per
runtime; each changing probe a bisection attributes with its commits; each finding of a repair —
appears in every format the command has. A format that drops one gives a different answer."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from answers import BARE, CHECKED, on_store, stores
from bundles import export
from cli import invoke
from gitrepos import max_pool2d_history
from pages import WIDE, Page, flat

from inventory.report.text import for_release_page, md_code, md_line, md_text
from inventory.report.verify_report import torch_line
from inventory.verify.torch_check import TorchCheck


def _label(fix: str) -> str:
    return f"#{fix}" if fix.isdigit() else fix


def _in_every(said: str, *texts: str) -> None:
    for text in texts:
        assert flat(said) in text, said


def _each_format(
    *args: str, formats: tuple[str, ...] = ("table", "markdown"), store: str | None = None
) -> tuple[dict[str, Any], dict[str, str]]:
    """The JSON result and each other format's text (flattened; the HTML as the page shows
    it), from the CLI in this process, on the session's store or on another of the suite's
    (`on_store`)."""

    def cli(*more: str) -> str:
        where = {} if store is None else on_store(store)
        return invoke(*args, *more, "-q", COLUMNS=WIDE, **where).stdout

    result = json.loads(cli("--json"))["result"]
    texts = {}
    for fmt in formats:
        raw = cli("-f", fmt)
        texts[fmt] = Page.of(raw).text if fmt == "html" else flat(raw)
    return result, texts


def test_every_finding_of_release_notes_is_in_every_format(matrix):
    notes, t = _each_format("release-notes", "--from", "0.4.1", "--to", "0.4.2")
    table, markdown = t["table"], t["markdown"]
    assert notes["fixes"]
    for f in notes["fixes"]:
        label = _label(f["fix"])
        for p in f["probes"]:
            name = p["probe"].split("/", 1)[1]
            # one row per probe: the record, the probe and its verdict
            assert (
                f"│ {label} │ {name} │ {p['emitted']} │ {p['shipped']} │ {p['outputs']} │ "
                f"{p['verdict']} │" in table
            ), (label, name)
            assert f"| `{name}`" in markdown and f"| {p['verdict']} |" in markdown, name
        for pair in f["loads"]:
            for side in (pair["old"], pair["new"]):
                said = ", ".join(
                    f"{o['core']} {o['outcome']}" + (f" ({o['signal']})" if o["signal"] else "")
                    for o in side["outcomes"]
                )
                _in_every(f"{side['exporter']}: {said}", table, markdown)
        for bundle in f["bundles"]:
            assert bundle in table and bundle in markdown, (label, bundle)
        for held in f["held_by"]:
            assert f"{held['bundle']} {held['instance']} x{held['count']}" in table, held
    for u in notes["unexplained"]:
        said = f"{u['probe']} changes in {u['step']} ({u['verdict']})"
        assert said in table, said
        assert f"`{u['probe']}` changes in {u['step']} ({u['verdict']})" in markdown, said


@pytest.mark.parametrize(("old", "new"), [("0.4.0", "0.4.1"), ("0.4.1", "0.4.2")])
def test_release_notes_give_each_bundle_the_answer_affected_gives_it_in_every_format(
    old, new, matrix
):
    """The notes' counts are the library's probe cases of a record (#40: 20 of 26 change their
    program), beside the bundles that hold it: they read as if the record changed mimi and
    sam3, which `affected --fix 40` answers `no`. Every format now gives each bundle the record
    concerns its own answer, the one `affected` gives, and says what the counts count."""
    notes, t = _each_format("release-notes", "--from", old, "--to", new)
    table, markdown = t["table"], t["markdown"]
    assert "library probe cases" in markdown and "library probe case" in table
    for f in notes["fixes"]:
        assert [a["bundle"] for a in f["answers"]] == f["bundles"], f["fix"]
        answered = matrix.run_cli(("affected", "--fix", f["fix"])).data["result"]["bundles"]
        own = {b["bundle"]: (b["reexport"], b["verdict"]) for b in answered}
        said = []
        for a in f["answers"]:
            assert (a["reexport"], a["verdict"]) == own[a["bundle"]], (f["fix"], a["bundle"])
            said.append(f"{a['bundle']} re-export {a['reexport']} ({a['verdict']})")
        if said:
            line = f"for the shipped bundles (`inventory affected --fix {f['fix']}`): "
            _in_every(f"{_label(f['fix'])} {line}{'; '.join(said)}", table)
            _in_every(md_text(f"{line}{'; '.join(said)}"), markdown)
    # the records a bundle's answer takes a re-export level for are never all `no` (#28, #54)
    assert any(a["reexport"] != "no" for f in notes["fixes"] for a in f["answers"])


def test_every_changing_probe_of_a_sweep_is_in_every_format(matrix):
    sweep, t = _each_format("sweep", "--from", "0.4.1", "--to", "0.4.2")
    table, markdown = t["table"], t["markdown"]
    assert sweep["changed"]
    said = f"{len(sweep['changed'])} of {sweep['probed']} probes change the shipped program"
    _in_every(said, table, markdown)
    for c in sweep["changed"]:
        row = f"{c['probe']} │ {c['shipped']} │ {c['outputs']} │ {c['verdict']} │"
        assert row in table, row
        assert (
            f"| `{c['probe']}` | {c['shipped']} | {c['outputs']} | {c['verdict']} |" in markdown
        ), c["probe"]
        for fix in c["explained_by"]:
            assert _label(fix) in table and for_release_page(_label(fix)) in markdown
    assert f"{len(sweep['unexplained'])} explained by no fix record" in markdown
    for f in sweep["failing_both"]:
        _in_every(f"{f['probe']}: {f['error']}", table)
        # the markdown writes each value from data escaped (md_text): it renders as that text
        _in_every(f"{f['probe']}: {md_text(f['error'])}", markdown.replace("`", ""))


def test_every_finding_of_a_whole_program_check_is_in_every_format(matrix):
    """verify of every bundle against 0.4.3, read back from the store that holds the checks:
    each bundle's status, answer, level and reason, each region it was cut into, each change
    no record explains and each caveat, in the table, the markdown and the HTML report."""
    bundles = ("parakeet", "lfm_audio", "sortformer", "mimi", "sam3")
    check, t = _each_format(
        "verify", *bundles, "--to", "0.4.3", formats=("table", "markdown", "html"), store=CHECKED
    )
    table, markdown, html = t["table"], t["markdown"], t["html"]
    assert [b["bundle"] for b in check["bundles"]] == list(bundles)
    for b in check["bundles"]:
        name = b["bundle"]
        assert f"{name}: coreai-torch {b['exporter']}" in table and b["status"] in table
        assert f"## {name}: {b['status']}" in markdown
        exporter = f"coreai-torch {b['exporter']}{' (assumed)' if b['exporter_assumed'] else ''}"
        # the exporter, assumed or not, in every format
        _in_every(f"{name}: {exporter} -> {b['to']}", table)
        _in_every(f"| exporter | {md_text(exporter)} -> {md_text(b['to'])} |", markdown)
        _in_every(f"{name} {b['status']} {exporter}", html)
        assert name in html and b["status"] in html, name
        # the markdown links each `#N` upstream (as a release page shows it)
        _in_every(b["answer"], table, html)
        # the markdown writes each value from data escaped (md_text): it renders as that text
        _in_every(for_release_page(md_line(b["answer"])), markdown)
        if b["reexport"]:
            said = f"{b['reexport']} ({b['verdict']}: {b['reason']})"
            _in_every(said, table)
            _in_every(for_release_page(md_text(said)), markdown)
            _in_every(b["reason"], html)
        for key in ("inconsistencies", "limitations", "notes", "disagreements"):
            for said in b[key]:
                _in_every(said, table, html)
                _in_every(for_release_page(md_text(said)), markdown)
        # the torch it was built on, a caveat where it is not the recipe's
        torch = torch_line(TorchCheck.from_json(b["torch"]))
        if torch is not None:
            _in_every(torch[1], table, html)
            _in_every(for_release_page(md_text(torch[1])), markdown)
        for u in b["unrecorded"]:
            said = f"{u['step']} {u['stage']}: {u['regions']} region(s), {u['changed_lines']} lines"
            _in_every(said, table, html)
            _in_every(md_text(said), markdown)
        for step in b["steps"]:
            _in_every(f"{step['step']}: emitted", table, markdown)


def test_every_bundle_a_scan_reads_is_in_every_format(matrix, tmp_path: Path):
    """A scan of a folder holding a coreai-torch 0.4.0 asset (sam3's load probe, from the
    matrix's load checks) and a 0.4.2 one: each bundle's exporter, weights and load on every
    runtime, in the table, the markdown and the CycloneDX document."""
    results = stores()[BARE] / "results"
    for release in ("0.4.0", "0.4.2"):
        asset = max(
            results.glob(f"load-{release}-float16-*/export-{release}/model.aimodel"),
            key=lambda p: p.stat().st_mtime,
            default=None,
        )
        assert asset is not None, release
        shutil.copytree(asset, tmp_path / f"probe-{release.replace('.', '')}.aimodel")
    scan, t = _each_format("scan", str(tmp_path), formats=("table", "markdown", "cyclonedx"))
    table, markdown = t["table"], t["markdown"]
    bom = json.loads(t["cyclonedx"])
    models = {c["name"]: c for c in bom["components"] if c["type"] == "machine-learning-model"}
    assert len(scan["bundles"]) == 2
    # each bundle not loading where it is deployed is a finding in every format: in the VEX,
    # an entry of its own
    vulnerable = {v["affects"][0]["ref"] for v in bom.get("vulnerabilities", [])}
    assert scan["not_loading"]
    assert vulnerable == {f"bundle:{n['bundle']}" for n in scan["not_loading"]}
    for n in scan["not_loading"]:
        _in_every(f"{n['bundle']} does not load on a deployment runtime", table)
        _in_every(f"{n['bundle']}** does not load on a deployment runtime", markdown)
    for b in scan["bundles"]:
        name = Path(b["path"]).name
        fingerprint = b["weights"]["fingerprint"]
        _in_every(fingerprint, table, markdown)
        assert b["exporter"] and flat(b["exporter"]) in table, name
        model = next(m for m in models.values() if name in json.dumps(m))
        props = {p["name"]: p["value"] for p in model["properties"]}
        for load in b["loads"]:
            assert f"{load['core']}" in table and load["outcome"] in table, (name, load)
            assert load["outcome"] in markdown, (name, load)
            assert props[f"inventory:loads:{load['runtime']}"] == load["outcome"], (name, load)


def _commit_label(c: dict[str, Any]) -> str:
    return f"{c['sha'][:7]} (#{c['pr']})" if c["pr"] else c["sha"][:7]


def test_every_probe_a_bisection_attributes_is_in_every_format(env, tmp_path):
    """bisect of the max_pool2d fix over a history of four commits, from the store its JSON run
    filled: the two releases' commits with how each was found and its wheel's check, the
    counts, each changing probe with its release step and every commit it is attributed to
    (and whether it changed again), the count per commit and each probe left unattributed, in
    the table and the markdown."""
    repo = tmp_path / "coreai-torch"
    max_pool2d_history(repo, env("0.4.1").path, env("0.4.2").path)
    doc, t = _each_format(
        "bisect",
        "--from",
        "0.4.1",
        "--to",
        "0.4.2",
        "--repo",
        str(repo),
        "--allow-code",
        "--probe",
        "max_pool2d/functional-no-stride",
        "--probe",
        "max_pool2d/functional-explicit-stride",
    )
    table, markdown = t["table"], t["markdown"]
    assert doc["probes"]
    counts = f"{doc['changing']} of {doc['probed']} probes change, over {len(doc['commits'])}"
    _in_every(counts, table, markdown)
    for release, key in ((doc["from"], "from_commit"), (doc["to"], "to_commit")):
        c = doc[key]
        wheel = "same files as the commit" if c["wheel"] == "same files" else c["wheel"]
        _in_every(f"{release}: {c['sha'][:7]} ({c['found_by']}); wheel: {wheel}", table)
        _in_every(
            f"{md_line(release)}: {md_code(c['sha'][:7])} ({md_text(c['found_by'])}); "
            f"wheel: {md_text(wheel)}",
            markdown,
        )
    per_commit: dict[str, int] = {}
    for p in doc["probes"]:
        said = [
            _commit_label(c) + ("" if c["final"] else " (then changed again)") for c in p["commits"]
        ]
        who = (
            ", then ".join(said) if said else f"not attributed: {p['problem'] or 'no commit found'}"
        )
        assert f"{p['regime']} │ {p['release_shipped']} │ {who} │" in table, p["regime"]
        assert (
            f"| {md_text(p['regime'])} | {p['release_shipped']} | "
            f"{for_release_page(md_text(who))} |" in markdown
        ), p["regime"]
        for c in p["commits"]:
            per_commit[_commit_label(c)] = per_commit.get(_commit_label(c), 0) + 1
    assert per_commit
    for label, n in per_commit.items():
        _in_every(f"{label}: {n} probe(s)", table)
        # the markdown links each `#N` upstream (as a release page shows it)
        _in_every(for_release_page(f"{md_text(label)}: {n} probe(s)"), markdown)
    if doc["unattributed"]:
        _in_every(f"{len(doc['unattributed'])} changing probe(s) could not be attributed", table)
        _in_every(
            for_release_page(
                f"**{len(doc['unattributed'])} changing probe(s) could not be attributed**: "
                + ", ".join(md_text(r) for r in doc["unattributed"])
            ),
            markdown,
        )
    # the probe the JSON leaves out (it does not change) is in no format
    for text in (table, markdown):
        assert "functional-explicit-stride" not in text


def _outcomes(side: list[dict[str, Any]]) -> str:
    said = []
    for o in side:
        head = f"{o['outcome']} ({o['signal']})" if o["signal"] else o["outcome"]
        said.append(
            f"{o['core']} "
            + (f"{head}: {o['error']}" if o["error"] and o["outcome"] != "loads" else head)
        )
    return "; ".join(said)


def test_every_finding_of_a_repair_is_in_every_format(env, tmp_path):
    """repair of a real coreai-torch 0.4.0 asset, once per format (each to a folder of its own):
    what was rewritten and with which core, the producer stamp, each runtime's outcome before and
    after, the weights' fingerprint and the outputs' bit-identity, in the table and the markdown
    as the JSON holds them."""
    asset = export(env, "0.4.0", tmp_path / "asset")

    def repaired(fmt: str) -> tuple[dict[str, Any], str]:
        out = tmp_path / f"repaired-{fmt}.aimodel"
        more = ("--json",) if fmt == "json" else ("-f", fmt)
        ran = invoke("repair", str(asset), "-o", str(out), *more, "-q", COLUMNS=WIDE)
        assert ran.returncode == 0, ran.stderr
        if fmt == "json":
            return json.loads(ran.stdout)["result"], ""
        return {}, flat(ran.stdout)

    r, _ = repaired("json")
    table, markdown = repaired("table")[1], repaired("markdown")[1]
    loc, w, o = r["locations"], r["weights"], r["outputs"]

    def counts(c: dict[str, int]) -> str:
        return ", ".join(f"{k} {v}" for k, v in sorted(c.items()))

    findings = [
        f"{loc['ops']} op and {loc['block_args']} block-argument locations rewritten with "
        f"coreai-core {r['reader']} ({counts(loc['locations_before'])} -> "
        f"{counts(loc['locations_after'])}); {loc['op_ids_kept']} coreai op ids kept",
        f"{r['producer']} (re-saved with coreai-core {r['stamper']})",
        _outcomes(r["original"]),
        f"{_outcomes(r['repaired'])} (every function run on the original's seeded inputs)",
        f"byte-identical: {w['original']['fingerprint']} ({w['original']['constants']} tensors, "
        f"{w['original']['bytes']} bytes) in both, read with {w['read_with']}",
        f"bit-identical on {o['runtime']}: {o['arrays']} array(s) of {', '.join(o['functions'])}, "
        f"seed {o['seed']}",
    ]
    assert r["original"] and r["repaired"]
    for said in findings:
        _in_every(said, table)
        _in_every(md_text(said), markdown)
    # each run names its own source and output, and its evidence folder
    _in_every(f"repaired {r['source']} -> ", table)
    _in_every(f"**repaired**: {md_text(r['source'])} -> ", markdown)
    for text in (table, markdown):
        assert "evidence" in text
