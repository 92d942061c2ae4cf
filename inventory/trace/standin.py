"""A stand-in's stated differences from the recipe trace, as data, and the check that keeps them
true.

Where the recipe's own trace is the registry's authority (`trace.origin = "recipe"`), a stand-in
target built from public packages (`[bundles.X.standin]`) is what CI can trace without the recipe's
checkout. It does not give the same graph, so the registry states how it differs:

* `[[bundles.X.standin.differences]]`: instance groups only the recipe trace has
  (`recipe_only`) and only the stand-in has (`standin_only`), each `{kind, count, dtype, params}`,
  with `why`;
* `[bundles.X.standin.facts]`: graph facts (`inventory.trace.facts`) whose values differ,
  `{fact = {standin = ..., recipe = ...}}`; every other recorded fact must be equal.

The check: the stand-in's fresh trace, minus `standin_only`, plus `recipe_only`, is exactly the
recorded recipe instances (module paths aside: they are named differently), and each fact is the
recorded recipe fact or its stated stand-in value. A stated difference that no longer holds is
reported as stale too.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

KEYS = ("kind", "count", "dtype", "params")
# The op census (`inventory.trace.facts`) is the recipe's, what coverage is counted over; a
# stand-in's differs wherever its op count does (stated by `aten_ops`), so it is not compared.
CENSUS = "ops"


def key(instance: dict[str, Any]) -> str:
    """An instance group as the oracle uses it: kind, count, dtype, parameters."""
    return json.dumps({k: instance.get(k) for k in KEYS}, sort_keys=True)


def check(
    bundle: str,
    standin: dict[str, Any],
    traced: list[dict[str, Any]],
    traced_facts: dict[str, Any],
    recorded: list[dict[str, Any]],
    recorded_facts: dict[str, Any],
) -> list[str]:
    """What keeps `standin trace + stated differences == recorded recipe trace` from holding,
    one line each (empty: it holds)."""
    out: list[str] = []
    have = Counter(key(i) for i in traced)
    for n, diff in enumerate(standin.get("differences", []), start=1):
        for inst in diff.get("standin_only", []):
            k = key(inst)
            if have[k] <= 0:
                out.append(
                    f"{bundle}: stated difference {n} says the stand-in has {k}, its trace does not"
                )
            have[k] -= 1
        for inst in diff.get("recipe_only", []):
            have[key(inst)] += 1
    want = Counter(key(i) for i in recorded)
    got = +have
    out += [
        f"{bundle}: recorded recipe instance not given by the stand-in and its stated "
        f"differences: {k}"
        for k in sorted((want - got).elements())
    ]
    out += [
        f"{bundle}: the stand-in and its stated differences give an instance the recipe "
        f"trace does not record: {k}"
        for k in sorted((got - want).elements())
    ]
    stated = standin.get("facts", {})
    for fact in sorted((set(traced_facts) & set(recorded_facts) | set(stated)) - {CENSUS}):
        if fact in stated:
            want_standin, want_recipe = stated[fact].get("standin"), stated[fact].get("recipe")
        else:
            want_standin = want_recipe = recorded_facts.get(fact)
        if recorded_facts.get(fact) != want_recipe:
            out.append(
                f"{bundle}: fact {fact}: the recipe trace records "
                f"{recorded_facts.get(fact)!r}, the stated difference says {want_recipe!r}"
            )
        if traced_facts.get(fact) != want_standin:
            out.append(
                f"{bundle}: fact {fact}: the stand-in traces {traced_facts.get(fact)!r}, "
                + (
                    f"the stated difference says {want_standin!r}"
                    if fact in stated
                    else f"the recipe's is {want_recipe!r} and no difference is stated"
                )
            )
    return out


def derived(
    traced: list[dict[str, Any]],
    recorded: list[dict[str, Any]],
    traced_facts: dict[str, Any],
    recorded_facts: dict[str, Any],
) -> dict[str, Any]:
    """The differences a maintainer would have to state, computed (printed by a failing check so
    they can be reviewed and written down with a reason; never written by the tool)."""
    have = Counter(key(i) for i in traced)
    want = Counter(key(i) for i in recorded)
    by_key = {key(i): {k: i[k] for k in KEYS} for i in [*traced, *recorded]}
    facts = {
        f: {"standin": traced_facts.get(f), "recipe": recorded_facts.get(f)}
        for f in sorted(set(traced_facts) | set(recorded_facts))
        if f != CENSUS and traced_facts.get(f) != recorded_facts.get(f)
    }
    return {
        "standin_only": [by_key[k] for k in sorted((have - want).elements())],
        "recipe_only": [by_key[k] for k in sorted((want - have).elements())],
        "facts": facts,
    }
