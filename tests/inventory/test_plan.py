"""`affected` across fixes, the ignore file, `plan` and `--baseline`, on the shipped registry."""

from __future__ import annotations

import json

import pytest
from cli import Ran, invoke

EXIT = {"no": 0, "optional": 0, "required": 1, "inconclusive": 3, "unchecked": 5}
LEVEL_OF_KEY = {"not_affected": "no"}  # a plan's list of a bundle's records, by their level


def run(*args: str) -> Ran:
    return invoke(*args, "-q")


def affected(fix: str, *extra: str) -> tuple[dict, Ran]:
    proc = run("affected", "--fix", fix, "--json", *extra)
    return json.loads(proc.stdout), proc


@pytest.mark.parametrize(("fix", "reexport"), [("40", "no"), ("54", "optional"), ("55", "no")])
def test_each_fix_answers_every_bundle_and_the_exit_code_follows(fix, reexport, matrix):
    ran = matrix.run_cli(("affected", "--fix", fix))
    data = ran.data["result"]
    assert len(data["bundles"]) == 5
    for b in data["bundles"]:
        assert b["chain"] and b["reason"]
        # a verdict that needed a measurement names its runtime
        measured = [p for p in b["probes"] if p["outputs"] != "not-run"]
        assert all(p["runtime"].startswith("linux-cpu, coreai-core") for p in measured)
    # the measured answer (every bundle's verdict is pinned in tests/golden/affected/)
    assert data["reexport"] == reexport
    assert ran.exit == EXIT[reexport]


def test_an_unknown_exporter_is_answered_as_the_oldest_release_and_says_so(matrix):
    data = matrix.run_cli(("affected", "--fix", "54")).data["result"]
    (b,) = [b for b in data["bundles"] if b["bundle"] == "lfm_audio"]
    assert b["exporter_recorded"] == "unknown" and b["exporter"] == "0.4.0"
    assert "assumed the oldest supported release" in b["chain"][0]


def test_the_ignore_file_accepts_a_risk_and_warns_about_stale_entries(tmp_path, matrix):
    ignore = tmp_path / "ignore.toml"
    ignore.write_text(
        '[[ignore]]\nfix = "54"\nbundle = "sortformer"\nreason = "accepted: retrain due"\n'
        'expires = "2999-01-01"\n'
        '[[ignore]]\nfix = "54"\nbundle = "ghost"\nreason = "typo"\n'
        '[[ignore]]\nfix = "54"\nbundle = "parakeet"\nreason = "old"\nexpires = "2001-01-01"\n'
    )
    document, proc = affected("54", "--ignore", str(ignore))
    data = document["result"]
    by = {b["bundle"]: b for b in data["bundles"]}
    assert by["sortformer"]["ignored"]["reason"] == "accepted: retrain due"
    assert by["parakeet"]["ignored"] is None  # expired: no longer applies
    warnings = " ".join(document["warnings"])
    assert "ghost matches nothing" in warnings and "expired on 2001-01-01" in warnings
    # parakeet and lfm_audio stay optional (the measured #54 answer); sortformer is ignored
    assert {b["bundle"]: b["reexport"] for b in data["bundles"] if not b["ignored"]} == {
        "parakeet": "optional",
        "lfm_audio": "optional",
        "mimi": "no",
        "sam3": "no",
    }
    assert data["reexport"] == "optional" and proc.returncode == 0


