"""`inventory draft`: records drafted from the instruments, in a fix database `--fixes` reads.

The fast tests hold what needs no converter: the pin commit read from a history's pyproject
files, a draft's `[fix.draft]` table read (and refused when malformed) like every record, the
comparison with curated records and its scores. The slow tests draft on small repositories built
from two releases' published sources (CI has no network to the upstream history), as
`tests/inventory/test_bisect.py` does: the commit that changes a probe becomes a record with its
pull request, title and conditions; the commit that moves the coreai-core pin a pipeline record, and
the commit from which the asset loads on the new runtime an asset record; without a repository,
records by construct and stage, said so; and a plan read with the draft.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
from cli import invoke
from gitrepos import PYPROJECT, commit, git, init, max_pool2d_history, package_of, put, set_version

from inventory.draft.against import Score, compare, prs_of
from inventory.draft.history import pin_at, pin_commit
from inventory.draft.observe import Observed
from inventory.draft.records import Drafted, StepDraft
from inventory.gitrepo import Repo
from oracle.catalog.fixes import FIXES_FILE, FixError, load_fixes

ROOT = Path(__file__).resolve().parents[3]


# ---- fast: the history, the file, the comparison --------------------------------------------


def _pinned(core: str) -> str:
    return PYPROJECT.replace("coreai-core==1.0.0b2", f"coreai-core=={core}")


def test_the_pin_commit_is_the_one_whose_pyproject_moves_the_core(tmp_path):
    repo = tmp_path / "r"
    init(repo)
    (repo / "pyproject.toml").write_text(_pinned("1.0.0b1"))
    base = commit(repo, "v0.4.0 (#1)")
    (repo / "README.md").write_text("docs\n")
    commit(repo, "docs (#2)")
    (repo / "pyproject.toml").write_text(_pinned("1.0.0b2"))
    bump = commit(repo, "sync : bump version, update coreai-core to b2 (#28)")
    r = Repo(repo)
    line = [r.commit(base), *r.first_parent(r.commit(base), r.commit(bump))]
    assert pin_at(r, base) == "1.0.0b1"
    found = pin_commit(r, line, "1.0.0b2")
    assert found is not None and (found.sha, found.pr) == (bump, "28")
    assert pin_commit(r, line, "1.0.0b3") is None


DRAFTED = """
[[fix]]
id = "36"
title = "Bug fix: max_pool2d uses default stride value"
ships_in = "0.4.2"
upstream = ""
constructs = ["max_pool2d"]
checked = "drafted"

