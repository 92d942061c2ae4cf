"""The converter's own tests hold the library: every fix record with an upstream pull
request lists that PR's test cases in `oracle/catalog/conformance.toml`, and each case names the
regimes that hold it, under the table the upstream test converts with, or says why none does."""

from __future__ import annotations

from pathlib import Path

import pytest

from inventory.release_notes import asset_regimes
from oracle import constructs
from oracle.catalog.conformance import ConformanceError, load_records
from oracle.catalog.fixes import load_fixes
from oracle.catalog.regimes import load_regimes

FIXES = {f.id: f for f in load_fixes()}
REGIMES = {r.id: r for r in load_regimes()}
# what an asset or pipeline record is probed with (release-notes): the asset probe per dtype
ASSET_REGIMES = {r.id for r in asset_regimes()}
RECORDS = load_records()
CASES = [(r, c) for r in RECORDS for c in r.cases]


def test_every_record_with_an_upstream_pr_lists_its_tests_once():
    listed = [r.fix for r in RECORDS]
    assert len(listed) == len(set(listed)), "a record is listed twice"
    assert set(listed) == {f.id for f in FIXES.values() if f.upstream}


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.fix)
def test_a_record_has_cases_or_says_why_not(record):
    assert bool(record.cases) != bool(record.pending), (
        f"#{record.fix}: a record has re-typed cases or a `pending` reason, not both or neither"
    )
    for case in record.cases:
        assert case.test in record.tests, f"#{record.fix}: {case.test} is not among its tests"
    # every test function the record lists is held by a case, or said not to test its change,
    # once its cases are written
    unrelated = record.unrelated_tests()
    if record.cases:
        assert {c.test for c in record.cases} | set(unrelated) == set(record.tests), (
            f"#{record.fix}: a listed test is held by no case and no `unrelated` group"
        )
    else:
        assert not record.unrelated, f"#{record.fix}: a pending record has no unrelated groups"
    assert len(record.tests) == len(set(record.tests)), f"#{record.fix}: a test listed twice"


@pytest.mark.parametrize(
    ("record", "case"), CASES, ids=[f"{r.fix}-{c.name}-{i}" for i, (r, c) in enumerate(CASES)]
)
def test_every_case_has_a_regime_of_its_record_under_its_table(record, case):
    if case.unmapped:
        assert not case.regimes, "a case is held by regimes or says why none holds it"
        return
    assert case.regimes, f"{case.test} ({case.params}): no regime and no `unmapped` reason"
    fix = FIXES[record.fix]
    # a location test is an asset record's: its library answer is the asset probe's load checks
    assert (case.checks == "locations") == (not fix.record_kind.compares_programs), (
        f"{case.test}: `locations` cases belong to asset records, and only those"
    )
    if not fix.record_kind.names_constructs:
        # a record without constructs is probed with the asset probe, so its cases are too
        assert set(case.regimes) <= ASSET_REGIMES, f"{case.test}: not an asset probe regime"
        return
    for rid in case.regimes:
        assert rid in REGIMES, f"{case.test}: no regime {rid} in oracle/catalog/regimes.toml"
        assert REGIMES[rid].construct in fix.constructs, (
            f"{rid} probes {REGIMES[rid].construct}, which #{fix.id} does not touch"
        )
        assert constructs.has_probe(REGIMES[rid].construct)
    if case.keep:
        # the library holds the case under the upstream test's own table: some regime keeps
        # the same ops out of its decomposition table
        kept = [
            rid for rid in case.regimes if set(case.keep) <= set(REGIMES[rid].spec.pipeline.keep)
        ]
        assert kept, f"{case.test} ({case.params}): no regime keeps {case.keep} out of its table"
    if case.checks == "ir":
        assert case.ir_has or case.ir_lacks or case.aten_has, "an IR case says what it reads"


def test_a_misspelt_kept_op_is_one_line(tmp_path: Path):
    bad = tmp_path / "conformance.toml"
    bad.write_text(
        '[[record]]\nfix = "29"\ncommits = []\ntests = ["t.py::f"]\n'
        '[[record.case]]\ntest = "t.py::f"\nparams = "p"\ncount = 1\n'
        'regimes = ["pad/reflect-1d-kept"]\nkeep = ["reflection_pad1d"]\n'
        'checks = "numerical"\n'
    )
    with pytest.raises(ConformanceError, match=r"keep must be a list of aten overloads"):
        load_records(bad)


