"""A registry regime's id names one probe: the sweep keys its outcomes by it and `bisect --only`
takes it, so two different traced instances under one id would leave one of them unswept."""

from __future__ import annotations

from dataclasses import replace

import pytest

from inventory.policy import load_policy
from inventory.registry import load_registry
from inventory.sweep import registry_regimes, run_regimes
from oracle.catalog import Regime, load_catalog


def test_every_shipped_instance_has_an_id_of_its_own() -> None:
    """The shipped registry's distinct instances, each under a distinct id made of its holders
    and its label alone (sortformer's and sam3's fp16 scalar divisions differ by shape and
    divisor, which the label once left out)."""
    regimes = registry_regimes(load_registry())
    ids = [r.id for r in regimes]
    assert len(set(ids)) == len({r.spec.key() for r in regimes}) == len(regimes)
    assert not [i for i in ids if " #" in i], "a label that does not tell instances apart"


def test_instances_their_label_does_not_tell_apart_get_distinct_ids() -> None:
    """Two instances of one bundle that differ only in a parameter the label does not show
    (where the sizes come from) are both kept, each under its own id, told apart by its key."""
    bundle = next(b for b in load_registry() if b.name == "sam3")
    divide = next(i for i in bundle.instances if "item_shape" in i.params)
    other = replace(divide, params={**divide.params, "size_source": "symbolic"})
    regimes = registry_regimes([replace(bundle, instances=(divide, other))])
    assert len(regimes) == 2
    assert len({r.id for r in regimes}) == 2
    for regime in regimes:
        assert regime.id.endswith(f" #{regime.spec.key()[:8]}")


def test_the_sweep_refuses_two_probes_under_one_id() -> None:
    """Before anything is read or converted: one outcome would silently replace the other."""
    first, *_ = registry_regimes(load_registry())
    other = replace(first.spec, seed=first.spec.seed + 1)
    twin = Regime(first.construct, first.name, other, False, None)
    with pytest.raises(ValueError, match="share the regime id"):
        run_regimes(
            [first, twin],
            "0.4.1",
            "0.4.2",
            load_catalog(),
            load_policy(),
            use_cache=True,
            progress=lambda _: None,
            stored_only=True,
        )
