"""The converter's own tests hold the library (issue #30): every fix record with an upstream pull
request lists that PR's test cases in `oracle/conformance.toml`, and each case names the regimes
that hold it, under the table the upstream test converts with, or says why none does."""

from __future__ import annotations

from pathlib import Path

import pytest

from oracle import constructs
from oracle.conformance import ConformanceError, load_records
from oracle.fixes import load_fixes
from oracle.regimes import load_regimes

FIXES = {f.id: f for f in load_fixes()}
REGIMES = {r.id: r for r in load_regimes()}
RECORDS = load_records()
CASES = [(r, c) for r in RECORDS for c in r.cases]


def test_every_record_with_an_upstream_pr_lists_its_tests_once():
    listed = [r.fix for r in RECORDS]
    assert len(listed) == len(set(listed)), "a record is listed twice"
    assert set(listed) == {f.id for f in FIXES.values() if f.upstream}


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.fix)
def test_a_record_has_cases_or_says_why_not(record):
    assert bool(record.cases) != bool(record.pending), (
        f"#{record.fix}: a record has re-typed cases or a `pending` reason, not both or neither")
    for case in record.cases:
        assert case.test in record.tests, f"#{record.fix}: {case.test} is not among its tests"
    # every test function the record lists is held by a case once its cases are written
    if record.cases:
        assert {c.test for c in record.cases} == set(record.tests)


@pytest.mark.parametrize(("record", "case"), CASES,
                         ids=[f"{r.fix}-{c.name}-{i}" for i, (r, c) in enumerate(CASES)])
def test_every_case_has_a_regime_of_its_record_under_its_table(record, case):
    if case.unmapped:
        assert not case.regimes, "a case is held by regimes or says why none holds it"
        return
    assert case.regimes, f"{case.test} ({case.params}): no regime and no `unmapped` reason"
    fix = FIXES[record.fix]
    for rid in case.regimes:
        assert rid in REGIMES, f"{case.test}: no regime {rid} in oracle/regimes.toml"
        assert REGIMES[rid].construct in fix.constructs, (
            f"{rid} probes {REGIMES[rid].construct}, which #{fix.id} does not touch")
        assert constructs.has_probe(REGIMES[rid].construct)
    if case.keep:
        # the library holds the case under the upstream test's own table: some regime keeps
        # the same ops out of its decomposition table
        kept = [rid for rid in case.regimes
                if set(case.keep) <= set(REGIMES[rid].spec.pipeline.keep)]
        assert kept, f"{case.test} ({case.params}): no regime keeps {case.keep} out of its table"
    if case.checks == "ir":
        assert case.ir_has or case.ir_lacks or case.aten_has, "an IR case says what it reads"


def test_a_misspelt_kept_op_is_one_line(tmp_path: Path):
    bad = tmp_path / "conformance.toml"
    bad.write_text('[[record]]\nfix = "29"\ncommits = []\ntests = ["t.py::f"]\n'
                   '[[record.case]]\ntest = "t.py::f"\nparams = "p"\ncount = 1\n'
                   'regimes = ["pad/reflect-1d-kept"]\nkeep = ["reflection_pad1d"]\n'
                   'checks = "numerical"\n')
    with pytest.raises(ConformanceError, match=r"keep must be a list of aten overloads"):
        load_records(bad)


def _script():
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "scripts" / "conformance.py"
    spec = importlib.util.spec_from_file_location("conformance_script", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
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


def test_an_unknown_fix_is_one_line_and_exit_2(capsys):
    assert _script().main(["--fix", "999"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: no conformance record for fix '999' (oracle/conformance.toml)"
