"""How `inventory verify` builds a whole bundle: its form, read from `[bundles.X.verify]`.

The module is the bundle's project target (its stand-in where the registry's authority is a
recipe trace: `[bundles.X.standin] target`), built on the CPU with real storage; or, given a
checkout of the recipe repository (`--recipe-root`) that holds the bundle's recipe, the
recipe's own module, built by the builder the registry names (`[bundles.X.recipe.builder]`,
the contract or an adapter, exactly as `trace --recipe-root` builds it; no project code per
bundle). A recipe form states its miniature as the builder's own keyword arguments
(`[bundles.X.verify] kwargs`, merged over the builder's) and the inputs to run it on
(`inputs`, as the builder's are stated); a project target's as `build` arguments:

* `form = "full"`: the target as the trace builds it;
* `form = "miniature"`: with `[bundles.X.verify.build]` keyword arguments (fewer repeated layers)
  where converting the full module costs more than the check needs (a conformer's identical
  layers) or does not fit this machine. A miniature must keep every distinct instance (kind,
  dtype, parameters) of the full target once: `distinct` is what a test holds it to. `full=True`
  (`verify --full`, `plan --verify --full`) builds the full target anyway.

`[bundles.X.verify.run]` is the form measured on a runtime when the programs differ (fp16 is
emulated on the Linux CPU runtime: a full fp16 step does not finish), with its own `build`
arguments (fewer layers, a shorter sequence) and `why`; without it the compared form runs.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inventory.errors import InventoryError
from inventory.registry import Bundle
from inventory.trace import recipes

FULL, MINIATURE, REDUCED = "full", "miniature", "reduced"


class FormError(InventoryError):
    """A bundle's verify form cannot be built as stated; one line for the user."""


@dataclass(frozen=True)
class Form:
    name: str  # FULL, MINIATURE or REDUCED (a run form)
    target: str  # module:function
    build: dict[str, Any] = field(default_factory=dict)  # keyword arguments to the target
    why: str = ""
    standin: bool = False  # the target stands in for the recipe (its differences are stated)
    # built by the recipe's own builder from a checkout (`--recipe-root`): what was built
    # (repository, commit, file, builder, inputs, the file's digest); None for a project target
    recipe: dict[str, Any] | None = None

    def described(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.build.items()))
        who = "stand-in " if self.standin else "recipe " if self.recipe else ""
        return f"{self.name} ({who}{self.target}({args}))"

    def to_json(self) -> dict[str, Any]:
        out = {
            "form": self.name,
            "target": self.target,
            "build": self.build,
            "why": self.why,
            "standin": self.standin,
        }
        if self.recipe is not None:  # only then: a project target's stored parts keep their key
            out["recipe"] = self.recipe
        return out


def _target(bundle: Bundle) -> tuple[str, bool]:
    if bundle.trace.get("origin") == "recipe":
        target, standin = bundle.standin.get("target"), True
    else:
        target, standin = bundle.trace.get("target"), False
    if not target:
        hint = (
            " or, for its recipe's own module, --recipe-root CHECKOUT (the builder "
            f"[bundles.{bundle.name}.recipe.builder] names)"
            if bundle.recipe.get("builder")
            else ""
        )
        raise FormError(
            f"bundle {bundle.name!r} has no project target to build whole "
            f"([bundles.{bundle.name}.standin] or [.trace] target){hint}"
        )
    return str(target), standin


def recipe_builder(bundle: Bundle, root: Path | None) -> recipes.Builder | None:
    """The recipe builder that builds the bundle from the checkout `root`, when the registry
    names one whose file is in it (as `trace --recipe-root` chooses); else None (the bundle's
    project target builds it). A builder the registry states wrongly is one line."""
    table = bundle.recipe.get("builder")
    if root is None or not table:
        return None
    try:
        builder = recipes.Builder.from_table(table)
        # only whether the file is in this checkout decides; code it may not run is refused
        # when the check is vetted (`inventory.trace.service.vet`)
        recipes.check(builder, root, allow_code=True)
    except recipes.RecipeError:
        return None
    if builder.offline:
        raise FormError(f"{bundle.name}: the recipe cannot be built offline: {builder.offline}")
    return builder


@functools.cache
def _checkout(root: Path) -> recipes.Checkout:
    return recipes.checkout(root)


def _recipe_form(
    bundle: Bundle,
    root: Path,
    builder: recipes.Builder,
    name: str,
    kwargs: dict[str, Any],
    inputs: dict[str, Any],
    why: str,
) -> Form:
    checkout = _checkout(root.resolve())
    file = recipes.inside(root, builder.file, "recipe.builder")
    if not file.is_file():
        file = recipes.inside(
            root, builder.module.replace(".", "/") + "/__init__.py", "recipe.builder.module"
        )
    env = bundle.recipe.get("environment")
    recipe = {
        "repository": str(bundle.recipe.get("repository", "unknown")),
        "commit": checkout.commit,
        "commit_source": checkout.how,
        "modified": checkout.modified,
        "file": builder.file,
        "call": builder.call,
        "adapter": builder.adapter or None,
        "inputs": inputs,
        # what the build depends on beside the arguments: the recipe file's content and
        # the packages its environment pins
        "source": hashlib.sha256(file.read_bytes()).hexdigest()[:16],
        "environment": list(env.get("requirements", [])) if isinstance(env, dict) else [],
    }
    return Form(name, f"{builder.file}:{builder.call}", kwargs, why, False, recipe)


