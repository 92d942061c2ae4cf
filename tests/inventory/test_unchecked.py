"""The `unchecked` level: an answer that found nothing moving, but did not reach the bundle's own
program, is never a "no" and never exits 0 unless the policy says it may (and the answer says
so). The sam3 case that asks for it, through the real CLI, is in
tests/inventory/verify/test_verify.py."""

from __future__ import annotations

from pathlib import Path

from inventory.errors import ExitCode, exit_for_reexport
from inventory.policy import POLICY_FILE, accepted_unchecked, load_policy
from inventory.summary import BundleLine, summarise
from inventory.verdict import Reexport, worst


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