def test_plan_lists_every_fix_between_exporter_and_target_and_baseline_keeps_changes(
    tmp_path, matrix
):
    ran = matrix.run_cli(("plan", "--to", "0.4.2"))
    document = ran.data
    plan = document["result"]
    assert plan["to"] == "0.4.2"
    by = {b["bundle"]: b for b in plan["bundles"]}
    assert by["lfm_audio"]["exporter_assumed"] is True

    # sam3 (0.4.0) gets the 0.4.1 fixes too; parakeet (0.4.1) only those of 0.4.2
    def fixes(b: dict) -> set[str]:
        return {
            i["fix"]
            for k in ("required", "inconclusive", "unchecked", "optional", "not_affected")
            for i in b[k]
        }

    assert "13" in fixes(by["sam3"]) and "13" not in fixes(by["parakeet"])
    assert "40" in fixes(by["parakeet"]) and "79" not in fixes(by["parakeet"])
    # sam3's 0.4.0 asset does not load on 1.0.0b2/b3 (#28), which forces its re-export; whether
    # lfm_audio's does depends on its unrecorded exporter; #54 suggests one for three bundles;
    # sam3's dynamic views, built as the bundle builds them (.item() of a constant),
    # change in no step (the full answer is pinned in tests/golden/plan/0.4.2.json)
    assert plan["reexport"] == "required" and ran.exit == 1
    assert {b: [i["fix"] for i in by[b]["required"]] for b in by} == {
        "parakeet": [],
        "lfm_audio": [],
        "sortformer": [],
        "mimi": [],
        "sam3": ["28"],
    }
    assert [i["fix"] for i in by["lfm_audio"]["inconclusive"]] == ["28"]
    assert {b: [i["fix"] for i in by[b]["optional"]] for b in by} == {
        "parakeet": ["54"],
        "lfm_audio": ["54"],
        "sortformer": ["54"],
        "mimi": [],
        "sam3": [],
    }
    (thirteen,) = [i for i in by["sam3"]["not_affected"] if i["fix"] == "13"]
    assert thirteen["verdict"] == "same-program"

    baseline = tmp_path / "plan.json"
    baseline.write_text(json.dumps(document))  # the whole envelope is a baseline
    ran_same = run("plan", "--to", "0.4.2", "--json", "--baseline", str(baseline))
    same = json.loads(ran_same.stdout)["result"]
    assert all(
        not b[k]
        for b in same["bundles"]
        for k in ("required", "inconclusive", "unchecked", "optional", "not_affected")
    )
    # nothing changed: said in one line, exit 0, and every bundle keeps the plan's level
    assert same["changes"] == [] and ran_same.returncode == 0
    assert {b["bundle"]: b["reexport"] for b in same["bundles"]} == {
        b["bundle"]: b["reexport"] for b in plan["bundles"]
    }
    said = run("plan", "--to", "0.4.2", "--baseline", str(baseline))
    assert "no change since the baseline" in said.stdout and said.returncode == 0
    assert "mimi" not in said.stdout
    # pretend fix 40 used to be required for mimi: the plan now reports it as changed
    edited = json.loads(json.dumps(plan))  # the bare record is a baseline too
    mimi = next(b for b in edited["bundles"] if b["bundle"] == "mimi")
    for key in ("not_affected", "optional", "inconclusive"):
        moved = [i for i in mimi[key] if i["fix"] == "40"]
        mimi[key] = [i for i in mimi[key] if i["fix"] != "40"]
        mimi["required"] += moved
    baseline.write_text(json.dumps(edited))
    changed = json.loads(
        run("plan", "--to", "0.4.2", "--json", "--baseline", str(baseline)).stdout
    )["result"]
    mimi_now = next(b for b in changed["bundles"] if b["bundle"] == "mimi")
    listed = {
        i["fix"]
        for k in ("required", "inconclusive", "unchecked", "optional", "not_affected")
        for i in mimi_now[k]
    }
    assert listed == {"40"}
    # the change is the record's level now, which need not be the bundle's (mimi's is
    # `unchecked` where no whole-program check is stored, its record of fix 40 "no")
    (now,) = [
        LEVEL_OF_KEY.get(k, k)
        for k in ("required", "inconclusive", "unchecked", "optional", "not_affected")
        if any(i["fix"] == "40" for i in mimi_now[k])
    ]
    assert now != "required"
    (change,) = changed["changes"]
    assert change == {
        "bundle": "mimi",
        "fix": "40",
        "before": "required",
        "now": now,
    }
    shown = run("plan", "--to", "0.4.2", "--baseline", str(baseline))
    row = next(line for line in shown.stdout.splitlines() if "mimi" in line)
    assert "#40" in row and "required" in row and "sam3" not in shown.stdout
