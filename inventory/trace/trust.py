"""The registry names code: which of it `inventory trace` may import.

A registry is data, but three of its keys name Python to import and call in the trace
subprocess: `[bundles.X.trace] target` and `[bundles.X.standin] target` (`module:function`),
and `[bundles.X.recipe.builder] adapter`; a fourth, `[bundles.X.recipe.environment]
requirements`, names packages pip installs for a recipe trace, and a URL or a path there is code
from anywhere (its build runs on install). A registry handed over by someone else must not run
arbitrary code (`target = "os:system"`, or `tempfile:mkdtemp`, which already does something when
called), so a target may only name a module of this project's targets package and an adapter
only a module of the recipe adapters package; a recipe's own file is confined to `--recipe-root`
by `inventory.trace.recipes.check`. `--allow-code` lifts the package rule for a registry the user
trusts as code. The rule is checked before anything is imported or any environment is built, and
again in the trace subprocess itself.
"""

from __future__ import annotations

import re

from inventory.errors import InventoryError

TARGETS_PACKAGE = "inventory.trace.targets"
ADAPTERS_PACKAGE = "inventory.trace.recipes"
# A requirement from the package index: a name, optional extras, optional version specifiers.
# No URL (`name @ https://...`), no path, no pip option (`--index-url`, `-e`), no marker.
_INDEX_REQUIREMENT = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9._, -]+\])?"
    r"(?:\s*(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+(?:\s*,\s*(?:===|==|!=|~=|<=|>=|<|>)"
    r"\s*[A-Za-z0-9.*+!_-]+)*)?"
)


class UntrustedCode(InventoryError):
    """A registry key names code outside the project's packages; one line for the user."""


def _is_reference(ref: str) -> bool:
    module, _, function = ref.partition(":")
    parts = module.split(".")
    return all(p.isidentifier() for p in parts) and (not function or function.isidentifier())


def check_code(ref: str, package: str, where: str, allow_code: bool) -> None:
    """Refuse `ref` (`module:function`) unless it names a module inside `package`, or
    `allow_code` is given (then it need only be a well-formed reference)."""
    if not _is_reference(ref):
        raise UntrustedCode(f"{where} {ref!r} is not a module:function reference")
    if allow_code:
        return
    module = ref.partition(":")[0]
    if not module.startswith(package + "."):
        raise UntrustedCode(
            f"{where} {ref!r} is not a module of {package}; the registry names "
            f"code, and only the project's own is run without --allow-code"
        )


def check_target(ref: str, where: str, allow_code: bool) -> None:
    check_code(ref, TARGETS_PACKAGE, where, allow_code)


def check_adapter(ref: str, allow_code: bool) -> None:
    check_code(ref, ADAPTERS_PACKAGE, "recipe.builder.adapter", allow_code)


def check_requirement(requirement: str, where: str, allow_code: bool) -> None:
    """Refuse a pip requirement that is not a package of the index (a URL, a path, an option)
    unless `allow_code`."""
    if allow_code or _INDEX_REQUIREMENT.fullmatch(requirement.strip()):
        return
    raise UntrustedCode(
        f"{where} {requirement!r} is not a package of the index (name and "
        f"version specifiers); a URL, a path or a pip option installs code from "
        f"anywhere, refused without --allow-code"
    )
