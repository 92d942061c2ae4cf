"""A verify miniature keeps every distinct construct instance of the full target.

`inventory verify` converts a whole bundle module; where the full module is too big (sam3: 840M
parameters) it converts a miniature instead, built with `[bundles.X.verify.build]` keyword
arguments that drop repeated layers only. The miniature stands for the full module only if the
two traces give the same set of distinct instances (kind, dtype, parameters; counts and module
paths aside): that is what this test holds it to.
"""

from __future__ import annotations

import pytest

from inventory.registry import load_registry
from inventory.verify.forms import distinct

MINIATURES = [b for b in load_registry() if b.verify.get("form") == "miniature"]


def test_the_shipped_registry_states_its_miniatures():
    assert [b.name for b in MINIATURES] == ["sam3"]


@pytest.mark.parametrize("bundle", MINIATURES, ids=lambda b: b.name)
def test_a_miniature_keeps_every_distinct_instance(bundle, traced):
    build = bundle.verify["build"]

    full = distinct(traced(bundle).instances)
    mini = distinct(traced(bundle, build).instances)

    missing, extra = sorted(full - mini), sorted(mini - full)
    assert not missing and not extra, (
        f"the {bundle.name} miniature {build!r} does not keep the full target's distinct instances "
        f"({len(missing)} missing, {len(extra)} extra):\n"
        + "\n".join([f"  missing from the miniature: {key}" for key in missing]
                    + [f"  only in the miniature: {key}" for key in extra]))
