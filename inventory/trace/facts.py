"""Graph facts a trace records beside the construct instances: what no construct probes but a
stand-in's difference from a recipe, or a pipeline step, is stated against.

* `aten_ops`: call_function nodes after the decompositions;
* `ops`: the census of those that are operators, {"aten.mm.default": count}: what an answer's
  coverage is counted over (`inventory/coverage.py`: each op kind probed, checked whole, or not
  covered);
* `softmax`: softmax operand dtypes, {dtype: count} (transformers upcasts softmax to fp32 and
  casts back; the recipes stay in fp16);
* `mutated_inputs`: inputs the graph writes (`copy_`), which a recipe passes as `state_names`;
* `auto_functionalized`: nodes coreai-models' `remove_functionalization` would rewrite (0: the
  step changes nothing the converter sees).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

SOFTMAX_OPS = ("aten._softmax.default", "aten.softmax.int", "aten._safe_softmax.default")


def graph_facts(ep: Any) -> dict[str, Any]:
    from torch._higher_order_ops.auto_functionalize import (
        AutoFunctionalized,
        AutoFunctionalizedV2,
    )

    from oracle.constructs._graph import dtype, target_name

    calls = [n for n in ep.graph.nodes if n.op == "call_function"]
    softmax = Counter(dtype(n.args[0]) for n in calls if target_name(n) in SOFTMAX_OPS)
    functionalized = sum(
        isinstance(n.target, AutoFunctionalized | AutoFunctionalizedV2) for n in calls
    )
    ops = Counter(target_name(n) for n in calls if callable(getattr(n.target, "name", None)))
    return {
        "aten_ops": len(calls),
        "ops": dict(sorted(ops.items())),
        "softmax": dict(sorted(softmax.items())),
        "mutated_inputs": len(ep.graph_signature.user_inputs_to_mutate),
        "auto_functionalized": functionalized,
    }
