"""The command line: parse arguments, call one service, hand its result to one renderer.

Exit codes (`inventory/errors.py`): 0 nothing to re-export, 1 at least one re-export required,
2 usage or configuration error (for `repair`: a refusal), 3 inconclusive (a run failed; never
reported as a pass), 4 internal error (a defect in inventory: one line on stderr, the traceback
only with INVENTORY_DEBUG=1; never reported as a finding).
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from inventory.errors import ExitCode, UsageError, exit_for_reexport
from inventory.options import (
    Bundles,
    FromRelease,
    Ignore,
    Json,
    Markdown,
    NoCache,
    Quiet,
    Registry,
    RunBudget,
    Runtimes,
    Tolerance,
    ToRelease,
    check_budget,
    check_number,
    check_release,
)
from inventory.output import OutputFormat
from inventory.registry import DEFAULT_REGISTRY, load_registry, select
from inventory.signals import stop_on_sigterm
from inventory.terminal import (
    JsonErrorGroup,
    answering,
    command,
    err,
    finish,
    out,
    progress,
    warn,
)
from oracle.envs import (
    damaged_envs,
    deviations_with_evidence,
    ensure_env,
    installed_envs,
    load_catalog,
    python_ok,
)
from oracle.fixes import FIXES_FILE

app = typer.Typer(
    help="Does a new coreai-torch release change the on-device bundles you already shipped?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    cls=JsonErrorGroup,  # an argument error under --json is the one error envelope
)
envs_app = typer.Typer(help="Converter environments (one per coreai-torch release).",
                       no_args_is_help=True)
app.add_typer(envs_app, name="envs")
cache_app = typer.Typer(help="The store of probe results.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")


def _version(value: bool) -> None:
    if value:
        print(f"inventory {importlib.metadata.version('inventory')}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True,
        help="Print the version and exit.")] = False,
) -> None:
    stop_on_sigterm()


@command(app, "affected")
def affected_cmd(
    fix: Annotated[str, typer.Option("--fix", help="Fix id (the upstream PR number, e.g. 40).")],
    to: Annotated[str | None, typer.Option(
        "--to", help="Converter release to compare against (default: the fix's release).")] = None,
    bundle: Bundles = None,
    registry: Registry = DEFAULT_REGISTRY,
    as_json: Json = False,
    markdown: Markdown = False,
    no_cache: NoCache = False,
    tolerance: Tolerance = None,
    ignore: Ignore = None,
    weights: Annotated[list[str] | None, typer.Option(
        help="BUNDLE=CHECKPOINT.safetensors: measure each traced module with its own tensors "
             "from the bundle's checkpoint, where the construct's probe can take them (batch "
             "norm: running statistics, affine parameters, the depthwise conv before it); "
             "else decide value conditions from them (repeatable).")] = None,
    runtime: Runtimes = None,
    fixes: Annotated[Path, typer.Option(
        "--fixes", help="The fix database (e.g. a draft of the next release's records): the "
                        "fix is looked up there, and changes of its release step that no "
                        "record there explains are mentioned.")] = FIXES_FILE,
    verify: Annotated[bool, typer.Option(
        "--verify", help="A pipeline record (a coreai-core pin): measure its release step on "
                         "each bundle's whole program (inventory verify's parts) where none is "
                         "stored; without it a stored check is read, else the asset probe "
                         "stands in and the answer says so.")] = False,
    quiet: Quiet = False,
) -> None:
    """Which shipped bundles does one converter fix change, and must they be re-exported?"""
    from inventory.affected import affected, parse_weights
    from inventory.ignore import load_ignores
    from inventory.output import Renderer
    from inventory.policy import load_policy
    from inventory.report.json_report import affected_record
    from inventory.report.table import affected_markdown, affected_table
    from inventory.runtimes import parse_overrides
    from oracle.fixes import find_fix, load_fixes

    fmt = OutputFormat.choose(as_json, markdown)
    with answering("affected", as_json):
        check_release("--to", to)
        check_number("--tolerance", tolerance, 0, inclusive=False)
        python_ok()
        records = load_fixes(fixes)
        the_fix = find_fix(fix, records, fixes)
        all_bundles = load_registry(registry)
        bundles = select(all_bundles, bundle)
        ignores = load_ignores(ignore)
        checkpoints = parse_weights(weights, all_bundles)
        catalog = load_catalog()
        runtimes = parse_overrides(runtime, catalog)
        with progress(not quiet) as report_progress:
            report = affected(the_fix, bundles, catalog, load_policy(tolerance), to=to,
                              use_cache=not no_cache, progress=report_progress,
                              ignores=ignores, weights=checkpoints, runtimes=runtimes,
                              fixes=records, verify=verify)
    Renderer("affected", affected_record, affected_table, affected_markdown).render(
        report, fmt, out, report.warnings)
    warn(report.warnings)
    finish(exit_for_reexport(report.reexport))


@command(app, "plan")
def plan_cmd(
    to: Annotated[str, typer.Option("--to", help="The release to re-export with.")],
    bundle: Bundles = None,
    baseline: Annotated[Path | None, typer.Option(
        help="A previous `plan --json`: report only what changed since.")] = None,
    ignore: Ignore = None,
    registry: Registry = DEFAULT_REGISTRY,
    as_json: Json = False,
    markdown: Markdown = False,
    no_cache: NoCache = False,
    tolerance: Tolerance = None,
    runtime: Runtimes = None,
    fixes: Annotated[Path, typer.Option(
        "--fixes", help="The fix database (e.g. a draft of the next release's records); a "
                        "change is credited to its records of the step it happens in.")
    ] = FIXES_FILE,
    verify: Annotated[bool, typer.Option(
        "--verify", help="Measure each bundle's whole program along the release chain "
                         "(inventory verify) and join it to the plan; without it, a stored "
                         "check is read. Exit 3 on an inconsistency.")] = False,
    run_budget: RunBudget = 120.0,
    full: Annotated[bool, typer.Option(
        "--full", help="The whole-program check of each bundle's full target, even where its "
                       "registry entry states a miniature: measured with --verify, else read "
                       "if stored.")] = False,
    quiet: Quiet = False,
) -> None:
    """Every fix between each bundle's exporter and --to, and whether each shipped asset still
    loads where it ships: what forces a re-export (a load failure first), what merely suggests
    one, correctness first."""
    from inventory.ignore import load_ignores
    from inventory.output import Renderer
    from inventory.plan import plan, plan_record, read_baseline, since_baseline
    from inventory.policy import load_policy
    from inventory.report.plan_report import plan_markdown, plan_table
    from inventory.runtimes import parse_overrides
    from oracle.fixes import load_fixes

    fmt = OutputFormat.choose(as_json, markdown)
    with answering("plan", as_json):
        check_release("--to", to)
        check_number("--tolerance", tolerance, 0, inclusive=False)
        check_budget("--run-budget", run_budget)
        if baseline is not None:
            read_baseline(baseline)  # a malformed baseline fails before the run, not after it
        python_ok()
        catalog = load_catalog()
        runtimes = parse_overrides(runtime, catalog)
        bundles = select(load_registry(registry), bundle)
        records = load_fixes(fixes)
        with progress(not quiet) as report_progress:
            from inventory.plan import with_whole
            from inventory.verify.service import verified

            # One answer: a stored whole-program check joins the plan, and --verify measures
            # it first, so that the plan's pipeline records read the same stored steps.
            checks = verified(bundles, to, records, catalog, load_policy(tolerance),
                              use_cache=not no_cache, compute=True,
                              progress=report_progress, run_budget=run_budget,
                              full=full) if verify else None
            result = plan(to, bundles, records, catalog, load_policy(tolerance),
                          load_ignores(ignore), use_cache=not no_cache,
                          progress=report_progress, runtimes=runtimes)
            if checks is None:
                checks = verified(bundles, to, records, catalog, load_policy(tolerance),
                                  use_cache=True, compute=False, progress=report_progress,
                                  run_budget=run_budget, full=full)
            result = with_whole(result, checks, verify)
        if baseline is not None:
            result = since_baseline(result, baseline)
    Renderer("plan", plan_record, plan_table, plan_markdown).render(
        result, fmt, out, result.warnings)
    warn(result.warnings)
    if any(not v.consistent or v.inconclusive for v in result.verified.values()):
        finish(ExitCode.INCONCLUSIVE)
    finish(exit_for_reexport(result.reexport))


@command(app, "release-notes")
def release_notes_cmd(
    old: FromRelease,
    new: ToRelease,
    markdown: Markdown = False,
    as_json: Json = False,
    registry: Registry = DEFAULT_REGISTRY,
    fixes: Annotated[Path, typer.Option(
        "--fixes", help="The fix database (e.g. a draft of the next release's records): the "
                        "fixes listed, and the records that explain a change.")] = FIXES_FILE,
    no_cache: NoCache = False,
    quiet: Quiet = False,
) -> None:
    """Per fix between two releases, per probe regime: does the program change, do values move?
    And every shipped instance's change in each release step that no record of it explains."""
    from inventory.output import Renderer
    from inventory.policy import load_policy
    from inventory.release_notes import release_notes
    from inventory.report.notes_report import notes_markdown, notes_record, notes_table
    from oracle.fixes import load_fixes
    from oracle.regimes import load_regimes

    fmt = OutputFormat.choose(as_json, markdown)
    with answering("release-notes", as_json):
        check_release("--from", old)
        check_release("--to", new)
        python_ok()
        records = load_fixes(fixes)
        with progress(not quiet) as report_progress:
            notes = release_notes(old, new, records, load_regimes(),
                                  load_registry(registry), load_catalog(), load_policy(),
                                  use_cache=not no_cache, progress=report_progress)
    Renderer("release-notes", notes_record, notes_table, notes_markdown).render(notes, fmt, out)


