"""What an answer rests on, op by op (inventory/coverage.py): the census a trace records, split
into ops probed at the bundle's instances, ops a stored whole-program check covers and ops no
check covers; the probe side read from a probe's own exported graph. The real answers, with the
real trace and probes, are held in tests/inventory/trace/test_own_bundle.py."""

from __future__ import annotations

from pathlib import Path

import torch

from inventory.coverage import Coverage, census, coverage, graph_ops, short
from inventory.trace.facts import graph_facts

TRACE = {
    "facts": {
        "aten_ops": 9,
        "ops": {"aten.mm.default": 4, "aten.add.Tensor": 3, "aten.gelu.default": 1},
    }
}


class _Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.up = torch.nn.Linear(4, 8)
        self.down = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(torch.nn.functional.gelu(self.up(x)))


def _exported() -> torch.export.ExportedProgram:
    return torch.export.export(_Mlp(), (torch.zeros(2, 4),)).run_decompositions()


def test_the_trace_census_counts_every_operator_and_the_probe_graph_reads_the_same_names(
    tmp_path: Path,
):
    ep = _exported()
    facts = graph_facts(ep)
    ops = facts["ops"]
    assert ops["aten.gelu.default"] == 1 and sum(ops.values()) == facts["aten_ops"]
    # a probe's aten.txt is `str(ep.graph)`, as the worker writes it: read back to the same
    # names the census uses
    (tmp_path / "aten.txt").write_text(str(ep.graph))
    assert graph_ops(tmp_path / "aten.txt") == set(ops)
    assert graph_ops(tmp_path / "missing.txt") == set()


def test_each_op_is_probed_checked_whole_or_not_covered():
    c = coverage(TRACE, {"aten.mm.default"}, False, ("0.4.1->0.4.2",), "verify-it", "trace-it")
    assert c.probed == {"aten.mm.default": 4}
    assert c.not_covered == {"aten.add.Tensor": 3, "aten.gelu.default": 1}
    assert c.whole == {} and not c.complete and c.total == 8
    assert c.cell() == "50% probed, 0% whole, 50% not covered of 8 ops"
    assert c.line("mine") == (
        "mine: coverage: 50% probed, 0% whole, 50% not covered of 8 ops; not covered: "
        "add.Tensor x3, gelu x1; `verify-it` checks them"
    )
    whole = coverage(TRACE, {"aten.mm.default"}, True, ("0.4.1->0.4.2",), "verify-it", "trace-it")
    assert whole.whole == {"aten.add.Tensor": 3, "aten.gelu.default": 1}
    assert whole.not_covered == {} and whole.complete
    assert Coverage.from_json(c.to_json()) == c and Coverage.from_json(whole.to_json()) == whole


def test_without_a_census_the_coverage_says_the_ops_were_not_counted_and_how_to_count_them():
    c = coverage(
        {"facts": {"aten_ops": 9}}, {"aten.mm.default"}, False, (), "verify-it", "trace-it"
    )
    assert census({"facts": {"aten_ops": 9}}) is None
    assert c.census is None and not c.complete and c.cell() == "ops not counted"
    assert "`trace-it` counts its ops" in c.line("mine")
    assert c.to_json()["counted"] is False and c.to_json()["ops"] is None
    assert Coverage.from_json(c.to_json()) == c
    # a whole-program check of every step covers every op, counted or not
    whole = coverage({"facts": {}}, set(), True, ("0.4.1->0.4.2",), "verify-it", "trace-it")
    assert whole.complete and whole.cell() == "ops not counted, all checked whole"
    assert Coverage.from_json(whole.to_json()) == whole


def test_the_line_names_the_largest_uncovered_kinds_first():
    many = {"facts": {"ops": {f"aten.op{n}.default": n for n in range(1, 7)}}}
    c = coverage(many, set(), False, ("0.4.1->0.4.2",), "verify-it", "trace-it")
    assert "not covered: op6 x6, op5 x5, op4 x4 and 3 more kind(s)" in c.line("b")
    assert short("aten.mm.default") == "mm" and short("prims.iota.default") == "prims.iota.default"


def test_every_shipped_bundle_records_the_census_its_coverage_is_counted_over():
    """The shipped registry's recipe traces keep their op census (`trace --write`): without it
    every plan 'no' of the bundle is `unchecked` for 'ops not counted'. The census is the
    trace's own operator count: each op a call of the graph, so never more than its aten ops."""
    from inventory.registry import load_registry

    for bundle in load_registry():
        ops = census(bundle.trace)
        assert ops, f"{bundle.name}: no op census; re-trace it with --write"
        facts = bundle.trace["facts"]
        assert 0 < sum(ops.values()) <= facts["aten_ops"], bundle.name
        assert set(facts["softmax"]) <= {"float16", "float32", "bfloat16"}
        softmax = sum(n for k, n in ops.items() if k in ("aten._softmax.default",))
        assert softmax == sum(facts["softmax"].values()), bundle.name
