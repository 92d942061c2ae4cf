"""`inventory plan --to R`: every fix between each bundle's exporter and R, and whether each
shipped asset still loads where it ships."""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path
from typing import Annotated, Any

import typer

from inventory.commands.common import ready, report, use_execution
from inventory.errors import ExitCode, exit_for_reexport
from inventory.options import (
    AllowCode,
    Bundles,
    Common,
    Details,
    Execution,
    Ignore,
    NoCache,
    Output,
    RecipeRoot,
    Registry,
    RunBudget,
    Runtimes,
    Tolerance,
    check_budget,
    check_recipe_root,
    complete_release,
    release_option,
    takes,
)
from inventory.output import OutputFormat, forms
from inventory.registry import DEFAULT_REGISTRY, Bundle, load_registry, select
from inventory.terminal import BareValue, finish
from inventory.verify.mode import VerifyMode, measures_all, measures_unchecked
from oracle.catalog import FIXES_FILE, load_catalog
from oracle.infra import Progress

# the formats `plan` has a form in (the table and JSON, and these)
FORMS = forms(OutputFormat.MARKDOWN, OutputFormat.HTML, OutputFormat.CYCLONEDX)


@takes
def plan_cmd(
    *,
    to: Annotated[
        str,
        typer.Option(
            "--to",
            metavar="VERSION",
            callback=release_option,
            autocompletion=complete_release,
            help="The release to re-export with (e.g. 0.4.3).",
        ),
    ],
    bundle: Bundles = None,
    baseline: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE", help="A previous `plan --json`: report only what changed since."
        ),
    ] = None,
    ignore: Ignore = None,
    registry: Registry = DEFAULT_REGISTRY,
    out: Output,
    details: Details = False,
    no_cache: NoCache = False,
    execution: Execution,
    tolerance: Tolerance = None,
    runtime: Runtimes = None,
    fixes: Annotated[
        Path,
        typer.Option(
            "--fixes",
            metavar="FILE",
            help="The fix database (e.g. a draft of the next release's records); a "
            "change is credited to its records of the step it happens in.",
        ),
    ] = FIXES_FILE,
    verify: Annotated[
        VerifyMode | None,
        typer.Option(
            "--verify",
            metavar="[all|auto]",
            help="Measure each bundle's whole program along the release chain "
            "(inventory verify) and join it to the plan; `--verify auto`: only the "
            "bundles whose coverage is incomplete or whose answer would otherwise be "
            "unchecked, where they can be built. "
            "Without it (the default) nothing is measured whole and a stored check is "
            "read. Exit 3 on an inconsistency.",
        ),
        BareValue(VerifyMode.ALL),
    ] = None,
    run_budget: RunBudget = 120.0,
    recipe_root: RecipeRoot = None,
    allow_code: AllowCode = False,
    full: Annotated[
        bool,
        typer.Option(
            "--full",
            help="The whole-program check of each bundle's full target, even where its "
            "registry entry states a miniature: measured with --verify, else read "
            "if stored.",
        ),
    ] = False,
    common: Common,
) -> None:
    """Every fix between each bundle's exporter and --to, and whether each shipped asset still
    loads where it ships: what forces a re-export (a load failure first), what merely suggests
    one, correctness first.

    Examples:
    inventory plan --to 0.4.3
    inventory plan --to 0.4.3 --verify auto
    inventory plan --to 0.4.3 --baseline last.json -f markdown -o plan.md

    Exit codes:
    0  no bundle needs re-exporting
    1  at least one bundle must be re-exported
    2  usage or configuration error
    3  inconclusive: a run failed, or a whole-program check disagrees with
       the probes or could not be made (never reported as a pass)
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    5  unchecked: nothing found that moves, but a bundle's own program was not
       checked, or some of its ops no probe and no whole-program check covers
       (policy.toml accept_unchecked = true makes it 0, and says so)
    """
    from inventory.deployment import parse_overrides
    from inventory.ignore import load_ignores
    from inventory.output import Renderer, input_files
    from inventory.plan import (
        Plan,
        baseline_reexport,
        plan,
        plan_record,
        plan_summary,
        read_baseline,
        since_baseline,
    )
    from inventory.policy import load_policy
    from inventory.report.plan_report import plan_markdown, plan_table
    from inventory.verify.auto import buildable, wanted
    from inventory.verify.service import verified
    from oracle.catalog import load_fixes

    fmt = out.format("plan", FORMS)

    ready(("--to", to), tolerance=tolerance)
    check_recipe_root(recipe_root)
    use_execution(execution)
    check_budget("--run-budget", run_budget)
    if baseline is not None:
        read_baseline(baseline)  # a malformed baseline fails before the run, not after it
    known = load_catalog()  # with --catalog's releases (set for the run by `command`)
    runtimes = parse_overrides(runtime, known)
    bundles = select(load_registry(registry), bundle)
    records = load_fixes(fixes)

    def work(progress: Progress) -> Plan:
        # One answer: each bundle's whole-program check (stored, or measured by --verify) is
        # had first, so that the records it credits, pipeline records included, are answered
        # from the very steps it holds.
        def checked(among: list[Bundle], compute: bool) -> dict[str, Any]:
            return verified(
                among,
                to,
                records,
                known,
                load_policy(tolerance),
                use_cache=not no_cache if compute else True,
                compute=compute,
                progress=progress,
                run_budget=run_budget,
                full=full,
                recipe_root=recipe_root,
                allow_code=allow_code,
            )

        def planned(checks: dict[str, Any], use_cache: bool) -> Plan:
            return plan(
                to,
                bundles,
                records,
                known,
                load_policy(tolerance),
                load_ignores(ignore),
                use_cache=use_cache,
                progress=progress,
                runtimes=runtimes,
                checks=checks,
                recipe_root=recipe_root,
                allow_code=allow_code,
            )

        checks = checked(bundles, measures_all(verify))
        result = planned(checks, not no_cache)
        if measures_unchecked(verify):
            # the bundles this answer leaves unchecked or not wholly covered, checked whole where
            # they can be built, then answered again: every comparison but their checks is read
            # back from this run
            can, lines = buildable(
                wanted(result, bundles), to, known, full, recipe_root, allow_code
            )
            if can:
                result = planned({**checks, **checked(can, True)}, True)
            result = replace(result, warnings=(*result.warnings, *lines))
        result = replace(result, verify_computed=measures_all(verify))
        return since_baseline(result, baseline) if baseline is not None else result

    table = functools.partial(plan_table, details=details)
    renderer = Renderer(
        "plan",
        plan_record,
        table,
        plan_markdown,
        plan_summary,
        input_files(registry=registry, fixes=fixes),
        fixes,
        forms=FORMS,
    )
    result = report(renderer, fmt, common.quiet, work, lambda r: r.warnings, to=out.output)
    if any(not v.consistent or v.inconclusive for v in result.verified.values()):
        finish(ExitCode.INCONCLUSIVE)
    # since a baseline, the exit code follows what changed (nothing changed: 0)
    finish(
        exit_for_reexport(
            baseline_reexport(result) if baseline is not None else result.reexport,
            load_policy().accept_unchecked,
        )
    )