@command(app, "sweep")
def sweep_cmd(
    old: FromRelease,
    new: ToRelease,
    as_json: Json = False,
    fixes: Annotated[Path, typer.Option(
        "--fixes", help="The fix database whose records explain a change (e.g. a draft of "
                        "the next release's records).")] = FIXES_FILE,
    shipped: Annotated[bool, typer.Option(
        "--registry", help="Probe every distinct traced instance of the shipped bundles (their "
                           "own parameters, dtype and pipeline) instead of the library's "
                           "regimes.")] = False,
    registry_file: Annotated[Path, typer.Option(
        "--registry-file", help="The bundle registry --registry reads.")] = DEFAULT_REGISTRY,
    no_cache: NoCache = False,
    quiet: Quiet = False,
) -> None:
    """Every probe in the library (or, with --registry, every shipped instance), no changelog:
    which shipped programs change, and does a fix record of the release step where each
    change happens explain it? Exit 1 when a change is explained by no record."""
    from inventory.output import Renderer
    from inventory.policy import load_policy
    from inventory.release_notes import sweep
    from inventory.report.notes_report import sweep_record, sweep_table
    from oracle.fixes import load_fixes
    from oracle.regimes import load_regimes

    fmt = OutputFormat.choose(as_json)
    with answering("sweep", as_json):
        check_release("--from", old)
        check_release("--to", new)
        python_ok()
        records = load_fixes(fixes)
        with progress(not quiet) as report_progress:
            if shipped:
                from inventory.release_notes import registry_regimes

                regimes = registry_regimes(load_registry(registry_file))
            else:
                regimes = load_regimes()
            result = sweep(old, new, records, regimes, load_catalog(), load_policy(),
                           use_cache=not no_cache, progress=report_progress,
                           source="registry" if shipped else "library")
    Renderer("sweep", sweep_record, sweep_table).render(result, fmt, out)
    finish(ExitCode.FINDING if result.unexplained else ExitCode.OK)


