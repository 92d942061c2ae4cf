"""The command line: parse arguments, call one service, hand its result to one renderer.

Exit codes: 0 nothing to re-export, 1 at least one re-export required, 2 usage or
configuration error, 3 inconclusive (a run failed; never reported as a pass).
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from inventory.affected import UsageError, affected
from inventory.policy import load_policy
from inventory.registry import DEFAULT_REGISTRY, RegistryError, load_registry, select
from inventory.report.json_report import affected_json, error_json
from inventory.report.table import affected_markdown, print_affected
from oracle.envs import EnvError, ensure_env, installed_envs, load_catalog, python_ok
from oracle.fixes import FixError, find_fix

EXIT_OK, EXIT_REEXPORT, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3

app = typer.Typer(
    help="Does a new coreai-torch release change the on-device bundles you already shipped?",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
envs_app = typer.Typer(help="Converter environments (one per coreai-torch release).",
                       no_args_is_help=True)
app.add_typer(envs_app, name="envs")
cache_app = typer.Typer(help="The store of probe results.", no_args_is_help=True)
app.add_typer(cache_app, name="cache")

err = Console(stderr=True)
# Piped output (CI logs, files) gets a readable width instead of rich's 80-column default.
out = Console() if Console().is_terminal else Console(width=150)


def _fail(message: str, as_json: bool = False, command: str = "") -> None:
    if as_json:
        print(error_json(command, message))
    err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


@contextmanager
def _progress(enabled: bool):
    """A one-line status on stderr while environments build and probes convert."""
    if not enabled or not err.is_terminal:
        yield lambda msg: err.print(f"[dim]{msg}[/dim]", highlight=False) if enabled else None
        return
    with err.status("starting") as status:
        yield lambda msg: status.update(msg)


@app.command("affected")
def affected_cmd(
    fix: Annotated[str, typer.Option("--fix", help="Fix id (the upstream PR number, e.g. 40).")],
    to: Annotated[str | None, typer.Option(
        "--to", help="Converter release to compare against (default: the fix's release).")] = None,
    bundle: Annotated[list[str] | None, typer.Option(
        "--bundle", "-b", help="Only this bundle (repeatable).")] = None,
    registry: Annotated[Path, typer.Option(help="The bundle registry.")] = DEFAULT_REGISTRY,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print markdown.")] = False,
    no_cache: Annotated[bool, typer.Option(
        "--no-cache", help="Convert and measure again even if a stored result exists.")] = False,
    tolerance: Annotated[float | None, typer.Option(
        help="Relative error vs torch fp32 beyond which a shipped output is wrong "
             "(default: per dtype, inventory/policy.toml).")] = None,
    ignore: Annotated[Path | None, typer.Option(
        help="Accepted risks: TOML ignore entries (fix, bundle, reason, expiry).")] = None,
    weights: Annotated[list[str] | None, typer.Option(
        help="BUNDLE=CHECKPOINT.safetensors: decide value conditions (e.g. batch-norm "
             "running_var range) from the bundle's real weights (repeatable).")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Which shipped bundles does one converter fix change, and must they be re-exported?"""
    from inventory.ignore import load_ignores
    from oracle.conditions import WeightsError

    try:
        python_ok()
        the_fix = find_fix(fix)
        all_bundles = load_registry(registry)
        bundles = select(all_bundles, bundle)
        ignores = load_ignores(ignore)
        checkpoints = _weights(weights, all_bundles)
        catalog = load_catalog()
        with _progress(not quiet) as progress:
            report = affected(the_fix, bundles, catalog, load_policy(tolerance), to=to,
                              use_cache=not no_cache, progress=progress, ignores=ignores,
                              weights=checkpoints)
    except (FixError, RegistryError, EnvError, UsageError, WeightsError) as exc:
        _fail(str(exc), as_json, "affected")
        return
    if as_json:
        print(affected_json(report))
    elif markdown:
        print(affected_markdown(report), end="")
    else:
        print_affected(report, out)
    for warning in report.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    _exit_for(report.reexport)


