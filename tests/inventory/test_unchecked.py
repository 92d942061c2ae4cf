"""The `unchecked` level: an answer that found nothing moving, but did not reach the bundle's own
program, is never a "no" and never exits 0 unless the policy says it may (and the answer says
so). The sam3 case that asks for it, through the real CLI, is in
tests/inventory/verify/test_verify.py."""

from __future__ import annotations

from pathlib import Path

from inventory.coverage import Coverage, coverage
from inventory.errors import ExitCode, exit_for_reexport
from inventory.plan import BundlePlan, Plan, plan_summary
from inventory.policy import POLICY_FILE, accepted_unchecked, load_policy
from inventory.summary import BundleLine, summarise
from inventory.verdict import Reexport, worst

TRACE = {"facts": {"ops": {"aten.mm.default": 3, "aten.gelu.default": 1}}}


def test_unchecked_ranks_below_a_failed_run_and_above_a_change_within_tolerance():
    assert worst(["no", "unchecked"]) == Reexport.UNCHECKED
    assert worst(["optional", "unchecked"]) == Reexport.UNCHECKED
    assert worst(["unchecked", "inconclusive"]) == Reexport.INCONCLUSIVE
    assert worst(["unchecked", "required"]) == Reexport.REQUIRED


def test_unchecked_exits_5_unless_the_policy_accepts_it():
    assert exit_for_reexport("unchecked") == ExitCode.UNCHECKED
    assert int(ExitCode.UNCHECKED) == 5
    assert exit_for_reexport("unchecked", accept_unchecked=True) == ExitCode.OK
    # the policy key accepts nothing else
    assert exit_for_reexport("inconclusive", accept_unchecked=True) == ExitCode.INCONCLUSIVE
    assert exit_for_reexport("required", accept_unchecked=True) == ExitCode.FINDING


def test_the_summary_counts_unchecked_apart():
    summary = summarise(
        [
            BundleLine("a", "no", "-"),
            BundleLine("b", "unchecked", "core-b2"),
            BundleLine("c", "no", "-"),
        ]
    )
    assert summary.counts["unchecked"] == 1 and summary.counts["no"] == 2
    assert (
        summary.line() == "0 required, 0 inconclusive, 1 unchecked, 0 optional, 2 no of 3 bundles"
    )
    assert [b.bundle for b in summary.bundles][0] == "b"


def test_the_shipped_policy_does_not_accept_unchecked_and_a_policy_that_does_says_so(
    tmp_path: Path,
):
    assert load_policy().accept_unchecked is False
    assert accepted_unchecked(load_policy(), ["sam3"]) == []
    accepting = tmp_path / "policy.toml"
    accepting.write_text(
        POLICY_FILE.read_text().replace("accept_unchecked = false", "accept_unchecked = true")
    )
    policy = load_policy(None, accepting)
    assert policy.accept_unchecked is True
    (line,) = accepted_unchecked(policy, ["sam3", "mimi"])
    assert "accepted by the policy" in line and "sam3, mimi" in line
    assert accepted_unchecked(policy, []) == []


def _plan(cover: Coverage | None) -> BundlePlan:
    """A bundle no record and no sweep found anything for: its level is what coverage allows."""
    return BundlePlan("b", "0.4.1", False, (), coverage=cover)


def test_a_plan_says_no_only_when_every_op_was_probed_or_checked_whole():
    steps = ("0.4.1->0.4.2",)
    partly = coverage(TRACE, {"aten.mm.default"}, False, steps, "verify-it", "trace-it")
    whole = coverage(TRACE, {"aten.mm.default"}, True, steps, "verify-it", "trace-it")
    probed = coverage(TRACE, {"aten.mm.default", "aten.gelu.default"}, False, steps, "v", "t")
    uncounted = coverage({"facts": {}}, set(), False, steps, "verify-it", "trace-it")
    assert _plan(partly).reexport == Reexport.UNCHECKED
    assert _plan(uncounted).reexport == Reexport.UNCHECKED
    uncounted_whole = coverage({"facts": {}}, set(), True, steps, "verify-it", "trace-it")
    assert _plan(uncounted_whole).reexport == Reexport.NO
    assert _plan(whole).reexport == Reexport.NO
    assert _plan(probed).reexport == Reexport.NO
    assert _plan(None).reexport == Reexport.NO  # no step compared: nothing to cover
    # the summary names what sets it: the coverage, with its cell
    (line,) = plan_summary(Plan("0.4.2", (_plan(partly),), ())).bundles
    assert line.level == "unchecked"
    assert line.reason == "coverage (75% probed, 0% whole, 25% not covered of 4 ops)"