@command(cache_app, "prune")
def cache_prune(
    older_than: Annotated[float | None, typer.Option(
        "--older-than", help="Also remove results older than this many days.")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Remove every stored result.")] = False,
    failures: Annotated[bool, typer.Option(
        "--failures", help="Also remove results that record a failure (a side could not "
                           "convert, a measurement or a runtime could not run).")] = False,
) -> None:
    """Remove interrupted, damaged and outdated results from the store (environments stay);
    a temp folder a running run holds is never touched."""
    from oracle.cache import prune

    with answering("cache prune"):
        # a negative age would make every result "older than" it and empty the store
        check_number("--older-than", older_than, 0, inclusive=True)
        pruned = prune(older_than, everything, failures)
    for line in pruned.removed:
        out.print(f"removed {line}", highlight=False, markup=False)
    for name in pruned.in_use:
        out.print(f"kept {name}: in use by a running run", highlight=False, markup=False)
    # a live run's folder is kept too, and counted so
    out.print(f"{len(pruned.removed)} removed, {pruned.kept + len(pruned.in_use)} kept")


@command(app, "trace")
def trace_cmd(
    bundle: Annotated[list[str] | None, typer.Argument(
        help="Bundles to trace (default: every bundle with a trace target).")] = None,
    registry: Registry = DEFAULT_REGISTRY,
    # "\\[": typer reads help as rich markup, and a TOML table name is not markup
    recipe_root: Annotated[Path | None, typer.Option(
        "--recipe-root", help="A checkout of the recipe repository: trace the recipe's own "
                              "module, built by the builder the registry names "
                              "(\\[bundles.X.recipe.builder]).")] = None,
    write: Annotated[bool, typer.Option(
        "--write", help="Record the traced instances in the registry (with --recipe-root: as "
                        "its authority, with provenance).")] = False,
    check: Annotated[bool, typer.Option(
        "--check", help="Exit 1, listing the differences, if the registry is stale (without "
                        "--recipe-root, a recipe-traced bundle is checked through its "
                        "stand-in's stated differences).")] = False,
    allow_code: Annotated[bool, typer.Option(
        "--allow-code", help="Trust the registry as code: import a trace target or recipe "
                             "adapter it names outside the project's packages (by default "
                             "refused).")] = False,
    quiet: Quiet = False,
) -> None:
    """Trace bundles' export recipes: torch.export the module, read constructs off the graph."""
    from inventory.trace.service import trace_bundles, traceable

    stale: list[str] = []
    with answering("trace"):
        python_ok()
        if recipe_root is not None and not recipe_root.is_dir():
            raise UsageError(f"--recipe-root {recipe_root}: not a folder")
        bundles = [b for b in select(load_registry(registry), bundle)
                   if bundle or traceable(b, recipe_root)]
        with progress(not quiet) as report_progress:
            runs = trace_bundles(registry, bundles, load_catalog(), write=write, check=check,
                                 progress=report_progress, recipe_root=recipe_root,
                                 allow_code=allow_code)
            for result, differences in runs:
                what = "stand-in " if result.is_standin else ""
                out.print(Text.assemble((result.bundle, "bold"), f": {what}{result.target}, "
                          f"{result.decompositions}, {result.aten_ops} aten ops"), highlight=False)
                prov = result.provenance
                if prov.get("commit"):
                    out.print(f"  recipe {prov['repository']} {prov['commit'][:12]} "
                              f"({prov['commit_source']}), {prov['file']}", highlight=False)
                for warning in result.warnings:
                    err.print(f"warning: {warning}", highlight=False)
                for inst in result.instances:
                    out.print(f"  {inst['count']}x {inst['kind']} {inst['dtype']} "
                              f"{inst['params']}", highlight=False)
                if not result.instances:
                    out.print("  no tracked construct")
                stale += differences
    if check and stale:
        for line in stale:
            err.print(f"stale: {line}", highlight=False, soft_wrap=True)
        finish(ExitCode.FINDING)
    if check:
        out.print("registry instances match a fresh trace")


@command(envs_app, "build")
def envs_build(
    versions: Annotated[list[str] | None, typer.Argument(
        help="coreai-torch releases (default: every supported release).")] = None,
) -> None:
    """Build converter environments ahead of time (needs the package registry once)."""
    with answering("envs build"):
        python_ok()
        catalog = load_catalog()
        for version in versions or sorted(catalog.releases):
            with progress(True) as report_progress:
                env = ensure_env(version, catalog, report_progress)
            out.print(f"{env.name}: ready ({env.runtime}) at {env.path}", highlight=False)
            for deviation in deviations_with_evidence(env, catalog):
                out.print(f"  deviation: {deviation}", highlight=False, soft_wrap=True)


@command(envs_app, "list")
def envs_list() -> None:
    """List the converter environments that are ready, with their exact versions."""
    envs = installed_envs()
    catalog = load_catalog()
    damaged = damaged_envs()
    if not envs and not damaged:
        out.print("no converter environments yet (inventory envs build)")
    for line in damaged:
        out.print(line, highlight=False, markup=False, soft_wrap=True)
    for env in envs:
        pkgs = ", ".join(f"{k} {env.packages[k]}" for k in
                         ("coreai-torch", "coreai-core", "torch", "numpy") if k in env.packages)
        out.print(f"{env.name}: {pkgs}", highlight=False)
        for deviation in deviations_with_evidence(env, catalog):
            out.print(f"  deviation: {deviation}", highlight=False, soft_wrap=True)


def _register_scan_and_repair() -> None:
    from inventory.repair_cli import repair_cmd
    from inventory.scan_cli import scan_cmd
    from inventory.verify_cli import verify_cmd

    command(app, "scan")(scan_cmd)
    command(app, "repair")(repair_cmd)
    command(app, "verify")(verify_cmd)


_register_scan_and_repair()


def main() -> None:  # pragma: no cover - console entry for `python -m inventory.cli`
    sys.exit(app())


if __name__ == "__main__":
    main()
