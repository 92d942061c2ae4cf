"""The transformer-era probes (softmax, matmul, sdpa, silu, gelu, rms_norm, glu, rotary,
scaled_residual, cache_update, embedding) under a real release pair: each library regime
converts under both releases, its program is the one the lowering read unchanged ([[unchanged]]
in oracle/catalog/fixes.toml) says it is, it runs against torch within the policy, and its
exported graph holds the op kinds `plan`'s coverage counts it for."""

from __future__ import annotations

from pathlib import Path

import pytest

from inventory.coverage import graph_ops
from inventory.policy import load_policy
from inventory.verdict import judge
from oracle.catalog.fixes import load_unchanged
from oracle.catalog.regimes import load_regimes
from oracle.catalog.releases import version_key
from oracle.executors.comparison import compare

KINDS = (
    "softmax",
    "matmul",
    "sdpa",
    "silu",
    "gelu",
    "rms_norm",
    "glu",
    "rotary",
    "scaled_residual",
    "cache_update",
    "embedding",
)
REGIMES = [r for r in load_regimes() if r.construct in KINDS]
# the op kinds of a probe's exported graph that its construct is there to cover
HOLDS = {
    "softmax": {"aten._softmax.default"},
    "matmul/linear": {"aten.permute.default"},
    "matmul/matmul": {"aten.bmm.default", "aten.expand.default", "aten.view.default"},
    "sdpa": {"aten.scaled_dot_product_attention.default"},
    "silu": {"aten.silu.default"},
    "gelu": {"aten.gelu.default"},
    "rms_norm": {
        "aten.pow.Tensor_Scalar",
        "aten.mean.dim",
        "aten.rsqrt.default",
        "aten.mul.Tensor",
    },
    "glu": {"aten.slice.Tensor", "aten.sigmoid.default", "aten.mul.Tensor"},
    "rotary/half": {"aten.slice.Tensor", "aten.neg.default", "aten.cat.default", "aten.add.Tensor"},
    "scaled_residual": {"aten.mul.Tensor", "aten.add.Tensor"},
    "embedding": {"aten.embedding.default"},
    "cache_update/shift": {"aten.slice.Tensor", "aten.cat.default"},
    "cache_update/history": {"aten.cat.default", "aten.slice.Tensor"},
    "cache_update/overlap_add": {
        "aten.slice.Tensor",
        "aten.add.Tensor",
        "aten.cat.default",
        "aten.sub.Tensor",
        "aten.unsqueeze.default",
    },
    "rotary/pairwise": {
        "aten.slice.Tensor",
        "aten.neg.default",
        "aten.squeeze.dims",
        "aten.unsqueeze.default",
        "aten.cat.default",
        "aten.add.Tensor",
    },
}


def test_every_kind_here_is_read_unchanged_over_the_pair():
    read = {u.construct: (u.since, u.through) for u in load_unchanged()}
    for kind in KINDS:
        since, through = read[kind]
        assert version_key(since) <= version_key("0.4.1")
        assert version_key(through) >= version_key("0.4.2")


@pytest.mark.parametrize("regime", REGIMES, ids=[r.id for r in REGIMES])
def test_the_probe_converts_under_both_releases_and_is_unchanged(regime, env, pool):
    result = compare(regime.spec, env("0.4.1"), env("0.4.2"), pool)
    assert result.old.ok and result.new.ok, (result.old.error, result.new.error)
    assert result.shipped == "identical"
    verdict = judge(result, load_policy())
    assert verdict.reexport == "no", verdict.reason
    for side in (result.old, result.new):
        aten = Path(side.files["aten"])
        ops = graph_ops(aten if aten.is_absolute() else Path(result.evidence) / aten)
        form = regime.spec.params.get("form")
        by_form = regime.construct in ("matmul", "rotary", "cache_update")
        wanted = HOLDS[f"{regime.construct}/{form}" if by_form else regime.construct]
        assert wanted <= ops, sorted(ops)
        if regime.construct == "matmul" and form == "linear":
            assert ops & {"aten.mm.default", "aten.addmm.default"}


# 0.4.1 changed replace_binary_ops and replace_unary_ops (a `pow` and a `round` entry) and the
# lines around sdpa's table entry; the kinds those reach are converted across that step too
ACROSS_041 = [
    r
    for r in REGIMES
    if r.construct
    in ("sdpa", "silu", "rms_norm", "glu", "rotary", "scaled_residual", "cache_update")
    and r.name != "pairwise-upcast-fp16"
]


@pytest.mark.parametrize("regime", ACROSS_041, ids=[r.id for r in ACROSS_041])
def test_the_probe_is_the_same_program_across_the_unary_and_binary_change(regime, env, pool):
    """replace_sdpa and its _sdpa_* helpers did not change in 0.4.1 (coreai-torch#28 only
    loosened its test's fp32 tolerance), the entries added to the unary and binary tables are
    not the ops of these kinds (silu, sigmoid, neg, mul, add, sub), and replace_cat's change
    reshapes an input with a dynamic axis, which no rotary regime and no static state's update
    has: each regime's shipped program is the same under 0.4.0 and 0.4.1."""
    result = compare(regime.spec, env("0.4.0"), env("0.4.1"), pool)
    assert result.old.ok and result.new.ok, (result.old.error, result.new.error)
    assert result.shipped == "identical"
    assert judge(result, load_policy()).reexport == "no"


PAIRWISE = [r for r in REGIMES if r.construct == "rotary" and r.name == "pairwise-upcast-fp16"]


@pytest.mark.parametrize("regime", PAIRWISE, ids=[r.id for r in PAIRWISE])
def test_the_pairwise_rotary_changes_only_in_the_optimized_program_at_the_b2_pin(regime, env, pool):
    """The lowering emits the same program under 0.4.0 and 0.4.1 (its functions did not change);
    the shipped program differs: 0.4.0's optimize() (coreai-core 1.0.0b1) negates the unbound
    pair in place, 1.0.0b2's (the core-b2 pipeline record) keeps the reshapes around the
    negation. The outputs are bit-identical."""
    result = compare(regime.spec, env("0.4.0"), env("0.4.1"), pool)
    assert result.old.ok and result.new.ok, (result.old.error, result.new.error)
    assert result.emitted == "identical"
    assert result.shipped == "differs"
    assert result.outputs == "bit-identical"