def _unrelated_file(tmp_path: Path, group: str) -> Path:
    path = tmp_path / "conformance.toml"
    path.write_text(
        '[[record]]\nfix = "56"\ncommits = []\n'
        'tests = ["t.py::TestA::test_a", "t.py::TestA::test_b", "u.py::test_c"]\n'
        '[[record.case]]\ntest = "t.py::TestA::test_a"\nparams = "p"\ncount = 1\n'
        'unmapped = "why"\nkeep = []\nchecks = "ir"\n' + group
    )
    return path


def test_an_unrelated_group_covers_the_tests_no_case_holds(tmp_path: Path):
    (record,) = load_records(
        _unrelated_file(
            tmp_path,
            '[[record.unrelated]]\ntests = ["t.py::*"]\nwhy = "header patterns"\n'
            '[[record.unrelated]]\ntests = ["u.py::test_c"]\nwhy = "docs"\n',
        )
    )
    # test_a matches the first pattern but a case holds it: it is not unrelated
    assert record.unrelated_tests() == {
        "t.py::TestA::test_b": "header patterns",
        "u.py::test_c": "docs",
    }


def test_an_unrelated_pattern_that_matches_nothing_is_one_line(tmp_path: Path):
    with pytest.raises(
        ConformanceError,
        match=r"unrelated 1: 't.py::TestA::test_z' matches "
        r"none of the record's tests that no case holds",
    ):
        load_records(
            _unrelated_file(
                tmp_path, '[[record.unrelated]]\ntests = ["t.py::TestA::test_z"]\nwhy = "w"\n'
            )
        )
    # nor one that matches only a test a case holds
    with pytest.raises(ConformanceError, match="matches none"):
        load_records(
            _unrelated_file(
                tmp_path, '[[record.unrelated]]\ntests = ["t.py::TestA::test_a"]\nwhy = "w"\n'
            )
        )
    with pytest.raises(ConformanceError, match=r"unknown key 'reason'"):
        load_records(
            _unrelated_file(tmp_path, '[[record.unrelated]]\ntests = ["u.py::*"]\nreason = "w"\n')
        )