[fix.draft]
step = "0.4.1->0.4.2"
stage = "lowering"
grouped_by = "commit d8839f8 (#36)"
reaches = "yes: 1 of 6 library regime(s) of max_pool2d"
values = "the old side cannot convert in 1"
conditions = ["max_pool2d: changes in 1 of 6"]
evidence = ["max_pool2d-0.4.1-0.4.2-0123"]
"""


def test_a_drafted_record_is_read_like_every_record(tmp_path):
    path = tmp_path / "draft.toml"
    path.write_text(DRAFTED)
    [fix] = load_fixes(path)
    assert fix.draft is not None and fix.draft.conditions == ("max_pool2d: changes in 1 of 6",)
    path.write_text(DRAFTED.replace("stage =", "stages ="))
    with pytest.raises(FixError, match="draft has an unknown key 'stages'"):
        load_fixes(path)
    path.write_text(DRAFTED.replace('evidence = ["max_pool2d-0.4.1-0.4.2-0123"]', "evidence = 3"))
    ran = invoke("fixes", "--fixes", str(path))
    assert ran.returncode == 2 and "evidence must be a list of strings" in ran.stderr


def _observed(old: str, new: str, history: bool) -> Observed:
    return Observed(
        old,
        new,
        0,
        (),
        (),
        (),
        None,
        None,
        (),
        (),
        (),
        "apple/coreai-torch" if history else "",
        None,
    )


def _drafted(
    rid: str, kind: str, constructs: tuple[str, ...], step: str, new: str, prs: tuple[str, ...] = ()
) -> Drafted:
    return Drafted(
        rid,
        rid,
        new,
        kind,
        "",
        constructs,
        (),
        step,
        "lowering",
        "",
        "",
        "no probe changes",
        (),
        (),
        prs,
    )


def test_the_comparison_matches_by_pull_request_and_scores_pairs():
    curated = {f.id: f for f in load_fixes(FIXES_FILE)}
    assert prs_of(curated["core-b2"]) == ("28",) and prs_of(curated["29"]) == ("29", "30", "31")
    step = "0.4.0->0.4.1"
    drafted = (
        _drafted("core-1.0.0b2", "pipeline", (), step, "0.4.1"),
        _drafted("28", "asset", (), step, "0.4.1", ("28",)),
        _drafted(
            "13", "lowering", ("arange", "view_dynamic", "cat_dynamic"), step, "0.4.1", ("13",)
        ),
        _drafted("14", "lowering", ("cat_dynamic",), step, "0.4.1", ("14",)),
        _drafted("15", "lowering", ("repeat_symbolic",), step, "0.4.1", ("15",)),
        _drafted("16", "lowering", ("masked_scatter",), step, "0.4.1", ("16",)),
        _drafted("18", "lowering", ("view_dynamic",), step, "0.4.1", ("18",)),
    )
    c = compare(
        (StepDraft(_observed("0.4.0", "0.4.1", True), drafted, ()),),
        list(curated.values()),
        "oracle/catalog/fixes.toml",
    )
    by = {(d.curated, d.drafted): d for d in c.diffs}
    assert by[("core-b2", "core-1.0.0b2")].status == "same"  # the pipeline: by kind and step
    assert by[("25", None)].status == "missing"
    assert by[(None, "18")].status == "extra"
    assert "repeat_symbolic" in " ".join(by[("13", "13")].details)
    assert (c.prs.precision, c.prs.recall) == (5 / 6, 5 / 7)  # 18 extra; 25 and 27 missing
    assert c.pairs.missing == ("#13 repeat_symbolic", "#25 arange", "#27 arange", "#28 (pipeline)")
    assert Score((), ("1",)).precision is None and Score((), ("1",)).recall == 0.0


# ---- slow: drafts on small histories of the published sources -------------------------------


def _draft(*args: str) -> dict:
    ran = invoke("draft", *args, "--json", "-q")
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_a_commit_that_changes_a_probe_becomes_a_record_with_its_pull_request(
    env, tmp_path, json_schema
):
    """0.4.1's sources, a docs commit, the max_pool2d fix (#36), the version bump: the draft
    credits the default-stride probe's change to #36's commit (its title from the message), says
    the explicit-stride regime does not change, and is a fix database plan and release notes
    read, naming the pull request, its title and the conditions."""
    old, new = env("0.4.1"), env("0.4.2")
    repo = tmp_path / "coreai-torch"
    _base, _docs, fix, _bump = max_pool2d_history(repo, old.path, new.path)
    out = tmp_path / "draft.toml"
    probes = (
        "--probe",
        "max_pool2d/functional-no-stride",
        "--probe",
        "max_pool2d/functional-explicit-stride",
    )
    refused = invoke("draft", "--from", "0.4.1", "--to", "0.4.2", "--repo", str(repo), *probes)
    assert refused.returncode == 2 and "--allow-code" in refused.stderr
    doc = _draft(
        "--from",
        "0.4.1",
        "--to",
        "0.4.2",
        "--repo",
        str(repo),
        "--allow-code",
        *probes,
        "-o",
        str(out),
    )
    json_schema(doc)
    doc = doc["result"]  # the envelope validated whole; the draft under result
    [step] = doc["steps"]
    assert (step["step"], step["history"], step["probed"], step["changed"]) == (
        "0.4.1->0.4.2",
        True,
        2,
        1,
    )
    [record] = step["records"]
    assert (record["id"], record["kind"], record["constructs"], record["title"]) == (
        "36",
        "lowering",
        ["max_pool2d"],
        "Bug fix: max_pool2d uses default stride value",
    )
    assert record["checked"] == "drafted" and fix[:7] in record["draft"]["grouped_by"]
    assert record["draft"]["values"] == "the old side cannot convert in 1"
    [condition] = [c for c in record["draft"]["conditions"] if c.startswith("max_pool2d:")]
    assert "functional-no-stride" in condition.split("does not change")[0]
    assert "functional-explicit-stride" in condition.split("does not change")[1]
    assert record["draft"]["evidence"] and not any("/" in e for e in record["draft"]["evidence"])
    # a fix database: the records of 0.4.1 and before kept, then the drafted one
    written = tomllib.loads(out.read_text())["fix"]
    kept = [
        f["id"]
        for f in tomllib.loads(FIXES_FILE.read_text())["fix"]
        if f["ships_in"] in ("0.4.0", "0.4.1")
    ]
    assert [f["id"] for f in written] == [*kept, "36"]
    notes = invoke(
        "release-notes", "--from", "0.4.1", "--to", "0.4.2", "--fixes", str(out), "--markdown", "-q"
    )
    assert notes.returncode == 0, notes.stderr
    # the pull request linked to the converter's repository (a release page's own #36 is not it)
    assert (
        "## [apple/coreai-torch#36](https://github.com/apple/coreai-torch/pull/36) Bug fix: "
        "max_pool2d uses default stride value"
    ) in notes.stdout
    assert (
        "Drafted (drafted): commit" in notes.stdout and "functional-explicit-stride" in notes.stdout
    )
    plan = invoke("plan", "--to", "0.4.2", "--fixes", str(out), "--bundle", "mimi", "--json", "-q")
    # nothing changes mimi, but its ops were never counted: unchecked, as with the curated
    # records (tests/golden/plan/0.4.2.json), never a bare "no"
    assert plan.returncode == 5, plan.stderr
    assert json.loads(plan.stdout)["result"]["bundles"][0]["reexport"] == "unchecked"


def test_the_pin_commit_is_a_pipeline_record_and_the_asset_change_an_asset_record(
    env, tmp_path, json_schema
):
    """0.4.0's sources (tag v0.4.0, coreai-core b1), then 0.4.1's with the pin moved to b2 in
    one commit (#28), as upstream: the draft makes the pin a pipeline record with that pull
    request, and the asset change (0.4.0's asset does not load on b2, 0.4.1's does) an asset
    record of the same commit; sam3, exported with 0.4.0, is then required by it as by the
    curated #28."""
    old, new = env("0.4.0"), env("0.4.1")
    repo = tmp_path / "coreai-torch"
    init(repo)
    git(repo, "remote", "add", "origin", "https://github.com/apple/coreai-torch.git")
    (repo / "pyproject.toml").write_text(_pinned("1.0.0b1"))
    put(repo, package_of(old.path))
    commit(repo, "Initial commit")
    git(repo, "tag", "v0.4.0")
    (repo / "pyproject.toml").write_text(_pinned("1.0.0b2"))
    put(repo, package_of(new.path))
    set_version(repo, "0.4.1")
    sync = commit(repo, "sync : bump version, update coreai-core to b2 (#28)")
    git(repo, "tag", "v0.4.1")
    out = tmp_path / "draft.toml"
    doc = _draft(
        "--from",
        "0.4.0",
        "--to",
        "0.4.1",
        "--repo",
        str(repo),
        "--allow-code",
        "--probe",
        "asset_hierarchy",
        "-o",
        str(out),
    )
    json_schema(doc)
    doc = doc["result"]  # the envelope validated whole; the draft under result
    assert doc["repo"] == "apple/coreai-torch"
    by = {r["kind"]: r for r in doc["steps"][0]["records"]}
    pipeline, asset = by["pipeline"], by["asset"]
    assert pipeline["id"] == "core-1.0.0b2" and pipeline["title"].startswith(
        "coreai-core pin 1.0.0b1 -> 1.0.0b2"
    )
    assert pipeline["upstream"] == "https://github.com/apple/coreai-torch/pull/28"
    assert sync[:7] in pipeline["draft"]["grouped_by"]
    assert asset["id"] == "28" and asset["draft"]["stage"] == "load"
    assert any(
        "written by 0.4.0" in c and "1.0.0b2 crashes" in c for c in asset["draft"]["conditions"]
    )
    plan = invoke("plan", "--to", "0.4.1", "--fixes", str(out), "--bundle", "sam3", "--json", "-q")
    sam3 = json.loads(plan.stdout)["result"]["bundles"][0]
    assert plan.returncode == 1 and sam3["reexport"] == "required"
    assert [i["fix"] for i in sam3["required"]] == ["28"]


def test_without_history_changes_are_grouped_by_construct_and_stage(env, tmp_path, json_schema):
    """0.4.2 -> 0.4.3, no repository (its history is not public): the conv transpose regimes
    0.4.3 refuses make one record of the construct, the core pin one pipeline record, each
    saying no history was available; against the curated records they match #79 and core-b3
    by construct and kind (the draft names no pull request), and a plan reads the draft."""
    env("0.4.3")
    out = tmp_path / "draft.toml"
    probes = ("--probe", "conv_transpose/1d-op-eq-stride", "--probe", "conv_transpose/1d-op0-p0")
    doc = _draft(
        "--from", "0.4.2", "--to", "0.4.3", *probes, "-o", str(out), "--against", str(FIXES_FILE)
    )
    json_schema(doc)
    doc = doc["result"]  # the envelope validated whole; the draft under result
    records = {r["id"]: r for r in doc["steps"][0]["records"]}
    assert set(records) == {"core-1.0.0b3", "draft-0.4.2-0.4.3-conv_transpose"}
    lowering = records["draft-0.4.2-0.4.3-conv_transpose"]
    assert "no history was available" in lowering["draft"]["grouped_by"]
    assert lowering["draft"]["values"] == "the new side cannot convert in 1"
    assert "no history to find the commit in" in records["core-1.0.0b3"]["draft"]["grouped_by"]
    against = doc["against"]
    assert [(r["curated"], r["drafted"], r["status"]) for r in against["records"]] == [
        ("core-b3", "core-1.0.0b3", "same"),
        ("79", "draft-0.4.2-0.4.3-conv_transpose", "same"),
    ]
    assert against["prs"]["recall"] == 0.0 and against["step_constructs"]["recall"] == 1.0
    plan = invoke("plan", "--to", "0.4.3", "--fixes", str(out), "--bundle", "mimi", "--json", "-q")
    # the drafted pin record is answered by the asset probe alone, as core-b3 is: unchecked
    assert plan.returncode == 5
    assert json.loads(plan.stdout)["result"]["bundles"][0]["reexport"] == "unchecked"


def _region(stage: str, constructs: list[str], ops: list[str]) -> dict:
    return {
        "graph": "main",
        "composite": None,
        "changed_lines": 4,
        "constructs": constructs,
        "modules": ["encoder.layers.0"],
        "module_count": 1,
        "ops": ops,
        "coreai_ops": ["coreai.cast"],
        "stage": stage,
        "step": "0.4.1->0.4.2",
        "evidence": "/store/results/verify-pair-sortformer-0.4.1-0.4.2-0123456789abcdef0123",
    }


def test_whole_program_regions_join_records_by_construct_and_stage():
    """A region of the optimizer stage joins the pipeline record; one of a construct no probe
    saw change makes that construct's record, saying so, with the aten targets its detector
    reads as touches; one no detector names is a note, never a record."""
    from inventory.draft.records import group

    regions = (
        ("sortformer", _region("optimizer", [], [])),
        (
            "sortformer",
            _region(
                "lowering",
                ["batch_norm"],
                ["aten._native_batch_norm_legit_no_training.default", "aten.add.Tensor"],
            ),
        ),
        ("mimi", _region("lowering", [], ["aten.squeeze.dims"])),
    )
    observed = Observed(
        "0.4.1", "0.4.2", 0, (), (), (), None, None, (), regions, ("mimi", "sortformer")
    )
    draft = group(observed)
    by = {r.id: r for r in draft.records}
    assert set(by) == {"draft-0.4.1-0.4.2-pipeline", "draft-0.4.1-0.4.2-batch_norm"}
    pipeline, norm = by["draft-0.4.1-0.4.2-pipeline"], by["draft-0.4.1-0.4.2-batch_norm"]
    assert (
        pipeline.kind == "pipeline" and "1 whole-program region(s) (sortformer)" in pipeline.reaches
    )
    assert norm.touches == ("aten._native_batch_norm_legit_no_training.default",)
    assert any("no probe of it does" in c for c in norm.conditions)
    assert norm.evidence == ("verify-pair-sortformer-0.4.1-0.4.2-0123456789abcdef0123",)
    [note] = draft.notes
    assert note.startswith("not drafted: mimi @main") and "aten.squeeze.dims" in note
