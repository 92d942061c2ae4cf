"""Mapping the differing lines of two whole programs back to composites, modules and constructs
(inventory.verify.regions), on IR text in the printed form of coreai-torch 0.4.x with debug
locations. No converter runs here: the end-to-end check is tests/inventory/verify/test_verify.py."""

from __future__ import annotations

from inventory.verify.regions import Located, Side, composite, graphs_of, regions
from oracle.compare.normalisation import normalise

PROGRAM = """\
module {
  coreai.graph private noinline @batch_norm_SUFFIX(%arg0: tensor<2xf16>) -> tensor<2xf16> {
    %0 = coreai.OP %arg0 : tensor<2xf16> -> tensor<2xf16> loc(#loc3)
    coreai.output %0 : tensor<2xf16> loc(#loc3)
  }
  coreai.graph @main(%arg0: tensor<2xf16>) -> tensor<2xf16> {
    %7 = coreai.invoke @batch_norm_SUFFIX(%arg0) : (tensor<2xf16>) -> tensor<2xf16> loc(#loc4)
    %8 = coreai.ACT %7 : tensor<2xf16> -> tensor<2xf16> loc(#loc5)
    coreai.output %8 : tensor<2xf16> loc(#loc5)
  }
}
#loc = loc("model.py":0:0)
#loc1 = loc("model.py":12:0)
#loc2 = #debuginfo.location<#loc1 in @main>
#loc3 = #debuginfo.location<#loc in @batch_norm>
#loc4 = #debuginfo.location<#loc1 in @main fused with [#loc2] metadata = [#metadata1, #metadata2]>
#loc5 = #debuginfo.location<#loc1 in @main metadata = [#metadata3]>
#metadata1 = #debuginfo.metadata<"sources": [{identifiers = ["bn_1"], name = "torch"}]>
#metadata2 = #debuginfo.metadata<"call_stack": ["BatchNorm1d$2", "Block$1"]>
#metadata3 = #debuginfo.metadata<"sources": [{identifiers = ["relu_2", "add_3"]}]>
"""
NODES = {
    "bn_1": {
        "target": "aten._native_batch_norm_legit_no_training.default",
        "module": "block.conv.norm",
        "kind": "batch_norm",
    },
    "relu_2": {"target": "aten.relu.default", "module": "block.act"},
    "add_3": {"target": "aten.add.Tensor", "module": "block"},
}


def side(suffix: str, op: str = "sqrt", act: str = "relu") -> Side:
    text = PROGRAM.replace("SUFFIX", suffix).replace("OP", op).replace("ACT", act)
    # what the worker prints without debug info: no alias definitions (the `loc(...)` of each
    # line normalisation drops anyway)
    plain = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return Side(normalise(plain).splitlines(), Located(text), NODES)


def test_located_lines_align_with_the_normalised_program_and_resolve_their_aten_nodes():
    s = side("abcdefgh")
    assert s.aligned
    invoke = next(i for i, line in enumerate(s.normalised) if "coreai.invoke" in line)
    assert s.located.identifiers(invoke) == ["bn_1"]
    relu = next(i for i, line in enumerate(s.normalised) if "coreai.relu" in line)
    assert s.located.identifiers(relu) == ["relu_2", "add_3"]
    assert s.located.identifiers(0) == []  # `module {` has no location


def test_graphs_and_composite_stems():
    s = side("abcdefgh")
    assert graphs_of(s.normalised)[2] == "batch_norm_G1"
    assert graphs_of(s.normalised)[-2] == "main"
    assert composite("batch_norm_G1") == "batch_norm"
    assert composite("layer_norm_G12_spec_tensor_1x2") == "layer_norm"
    assert composite("main") == ""


def test_identical_programs_under_different_random_names_have_no_region():
    assert regions(side("abcdefgh"), side("qwertyui")) == []


def test_a_changed_composite_body_is_mapped_through_its_call_sites():
    [region] = regions(side("abcdefgh"), side("qwertyui", op="rsqrt"))
    assert (region.graph, region.composite, region.calls) == ("batch_norm_G1", "batch_norm", 1)
    assert region.lines_old == [3] and region.lines_new == [3]
    assert region.constructs == ["batch_norm"]
    assert region.modules == ["block.conv.norm"]
    assert region.ops == ["aten._native_batch_norm_legit_no_training.default"]


def test_a_changed_main_op_is_mapped_through_its_own_location():
    [region] = regions(side("abcdefgh"), side("abcdefgh", act="tanh"))
    assert (region.graph, region.composite) == ("main", "")
    assert region.modules == ["block.act", "block"]
    assert region.constructs == []  # no detector claims a relu: no construct to credit
    assert region.to_json()["lines_old"] == ["8"]


def test_a_side_whose_lines_do_not_align_is_reported_unlocated():
    old, new = side("abcdefgh"), side("abcdefgh", act="tanh")
    broken = Side(new.normalised + ["}"], new.located, NODES)
    [region] = regions(old, broken)
    assert region.located is False