def _script():
    import importlib.util

    path = Path(__file__).resolve().parents[3] / "scripts" / "conformance.py"
    spec = importlib.util.spec_from_file_location("conformance_script", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_library_reproduces_an_upstream_outcome_only_with_the_matching_verdict():
    from inventory.verdict import ProbeVerdict, Reexport, Verdict

    reproduces = _script().reproduces

    def v(verdict, reexport=Reexport.NO):
        return ProbeVerdict(verdict, reexport, "")

    assert reproduces("fails", v(Verdict.OLD_CANNOT_CONVERT, Reexport.INCONCLUSIVE))
    assert not reproduces("fails", v(Verdict.SAME_PROGRAM))
    assert reproduces("wrong", v(Verdict.VALUES_MOVE, Reexport.REQUIRED))
    assert not reproduces("wrong", v(Verdict.VALUES_MOVE, Reexport.OPTIONAL))
    assert reproduces("same program", v(Verdict.SAME_PROGRAM))
    assert not reproduces("same program", v(Verdict.VALUES_IDENTICAL, Reexport.OPTIONAL))
    # an old program that changes but is right: any answer but a failure or a required re-export
    assert reproduces("changes, right", v(Verdict.SAME_PROGRAM))
    assert reproduces("changes, right", v(Verdict.VALUES_IDENTICAL, Reexport.OPTIONAL))
    assert not reproduces("changes, right", v(Verdict.VALUES_MOVE, Reexport.REQUIRED))
    assert not reproduces("changes, right", v(Verdict.OLD_CANNOT_CONVERT, Reexport.INCONCLUSIVE))
    assert not reproduces("new fails", v(Verdict.NEW_CANNOT_CONVERT, Reexport.INCONCLUSIVE))


def test_load_checks_reproduce_a_location_test_only_with_the_matching_loads():
    agree = _script().loads_reproduce
    # the old release writes locations the test refuses: its asset must not load on the fixed
    # release's runtime, and the fixed release's must
    assert agree("wrong", old_loads=False, new_loads=True)
    assert not agree("wrong", old_loads=True, new_loads=True)
    assert not agree("wrong", old_loads=False, new_loads=False)
    # an old release already right must load there too
    assert agree("same program", old_loads=True, new_loads=True)
    assert not agree("same program", old_loads=False, new_loads=True)
    assert not agree("fails", old_loads=False, new_loads=True)


def test_the_table_counts_unrelated_test_functions_apart_from_cases():
    rows = [
        {"fix": "28", "status": "conforms", "count": 2, "old": "wrong", "new_right": True},
        {"fix": "28", "status": "unmapped", "count": 3},
        {"fix": "28", "status": "unrelated", "why": "dsl", "tests": ["a", "b", "c", "d"]},
    ]
    line = _script().table(rows).splitlines()[-1]
    assert line == "| #28 | 5 | 2 | 3 | 4 | 0 | 2 | 0 | 0 | 2 | 2 of 2 |"


def test_an_unknown_fix_is_one_line_and_exit_2(capsys):
    assert _script().main(["--fix", "999"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: no conformance record for fix '999' (oracle/catalog/conformance.toml)"


def test_a_location_is_read_by_what_its_printed_form_holds():
    from oracle.workers.location_worker import kind_of

    assert (
        kind_of('loc(fused<{call_stack = ["M$1"], identifiers = ["add"]}>["m.py":5:0])') == "fused"
    )
    # 0.4.1's debuginfo location names the call stack it is "fused with": still debuginfo
    assert (
        kind_of(
            '#debuginfo.location<loc("m.py":0:0) in @main fused with [<loc("a.py":4:0) in @main>]>'
        )
        == "debuginfo"
    )
    assert kind_of('loc("coreai"("op_id":13:0))') == "other"


def test_the_location_worker_reads_fused_locations_in_0_4_0_and_debuginfo_in_0_4_1(env, tmp_path):
    """The #28 cases' upstream outcome, read off the real converters: 0.4.0's default writes
    fused call-stack locations, 0.4.1's a debuginfo location on every op (a one-block probe)."""
    import json
    import subprocess

    spec = {
        "construct": "asset_hierarchy",
        "params": {"depth": 1, "channels": 4, "length": 8},
        "dtype": "float32",
        "seed": 0,
    }
    worker = Path(__file__).resolve().parents[3] / "oracle" / "workers" / "location_worker.py"
    answers = {}
    for release in ("0.4.0", "0.4.1"):
        done = subprocess.run(
            [str(env(release).python), str(worker), json.dumps(spec), str(tmp_path / release)],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        answers[release] = json.loads(done.stdout.strip().splitlines()[-1])
    old, new = answers["0.4.0"], answers["0.4.1"]
    assert old["ok"] and new["ok"]
    assert old["counts"]["fused"] > 0 and old["counts"]["debuginfo"] == 0
    assert old["module"] == "fused"
    assert new["counts"] == {"debuginfo": new["ops"], "fused": 0, "other": 0}
    assert new["module"] == "debuginfo"
    assert (tmp_path / "0.4.1" / "emitted.located.mlir").read_text().count("#debuginfo") > 0


def test_a_run_of_some_records_keeps_the_stored_rows_of_the_others(tmp_path):
    """`scripts/conformance --fix 56` rewrites its step's evidence file: the rows of the step's
    other records are kept from the stored file (they used to be dropped), in the data's order;
    a record gone from the data is dropped with its rows."""
    import json

    path = tmp_path / "conformance-0.4.1-0.4.2.json"
    path.write_text(
        json.dumps(
            {
                "cases": [
                    {"fix": "40", "test": "a", "status": "conforms"},
                    {"fix": "56", "test": "old", "status": "differs"},
                    {"fix": "gone", "test": "x", "status": "conforms"},
                    {"fix": "23", "test": "b", "status": "conforms"},
                ]
            }
        )
    )
    rows = _script().kept_rows(
        path, [{"fix": "56", "test": "new", "status": "conforms"}], ["40", "23", "56"]
    )
    assert [(r["fix"], r["test"]) for r in rows] == [("40", "a"), ("23", "b"), ("56", "new")]
    # no stored file: only what ran
    assert _script().kept_rows(tmp_path / "none.json", rows[-1:], ["56"]) == rows[-1:]
