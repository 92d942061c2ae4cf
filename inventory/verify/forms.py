"""How `inventory verify` builds a whole bundle: its form, read from `[bundles.X.verify]`.

The module is the bundle's project target (its stand-in where the registry's authority is a
recipe trace: `[bundles.X.standin] target`), built on the CPU with real storage:

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

import json
from dataclasses import dataclass, field
from typing import Any

from inventory.errors import InventoryError
from inventory.registry import Bundle

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

    def described(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in sorted(self.build.items()))
        who = "stand-in " if self.standin else ""
        return f"{self.name} ({who}{self.target}({args}))"

    def to_json(self) -> dict[str, Any]:
        return {"form": self.name, "target": self.target, "build": self.build, "why": self.why,
                "standin": self.standin}


def _target(bundle: Bundle) -> tuple[str, bool]:
    if bundle.trace.get("origin") == "recipe":
        target, standin = bundle.standin.get("target"), True
    else:
        target, standin = bundle.trace.get("target"), False
    if not target:
        raise FormError(f"bundle {bundle.name!r} has no project target to build whole "
                        f"([bundles.{bundle.name}.standin] or [.trace] target)")
    return str(target), standin


def _build_args(table: Any, where: str) -> dict[str, Any]:
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise FormError(f"{where} must be a table of keyword arguments")
    if "device" in table:
        raise FormError(f"{where}: device is chosen by verify (the CPU), not the registry")
    return dict(table)


def compared_form(bundle: Bundle, full: bool = False) -> Form:
    """The form both converters convert whole; `full`: the full target whatever the registry
    states (a miniature's arguments are still checked, so a malformed entry is refused alike)."""
    target, standin = _target(bundle)
    table = bundle.verify
    name = str(table.get("form", FULL))
    where = f"[bundles.{bundle.name}.verify]"
    if name not in (FULL, MINIATURE):
        raise FormError(f"{where} form must be full or miniature, not {name!r}")
    build = _build_args(table.get("build"), f"{where} build")
    if name == FULL and build:
        raise FormError(f"{where}: a full form takes no build arguments (a miniature does)")
    if name == MINIATURE and not build:
        raise FormError(f"{where}: a miniature needs build arguments saying what it reduces")
    why = str(table.get("why", ""))
    if full and name == MINIATURE:
        # the answer names this form, so it says it was asked for and what it replaces
        return Form(FULL, target, {}, f"--full: the whole target, not the registry's "
                    f"miniature ({why})", standin)
    return Form(name, target, build, why, standin)


def run_form(bundle: Bundle, full: bool = False) -> Form:
    """The form run on the runtime when the compared programs differ (its arguments merged over
    the compared form's: with `full`, over the full target's)."""
    compared = compared_form(bundle, full)
    table = bundle.verify.get("run")
    if table is None:
        return compared
    where = f"[bundles.{bundle.name}.verify.run]"
    if not isinstance(table, dict) or not table.get("why"):
        raise FormError(f"{where} must be a table with build arguments and a why")
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
    modules (what a miniature must keep of the full module)."""
    return {json.dumps({"kind": i["kind"], "dtype": i.get("dtype"), "params": i["params"]},
                       sort_keys=True) for i in instances}
