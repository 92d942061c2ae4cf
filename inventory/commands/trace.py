"""`inventory trace`: torch.export each bundle's module and read its constructs off the graph."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from inventory.errors import ExitCode, UsageError
from inventory.options import CatalogFile, ProgressMode, Quiet, Registry, complete_bundle
from inventory.registry import DEFAULT_REGISTRY, load_registry, select
from inventory.terminal import err, finish, out, progress, warn
from oracle.catalog import load_catalog
from oracle.envs import python_ok


def trace_cmd(
    bundle: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="BUNDLE",
            autocompletion=complete_bundle,
            help="Bundles to trace (default: every bundle with a trace target).",
        ),
    ] = None,
    registry: Registry = DEFAULT_REGISTRY,
    # "\\[": typer reads help as rich markup, and a TOML table name is not markup
    recipe_root: Annotated[
        Path | None,
        typer.Option(
            "--recipe-root",
            metavar="DIR",
            help="A checkout of the recipe repository: trace the recipe's own "
            "module, built by the builder the registry names "
            "(\\[bundles.X.recipe.builder]).",
        ),
    ] = None,
    write: Annotated[
        bool,
        typer.Option(
            "--write",
            help="Record the traced instances in the registry (with --recipe-root: as "
            "its authority, with provenance).",
        ),
    ] = False,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="Exit 1, listing the differences, if the registry is stale (without "
            "--recipe-root, a recipe-traced bundle is checked through its "
            "stand-in's stated differences).",
        ),
    ] = False,
    allow_code: Annotated[
        bool,
        typer.Option(
            "--allow-code",
            help="Trust the registry as code: import a trace target or recipe "
            "adapter it names outside the project's packages (by default "
            "refused).",
        ),
    ] = False,
    quiet: Quiet = False,
    progress_shown: ProgressMode = None,
    catalog: CatalogFile = None,
) -> None:
    """Trace bundles' export recipes: torch.export the module, read constructs off the graph.
    A project target or stand-in needs the `trace` extra: where this interpreter lacks it, it
    is installed once into an environment of the store on first use.

    Examples:
    inventory trace mimi
    inventory trace --check
    inventory trace sam3 --recipe-root ../coreai-models --write

    Exit codes:
    0  traced (with --check: the registry matches a fresh trace)
    1  with --check: the registry is stale (the differences on stderr)
    2  usage or configuration error, or a bundle that could not be traced
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.trace.service import trace_bundles, traceable

    stale: list[str] = []
    python_ok()
    if recipe_root is not None and not recipe_root.is_dir():
        raise UsageError(f"--recipe-root {recipe_root}: not a folder")
    bundles = [
        b for b in select(load_registry(registry), bundle) if bundle or traceable(b, recipe_root)
    ]
    with progress(not quiet) as report_progress:
        runs = trace_bundles(
            registry,
            bundles,
            load_catalog(),
            write=write,
            check=check,
            progress=report_progress,
            recipe_root=recipe_root,
            allow_code=allow_code,
        )
        for result, differences in runs:
            what = "stand-in " if result.is_standin else ""
            out.print(
                Text.assemble(
                    (result.bundle, "bold"),
                    f": {what}{result.target}, {result.decompositions}, {result.aten_ops} aten ops",
                ),
                highlight=False,
            )
            prov = result.provenance
            if prov.get("commit"):
                out.print(
                    f"  recipe {prov['repository']} {prov['commit'][:12]} "
                    f"({prov['commit_source']}), {prov['file']}",
                    highlight=False,
                )
            warn(result.warnings)  # a builder's notes among them: bounded as every line is
            for inst in result.instances:
                out.print(
                    f"  {inst['count']}x {inst['kind']} {inst['dtype']} {inst['params']}",
                    highlight=False,
                )
            if not result.instances:
                out.print("  no tracked construct")
            stale += differences
    if check and stale:
        for line in stale:
            err.print(f"stale: {line}", highlight=False, soft_wrap=True)
        finish(ExitCode.FINDING)
    if check:
        out.print("registry instances match a fresh trace")
