"""`inventory verify`: the whole bundle, converted step by step along the release chain (its
exit codes: the command's docstring, which is its --help)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inventory.commands.common import ready, report, use_execution
from inventory.errors import ExitCode
from inventory.options import (
    AllowCode,
    Common,
    Execution,
    FullForm,
    NoCache,
    Output,
    RecipeRoot,
    Registry,
    RunBudget,
    check_budget,
    check_recipe_root,
    complete_bundle,
    complete_release,
    release_option,
    takes,
)
from inventory.output import OutputFormat, forms
from inventory.output_file import ReadsAfter
from inventory.registry import DEFAULT_REGISTRY, load_registry, select
from inventory.terminal import finish
from oracle.catalog import FIXES_FILE, load_catalog

# the formats `verify` has a form in (the table and JSON, and these)
FORMS = forms(OutputFormat.MARKDOWN, OutputFormat.HTML)


@takes
def verify_cmd(
    *,
    bundle: Annotated[
        list[str],
        typer.Argument(
            help="The bundles to verify.",
            metavar="BUNDLE",
            autocompletion=complete_bundle,
            show_default=False,
        ),
    ],
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="VERSION",
            callback=release_option,
            autocompletion=complete_release,
            help="The release to compare the exporter with.",
        ),
    ],
    weights: Annotated[
        list[str] | None,
        typer.Option(
            metavar="BUNDLE=FILE",
            help="BUNDLE=CHECKPOINT.safetensors: build the module with the checkpoint's tensors "
            "(every name and shape that matches its state) instead of trained-looking random "
            "ones (repeatable).",
        ),
        ReadsAfter("="),
    ] = None,
    registry: Registry = DEFAULT_REGISTRY,
    fixes: Annotated[
        Path,
        typer.Option(
            "--fixes",
            metavar="FILE",
            help="The fix database whose records of each step explain its regions "
            "(a draft lacking a record makes its changes unrecorded).",
        ),
    ] = FIXES_FILE,
    out: Output,
    no_cache: NoCache = False,
    execution: Execution,
    allow_code: AllowCode = False,
    recipe_root: RecipeRoot = None,
    run_budget: RunBudget = 120.0,
    full: FullForm = False,
    common: Common,
) -> None:
    """The whole bundle, step by step: build each bundle's module (full size, or the miniature
    its registry entry states), convert it whole under every release from its exporter to --to,
    compare each step's programs, map what differs back to modules and constructs, give every
    region its step, its stage (lowering or optimizer) and the record that explains it, run the
    programs on one runtime against torch fp32 when they differ, and reconcile with the probes
    of every traced instance. Exit 1 on a change no record explains, 3 on an inconsistency (or
    when a bundle cannot be checked). The bundles' modules need the `trace` extra: where this
    interpreter lacks it, it is installed once into an environment of the store on first use.

    Examples:
    inventory verify mimi --to 0.4.2
    inventory verify sortformer parakeet --to v0.4.3 --markdown
    inventory verify sam3 --to 0.4.3 --full -f json -o sam3.json

    Exit codes:
    0  every change is explained by a record of its step, and agrees with
       the probes
    1  a change no record of its step explains (an unrecorded change)
    2  usage or configuration error
    3  inconsistent with the probes, or a bundle could not be built,
       converted or run (inconclusive, never a pass); 3 outranks 1
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.affected import parse_weights
    from inventory.output import Renderer, input_files
    from inventory.policy import load_policy
    from inventory.report.verify_report import (
        verify_markdown,
        verify_record,
        verify_summary,
        verify_table,
    )
    from inventory.verify.service import verify
    from oracle.catalog import load_fixes

    fmt = out.format("verify", FORMS)

    ready(("--to", to))
    check_recipe_root(recipe_root)
    use_execution(execution)
    check_budget("--run-budget", run_budget)
    all_bundles = load_registry(registry)
    bundles = select(all_bundles, bundle)
    checkpoints = parse_weights(weights, all_bundles)
    result = report(
        Renderer(
            "verify",
            verify_record,
            verify_table,
            verify_markdown,
            verify_summary,
            input_files(registry=registry, fixes=fixes),
            fixes,
            forms=FORMS,
        ),
        fmt,
        common.quiet,
        lambda progress: verify(
            bundles,
            to,
            load_fixes(fixes),
            load_catalog(),
            load_policy(),
            weights=checkpoints,
            use_cache=not no_cache,
            allow_code=allow_code,
            progress=progress,
            run_budget=run_budget,
            full=full,
            recipe_root=recipe_root,
        ),
        to=out.output,
    )
    if result.inconsistent or result.inconclusive:
        finish(ExitCode.INCONCLUSIVE)
    finish(ExitCode.FINDING if result.unrecorded else ExitCode.OK)