def _recipe_table(table: Any, where: str) -> dict[str, Any]:
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise FormError(f"{where} must be a table")
    if "device" in table:
        raise FormError(f"{where}: device is chosen by verify (the CPU), not the registry")
    return dict(table)


def _build_args(table: Any, where: str) -> dict[str, Any]:
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise FormError(f"{where} must be a table of keyword arguments")
    if "device" in table:
        raise FormError(f"{where}: device is chosen by verify (the CPU), not the registry")
    return dict(table)


def compared_form(bundle: Bundle, full: bool = False, recipe_root: Path | None = None) -> Form:
    """The form both converters convert whole; `full`: the full target whatever the registry
    states (a miniature's arguments are still checked, so a malformed entry is refused alike);
    `recipe_root`: the recipe's own module where the checkout holds its recipe."""
    table = bundle.verify
    name = str(table.get("form", FULL))
    where = f"[bundles.{bundle.name}.verify]"
    if name not in (FULL, MINIATURE):
        raise FormError(f"{where} form must be full or miniature, not {name!r}")
    builder = recipe_builder(bundle, recipe_root)
    if builder is not None and recipe_root is not None:
        return _compared_recipe(bundle, recipe_root, builder, name, full)
    target, standin = _target(bundle)
    build = _build_args(table.get("build"), f"{where} build")
    if name == FULL and build:
        raise FormError(f"{where}: a full form takes no build arguments (a miniature does)")
    if name == MINIATURE and not build:
        raise FormError(f"{where}: a miniature needs build arguments saying what it reduces")
    why = str(table.get("why", ""))
    if full and name == MINIATURE:
        # the answer names this form, so it says it was asked for and what it replaces
        return Form(
            FULL,
            target,
            {},
            f"--full: the whole target, not the registry's miniature ({why})",
            standin,
        )
    return Form(name, target, build, why, standin)


def _compared_recipe(
    bundle: Bundle, root: Path, builder: recipes.Builder, name: str, full: bool
) -> Form:
    """The recipe's own module: at the builder's kwargs (full), or a miniature stated as the
    builder's kwargs and inputs (`[verify] kwargs`, `inputs`)."""
    table = bundle.verify
    where = f"[bundles.{bundle.name}.verify]"
    kwargs = _recipe_table(table.get("kwargs"), f"{where} kwargs")
    inputs = _recipe_table(table.get("inputs"), f"{where} inputs")
    why = str(table.get("why", ""))
    if name == FULL and (kwargs or inputs):
        raise FormError(f"{where}: a full form takes no kwargs or inputs (a miniature does)")
    if name == MINIATURE and not (kwargs or inputs) and not full:
        raise FormError(
            f"{where}: the miniature is stated for the project target (build), not for the "
            f"recipe's builder: state it as the builder's own kwargs (and inputs), or build "
            f"the recipe's full module with --full"
        )
    if full and name == MINIATURE:
        return _recipe_form(
            bundle,
            root,
            builder,
            FULL,
            dict(builder.kwargs),
            dict(builder.inputs),
            f"--full: the recipe's whole module, not the registry's miniature ({why})",
        )
    return _recipe_form(
        bundle,
        root,
        builder,
        name,
        _merged(builder.kwargs, kwargs),
        _merged(builder.inputs, inputs),
        why,
    )


def run_form(bundle: Bundle, full: bool = False, recipe_root: Path | None = None) -> Form:
    """The form run on the runtime when the compared programs differ (its arguments merged over
    the compared form's: with `full`, over the full target's)."""
    compared = compared_form(bundle, full, recipe_root)
    table = bundle.verify.get("run")
    if table is None:
        return compared
    where = f"[bundles.{bundle.name}.verify.run]"
    if not isinstance(table, dict) or not table.get("why"):
        raise FormError(f"{where} must be a table with build arguments and a why")
    if compared.recipe is not None:
        kwargs = _recipe_table(table.get("kwargs"), f"{where} kwargs")
        inputs = _recipe_table(table.get("inputs"), f"{where} inputs")
        if not (kwargs or inputs):
            raise FormError(
                f"{where}: states the run form for the project target (build); "
                "for the recipe's builder state its kwargs (and inputs)"
            )
        recipe = {**compared.recipe, "inputs": _merged(compared.recipe["inputs"], inputs)}
        return Form(
            REDUCED,
            compared.target,
            _merged(compared.build, kwargs),
            str(table["why"]),
            False,
            recipe,
        )
    build = _merged(compared.build, _build_args(table.get("build"), f"{where} build"))
    return Form(REDUCED, compared.target, build, str(table["why"]), compared.standin)


def _merged(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """The run form's arguments over the compared form's, tables merged key by key (a run form
    states only what it changes, e.g. one nested config value)."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merged(out[key], value)
        else:
            out[key] = value
    return out


def distinct(instances: list[dict[str, Any]]) -> set[str]:
    """The distinct instances of a trace: kind, dtype and parameters, whatever their count and
    modules (what a miniature must keep of the full module). A kind's representative parameters
    (its shapes) and the `shapes_seen` a group lists do not separate instances, in a trace or
    here: they are the group's first member's, so they change with which layers the module has."""
    from oracle import constructs

    loose = {c.kind: set(c.representative) for c in constructs.all_constructs()}
    return {
        json.dumps(
            {
                "kind": i["kind"],
                "dtype": i.get("dtype"),
                "params": {
                    k: v
                    for k, v in i["params"].items()
                    if k != "shapes_seen" and k not in loose.get(i["kind"], set())
                },
            },
            sort_keys=True,
        )
        for i in instances
    }
