"""Trace one target in a subprocess: export it through the converter's decomposition table.

Run as `python -m inventory.trace.worker TARGET [CONVERTER_SITE_PACKAGES [OPTIONS_JSON]]`. TARGET
is a project target (`module:function`, called with OPTIONS_JSON's `build` keyword arguments,
none by default) or `recipe`: then OPTIONS_JSON's `recipe`
(`root`, `builder`, `dtype`) names the recipe's builder in a checkout (see
`inventory.trace.recipes`). OPTIONS_JSON's `export` holds the recipe's export steps that run
around `torch.export` (`grad`: "no_grad" or "enabled"; `autocast`: a dtype or ""). The converter's
site-packages is appended to sys.path (after this environment's own packages) so that
`coreai_torch.get_decomp_table()` decomposes the graph exactly as the recipe's export does, and so
that a recipe importing the converter at module level imports; nothing else of the converter is
used here. Prints one JSON document on stdout.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata as md
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any


def _target(target_ref: str, options: dict[str, Any]) -> Any:
    from inventory.trace import trust

    allow_code = bool(options.get("allow_code"))
    if target_ref != "recipe":
        # checked by the service already; again here, since this is where the import happens
        trust.check_target(target_ref, "trace target", allow_code)
        mod_name, _, fn_name = target_ref.partition(":")
        # `build`: keyword arguments to the target (a verify form's miniature, see
        # inventory.verify.forms); none for the registry's own trace
        return getattr(importlib.import_module(mod_name), fn_name or "build")(
            **options.get("build", {}))
    from inventory.trace import recipes

    recipe = options["recipe"]
    root = Path(recipe["root"])
    builder = recipes.Builder.from_table(recipe["builder"])
    recipes.check(builder, root, allow_code)
    if not builder.adapter:
        return recipes.contract(root, builder, recipe["dtype"])
    mod_name, _, fn_name = builder.adapter.partition(":")
    return getattr(importlib.import_module(mod_name), fn_name or "build")(
        root, builder, recipe["dtype"])


@contextlib.contextmanager
def export_context(steps: dict[str, Any]) -> Iterator[None]:
    """The recipe's context around torch.export: no_grad (coreai-models' export_to_coreai) and
    autocast (sam3's recipe). Also what `inventory verify` exports a whole bundle under."""
    import torch

    with contextlib.ExitStack() as stack:
        if steps.get("grad") == "no_grad":
            stack.enter_context(torch.no_grad())
        if steps.get("autocast"):
            stack.enter_context(torch.autocast("cpu", dtype=getattr(torch, steps["autocast"])))
        yield


def _version(dist: str) -> str:
    try:
        return md.version(dist)
    except md.PackageNotFoundError:
        return "absent"


def main(argv: list[str]) -> int:
    target_ref = argv[0]
    site = argv[1] if len(argv) > 1 else ""
    options = json.loads(argv[2]) if len(argv) > 2 else {}
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the models print must not reach the JSON stream
    import torch

    from inventory.trace.detect import detect, detected_kinds, group
    from inventory.trace.facts import graph_facts
    from inventory.trace.recipes import RecipeError
    from inventory.trace.trust import UntrustedCode

    if site:
        sys.path.append(site)
    try:
        target = _target(target_ref, options)
    except (RecipeError, UntrustedCode) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    steps = options.get("export", {})
    with export_context(steps):
        ep = torch.export.export(target.module, target.args, kwargs=target.kwargs, strict=False)
    if site:
        import coreai_torch

        table = coreai_torch.get_decomp_table()
        decomp = f"coreai_torch {md.version('coreai-torch')} get_decomp_table()"
    else:
        table = torch.export.default_decompositions()
        decomp = "torch default decompositions"
    # the overloads the recipe keeps out of its table ([bundles.X.pipeline] keep): the graph
    # then holds them whole, as the bundle's converter saw them
    keep = set(options.get("keep", ()))
    if keep:
        for op in [op for op in table if str(op) in keep]:
            table.pop(op)
        decomp += " minus " + ", ".join(sorted(keep))
    ep = ep.run_decompositions(table)
    nodes = list(ep.graph.nodes)
    packages = {"torch": md.version("torch")}
    for dist in target.packages:
        packages[dist] = _version(dist)
    found = group(detect(nodes))
    facts = graph_facts(ep)
    json.dump({
        "target": target_ref,
        "dtype": target.dtype,
        "notes": target.notes,
        "decompositions": decomp,
        "export": steps,
        "packages": packages,
        "aten_ops": facts["aten_ops"],
        "facts": facts,
        "detected": detected_kinds(),
        "instances": [asdict(g) for g in found],
    }, protocol)
    protocol.write("\n")
    protocol.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