@app.command("plan")
def plan_cmd(
    to: Annotated[str, typer.Option("--to", help="The release to re-export with.")],
    bundle: Annotated[list[str] | None, typer.Option(
        "--bundle", "-b", help="Only this bundle (repeatable).")] = None,
    baseline: Annotated[Path | None, typer.Option(
        help="A previous `plan --json`: report only what changed since.")] = None,
    ignore: Annotated[Path | None, typer.Option(
        help="Accepted risks: TOML ignore entries (fix, bundle, reason, expiry).")] = None,
    registry: Annotated[Path, typer.Option(help="The bundle registry.")] = DEFAULT_REGISTRY,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print markdown.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Run every probe again.")] = False,
    tolerance: Annotated[float | None, typer.Option(
        help="Relative error vs torch fp32 beyond which a shipped output is wrong.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Every fix between each bundle's exporter and --to: what forces a re-export, what
    merely suggests one, correctness first."""
    from inventory.ignore import load_ignores
    from inventory.plan import plan, since_baseline
    from inventory.report.plan_report import plan_json, plan_markdown, plan_table
    from oracle.fixes import load_fixes

    try:
        python_ok()
        with _progress(not quiet) as progress:
            result = plan(to, select(load_registry(registry), bundle), load_fixes(),
                          load_catalog(), load_policy(tolerance), load_ignores(ignore),
                          use_cache=not no_cache, progress=progress)
        if baseline is not None:
            result = since_baseline(result, baseline)
    except (FixError, RegistryError, EnvError, UsageError) as exc:
        _fail(str(exc), as_json, "plan")
        return
    if as_json:
        print(plan_json(result))
    elif markdown:
        print(plan_markdown(result), end="")
    else:
        out.print(plan_table(result))
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False)
    _exit_for(result.reexport)


def _weights(pairs: list[str] | None, bundles: list) -> dict[str, Path]:
    """Parse repeated BUNDLE=PATH options; the bundle must be registered, the file must exist."""
    out: dict[str, Path] = {}
    known = {b.name for b in bundles}
    for pair in pairs or []:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            raise UsageError(f"--weights takes BUNDLE=PATH, not {pair!r}")
        if name not in known:
            raise UsageError(f"--weights names {name!r}, which is not in the registry")
        if not Path(path).is_file():
            raise UsageError(f"--weights {name}: no file at {path}")
        out[name] = Path(path)
    return out


def _exit_for(level: str) -> None:
    if level == "required":
        raise typer.Exit(EXIT_REEXPORT)
    if level == "inconclusive":
        raise typer.Exit(EXIT_INCONCLUSIVE)


@app.command("release-notes")
def release_notes_cmd(
    old: Annotated[str, typer.Option("--from", help="The release upgraded from.")],
    new: Annotated[str, typer.Option("--to", help="The release upgraded to.")],
    markdown: Annotated[bool, typer.Option("--markdown", help="Print markdown.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    registry: Annotated[Path, typer.Option(help="The bundle registry.")] = DEFAULT_REGISTRY,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Run every probe again.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Per fix between two releases, per probe regime: does the program change, do values move?"""
    from inventory.release_notes import release_notes
    from inventory.report.notes_report import notes_json, notes_markdown, notes_table
    from oracle.fixes import load_fixes
    from oracle.regimes import RegimeError, load_regimes

    try:
        python_ok()
        with _progress(not quiet) as progress:
            notes = release_notes(old, new, load_fixes(), load_regimes(),
                                  load_registry(registry), load_catalog(), load_policy(),
                                  use_cache=not no_cache, progress=progress)
    except (FixError, RegistryError, EnvError, UsageError, RegimeError) as exc:
        _fail(str(exc), as_json, "release-notes")
        return
    if as_json:
        print(notes_json(notes))
    elif markdown:
        print(notes_markdown(notes), end="")
    else:
        out.print(notes_table(notes))


@app.command("sweep")
def sweep_cmd(
    old: Annotated[str, typer.Option("--from", help="The release upgraded from.")],
    new: Annotated[str, typer.Option("--to", help="The release upgraded to.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Run every probe again.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Every probe in the library, no changelog: which shipped programs change, and does a fix
    record explain each change? Exit 1 when a change is explained by no record."""
    from inventory.release_notes import sweep
    from inventory.report.notes_report import sweep_json, sweep_table
    from oracle.fixes import load_fixes
    from oracle.regimes import RegimeError, load_regimes

    try:
        python_ok()
        with _progress(not quiet) as progress:
            result = sweep(old, new, load_fixes(), load_regimes(), load_catalog(),
                           load_policy(), use_cache=not no_cache, progress=progress)
    except (FixError, EnvError, UsageError, RegimeError) as exc:
        _fail(str(exc), as_json, "sweep")
        return
    if as_json:
        print(sweep_json(result))
    else:
        out.print(sweep_table(result))
    if result.unexplained:
        raise typer.Exit(EXIT_REEXPORT)


@cache_app.command("prune")
def cache_prune(
    older_than: Annotated[float | None, typer.Option(
        "--older-than", help="Also remove results older than this many days.")] = None,
    everything: Annotated[bool, typer.Option("--all", help="Remove every stored result.")] = False,
) -> None:
    """Remove interrupted, damaged and outdated results from the store (environments stay)."""
    from oracle.cache import prune

    pruned = prune(older_than, everything)
    for line in pruned.removed:
        out.print(f"removed {line}", highlight=False)
    out.print(f"{len(pruned.removed)} removed, {pruned.kept} kept")


@app.command("trace")
def trace_cmd(
    bundle: Annotated[list[str] | None, typer.Argument(
        help="Bundles to trace (default: every bundle with a trace target).")] = None,
    registry: Annotated[Path, typer.Option(help="The bundle registry.")] = DEFAULT_REGISTRY,
    write: Annotated[bool, typer.Option(
        "--write", help="Record the traced instances in the registry.")] = False,
    check: Annotated[bool, typer.Option(
        "--check", help="Exit 1, listing the differences, if the registry is stale.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Trace bundles' export recipes: torch.export the module, read constructs off the graph."""
    from inventory.trace.service import (
        TraceError,
        differences,
        raw_bundle,
        trace_bundle,
        write_trace,
    )

    try:
        python_ok()
        bundles = [b for b in select(load_registry(registry), bundle)
                   if bundle or b.trace.get("target")]
        catalog = load_catalog()
        stale: list[str] = []
        for b in bundles:
            with _progress(not quiet) as progress:
                result = trace_bundle(b, catalog, progress)
            out.print(f"[bold]{b.name}[/bold]: {result.target}, {result.decompositions}, "
                      f"{result.aten_ops} aten ops", highlight=False)
            for inst in result.instances:
                out.print(f"  {inst['count']}x {inst['kind']} {inst['dtype']} {inst['params']}",
                          highlight=False)
            if not result.instances:
                out.print("  no tracked construct")
            if check:
                stale += differences(raw_bundle(registry, b.name), result)
            if write:
                write_trace(registry, result)
    except (RegistryError, EnvError, TraceError) as exc:
        _fail(str(exc))
        return
    if check and stale:
        for line in stale:
            err.print(f"stale: {line}", highlight=False, soft_wrap=True)
        raise typer.Exit(EXIT_REEXPORT)
    if check:
        out.print("registry instances match a fresh trace")


@envs_app.command("build")
def envs_build(
    versions: Annotated[list[str] | None, typer.Argument(
        help="coreai-torch releases (default: every supported release).")] = None,
) -> None:
    """Build converter environments ahead of time (needs the package registry once)."""
    try:
        python_ok()
        catalog = load_catalog()
        for version in versions or sorted(catalog.releases):
            with _progress(True) as progress:
                env = ensure_env(version, catalog, progress)
            out.print(f"{env.name}: ready ({env.runtime}) at {env.path}", highlight=False)
            for deviation in env.deviations:
                out.print(f"  deviation: {deviation}", highlight=False)
    except EnvError as exc:
        _fail(str(exc))


@envs_app.command("list")
def envs_list() -> None:
    """List the converter environments that are ready, with their exact versions."""
    envs = installed_envs()
    if not envs:
        out.print("no converter environments yet (inventory envs build)")
    for env in envs:
        pkgs = ", ".join(f"{k} {env.packages[k]}" for k in
                         ("coreai-torch", "coreai-core", "torch", "numpy") if k in env.packages)
        out.print(f"{env.name}: {pkgs}", highlight=False)
        for deviation in env.deviations:
            out.print(f"  deviation: {deviation}", highlight=False)


def _register_scan() -> None:
    from inventory.scan_cli import scan_cmd

    app.command("scan")(scan_cmd)


_register_scan()


def main() -> None:  # pragma: no cover - console entry for `python -m inventory.cli`
    sys.exit(app())


if __name__ == "__main__":
    main()
