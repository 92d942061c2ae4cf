"""Deployment runtimes: which coreai-core runtimes a bundle must load on.

In order: `--runtime` on the command line; the bundle's own `runtimes` in the registry; the
registry's `[deploy] runtimes` for the whole inventory; else the default, which every answer
states: every runtime in the catalog (`oracle/catalog/converters.toml` cores) at or above the core
the
target release pins, since a bundle re-exported with that release would run there; without a
target release (`scan`), every runtime in the catalog.
"""

from __future__ import annotations

from dataclasses import dataclass

from inventory.registry import Bundle, RegistryError
from oracle.catalog import (
    Catalog,
    EnvError,
    at_or_above,
    cores,
    parse_runtime,
    pinned_core,
    runtime_label,
)

DEFAULT_RULE = "every runtime in the catalog at or above the coreai-core the target release pins"


@dataclass(frozen=True)
class Deployment:
    cores: tuple[str, ...]  # coreai-core releases, oldest first
    source: str  # where the list comes from, e.g. "default: ..." or "recipes.toml [deploy]"

    @property
    def runtimes(self) -> tuple[str, ...]:
        return tuple(runtime_label(c) for c in self.cores)

    def describe(self) -> str:
        return f"coreai-core {', '.join(self.cores)} ({self.source})"

    def to_json(self) -> dict[str, object]:
        return {"cores": list(self.cores), "runtimes": list(self.runtimes), "source": self.source}


def parse_overrides(values: list[str] | None, catalog: Catalog) -> tuple[str, ...] | None:
    """`--runtime` values as catalog cores (EnvError, one line, for an unknown one)."""
    if not values:
        return None
    order = cores(catalog)
    chosen = {parse_runtime(v, catalog) for v in values}
    return tuple(c for c in order if c in chosen)


def deployment(
    bundle: Bundle, catalog: Catalog, target: str | None, override: tuple[str, ...] | None = None
) -> Deployment:
    order = cores(catalog)
    if override:
        return Deployment(override, "--runtime")
    if bundle.runtimes:
        try:
            named = {parse_runtime(r, catalog) for r in bundle.runtimes}
        except EnvError as exc:
            raise RegistryError(f"{bundle.runtimes_source}: {exc}") from None
        return Deployment(tuple(c for c in order if c in named), bundle.runtimes_source)
    if target is None:
        return Deployment(tuple(order), "default: every runtime in the catalog")
    core = pinned_core(catalog, target)
    return Deployment(
        tuple(at_or_above(catalog, core)),
        f"default: every runtime in the catalog at or above coreai-core {core}, "
        f"which coreai-torch {target} pins",
    )
