"""`inventory affected --fix N`: which shipped bundles does one converter fix change?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inventory.commands.common import ready, report, use_execution
from inventory.errors import exit_for_reexport
from inventory.options import (
    AllowCode,
    Bundles,
    Common,
    Execution,
    Ignore,
    NoCache,
    Output,
    RecipeRoot,
    Registry,
    Runtimes,
    Tolerance,
    check_recipe_root,
    complete_fix,
    complete_release,
    release_option,
    takes,
)
from inventory.output import OutputFormat, forms
from inventory.output_file import ReadsAfter
from inventory.registry import DEFAULT_REGISTRY, load_registry, select
from inventory.terminal import BareValue, finish
from inventory.verify.mode import VerifyMode
from oracle.catalog import FIXES_FILE, load_catalog

# the formats `affected` has a form in (the table and JSON, and these)
FORMS = forms(OutputFormat.MARKDOWN, OutputFormat.HTML, OutputFormat.CYCLONEDX)


@takes
def affected_cmd(
    *,
    fix: Annotated[
        str,
        typer.Option(
            "--fix",
            metavar="FIX",
            autocompletion=complete_fix,
            help="Fix id: the upstream PR number (40 or coreai-torch#40), an alias, or a "
            "pipeline record's name (core-b3); `inventory fixes` lists them.",
        ),
    ],
    to: Annotated[
        str | None,
        typer.Option(
            "--to",
            metavar="VERSION",
            callback=release_option,
            autocompletion=complete_release,
            help="Converter release to compare against (default: the fix's release).",
        ),
    ] = None,
    bundle: Bundles = None,
    registry: Registry = DEFAULT_REGISTRY,
    out: Output,
    no_cache: NoCache = False,
    execution: Execution,
    tolerance: Tolerance = None,
    ignore: Ignore = None,
    weights: Annotated[
        list[str] | None,
        typer.Option(
            metavar="BUNDLE=FILE",
            help="BUNDLE=CHECKPOINT.safetensors: measure each traced module with its own tensors "
            "from the bundle's checkpoint, where the construct's probe can take them (batch "
            "norm: running statistics, affine parameters, the depthwise conv before it); "
            "else decide value conditions from them (repeatable).",
        ),
        ReadsAfter("="),
    ] = None,
    runtime: Runtimes = None,
    fixes: Annotated[
        Path,
        typer.Option(
            "--fixes",
            metavar="FILE",
            help="The fix database (e.g. a draft of the next release's records): the "
            "fix is looked up there, and changes of its release step that no "
            "record there explains are mentioned.",
        ),
    ] = FIXES_FILE,
    verify: Annotated[
        VerifyMode | None,
        typer.Option(
            "--verify",
            metavar="[all|auto]",
            help="A pipeline record (a coreai-core pin): measure its release step on "
            "each bundle's whole program (inventory verify's parts) where none is "
            "stored; `--verify auto`: only for the bundles the asset probe would leave "
            "unchecked, where they can be built. Without it (the default) a stored check "
            "is read, else the asset probe stands in and the answer says so.",
        ),
        BareValue(VerifyMode.ALL),
    ] = None,
    sweep: Annotated[
        bool,
        typer.Option(
            "--sweep",
            help="Run the registry sweep of the fix's own release step, for the changes of "
            "that step no record explains (one line per bundle, never counted in this fix's "
            "level). Without it only the fix's probes convert: the sweep is read from the "
            "store where plan or sweep --registry left it, else the answer says it was not "
            "looked for.",
        ),
    ] = False,
    recipe_root: RecipeRoot = None,
    allow_code: AllowCode = False,
    common: Common,
) -> None:
    """Which shipped bundles does one converter fix change, and must they be re-exported?

    Examples:
    inventory affected --fix 40
    inventory affected --fix 54 --to v0.4.3 --bundle sam3 --sweep --markdown
    inventory affected --fix core-b3 --verify auto -f json -o b3.json

    Exit codes:
    0  no bundle needs re-exporting for this fix
    1  at least one bundle must be re-exported
    2  usage or configuration error (an unknown fix: its close ids)
    3  inconclusive: a run failed or the registry cannot tell
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    5  unchecked: nothing found that moves, but a bundle's own program was not
       checked (policy.toml accept_unchecked = true makes it 0, and says so)
    """
    from inventory.affected import affected, parse_weights
    from inventory.deployment import parse_overrides
    from inventory.ignore import load_ignores
    from inventory.output import Renderer, input_files
    from inventory.policy import load_policy
    from inventory.report.json_report import affected_record
    from inventory.report.table import affected_markdown, affected_summary, affected_table
    from oracle.catalog import find_fix, load_fixes

    fmt = out.format("affected", FORMS)

    ready(("--to", to), tolerance=tolerance)
    check_recipe_root(recipe_root)
    use_execution(execution)
    records = load_fixes(fixes)
    the_fix = find_fix(fix, records, fixes)
    all_bundles = load_registry(registry)
    bundles = select(all_bundles, bundle)
    ignores = load_ignores(ignore)
    checkpoints = parse_weights(weights, all_bundles)
    known = load_catalog()  # with --catalog's releases (set for the run by `command`)
    runtimes = parse_overrides(runtime, known)
    result = report(
        Renderer(
            "affected",
            affected_record,
            affected_table,
            affected_markdown,
            affected_summary,
            input_files(registry=registry, fixes=fixes),
            fixes,
            forms=FORMS,
        ),
        fmt,
        common.quiet,
        lambda progress: affected(
            the_fix,
            bundles,
            known,
            load_policy(tolerance),
            to=to,
            use_cache=not no_cache,
            progress=progress,
            ignores=ignores,
            weights=checkpoints,
            runtimes=runtimes,
            fixes=records,
            verify=verify,
            recipe_root=recipe_root,
            allow_code=allow_code,
            sweep=sweep,
        ),
        lambda r: r.warnings,
        to=out.output,
    )
    finish(exit_for_reexport(result.reexport, load_policy().accept_unchecked))
