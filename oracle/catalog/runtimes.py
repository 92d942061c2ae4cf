"""Runtimes: the coreai-core releases of the converter catalog, as deployment targets.

A runtime is a coreai-core release (on this machine: its Linux CPU runtime). The catalog of
runtimes is data: the distinct `core` pins of `converters.toml`, oldest first. Each runtime runs
inside a converter environment that pins it (`Session.env_for_core`: the newest ready one; built
when none is).
"""

from __future__ import annotations

import re

from oracle.catalog.releases import Catalog, EnvError, version_key


def cores(catalog: Catalog) -> list[str]:
    """Distinct coreai-core releases of the catalog, oldest first (in release order)."""
    # a dict keeps the first release's order and finds a core seen before at once: a list's
    # `in` made a catalog of N releases pinning N cores N^2 (200,000 releases: minutes)
    ordered = sorted(catalog.releases, key=version_key)
    return list(dict.fromkeys(catalog.releases[v].core for v in ordered))


def runtime_label(core: str) -> str:
    """How answers name a runtime (the form measured verdicts already use)."""
    return f"linux-cpu, coreai-core {core}"


def pinned_core(catalog: Catalog, release: str) -> str:
    return catalog.release(release).core


def releases_pinning(catalog: Catalog, core: str) -> list[str]:
    return sorted((v for v, r in catalog.releases.items() if r.core == core), key=version_key)


def parse_runtime(text: str, catalog: Catalog) -> str:
    """A runtime as a user names it: `1.0.0b2`, `coreai-core 1.0.0b2` or `b2`."""
    wanted = re.sub(r"^coreai-core[\s=]*", "", text.strip())
    known = cores(catalog)
    for core in known:
        if wanted == core or (wanted and core.endswith(wanted) and not wanted[0].isdigit()):
            return core
    raise EnvError(
        f"runtime {text!r} is not in the catalog (coreai-core releases in "
        f"converters.toml: {', '.join(known)})"
    )


def at_or_above(catalog: Catalog, core: str) -> list[str]:
    """Every runtime of the catalog from `core` on."""
    known = cores(catalog)
    return known[known.index(core) :] if core in known else known
