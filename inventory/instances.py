"""The probe of one traced instance: shared by `affected` (per fix) and the registry sweep (every
instance, per release step), so both compare the same spec and read the same stored results."""

from __future__ import annotations

from inventory.registry import Bundle, Instance
from oracle.compare import ProbeSpec
from oracle.constructs import has_probe, probe_params


def instance_spec(bundle: Bundle, instance: Instance, override: dict | None = None) -> ProbeSpec:
    """The probe for one traced instance: its own parameters, dtype and the bundle's pipeline,
    with trained-looking values (or a condition's override of them)."""
    return ProbeSpec(
        construct=instance.kind,
        params={**probe_params(instance.kind, instance.params), **(override or {})},
        dtype=instance.dtype or bundle.dtype,
        pipeline=bundle.pipeline,
        values="trained",
    )


def probed_keys(bundle: Bundle) -> frozenset[str]:
    """The spec keys of the bundle's traced instances that have a probe."""
    return frozenset(instance_spec(bundle, i).key() for i in bundle.instances if has_probe(i.kind))
