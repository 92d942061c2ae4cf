"""`inventory sweep --from A --to B`: every probe of the library (or every shipped instance),
no changelog: does a record of the release step where a change happens explain it?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inventory.commands.common import (
    ready,
    registry_file_for,
    report,
    use_execution,
)
from inventory.errors import ExitCode
from inventory.options import (
    Common,
    Execution,
    Format,
    FromRelease,
    Json,
    NoCache,
    OutputFile,
    ToRelease,
    takes,
)
from inventory.output import OutputFormat, forms
from inventory.registry import load_registry
from inventory.terminal import finish
from oracle.catalog import FIXES_FILE, Catalog, load_catalog, version_key
from oracle.infra import Progress

# the formats `sweep` has a form in (the table and JSON, and these)
FORMS = forms(OutputFormat.MARKDOWN)


def later(catalog: Catalog, old: str, new: str) -> bool:
    """Both releases are in the catalog and `new` is the later one."""
    return (
        old in catalog.releases and new in catalog.releases and version_key(new) > version_key(old)
    )


@takes
def sweep_cmd(
    *,
    old: FromRelease,
    new: ToRelease,
    as_json: Json = False,
    output_format: Format = None,
    output: OutputFile = None,
    fixes: Annotated[
        Path,
        typer.Option(
            "--fixes",
            metavar="FILE",
            help="The fix database whose records explain a change (e.g. a draft of "
            "the next release's records).",
        ),
    ] = FIXES_FILE,
    shipped: Annotated[
        bool,
        typer.Option(
            "--registry",
            help="Probe every distinct traced instance of the shipped bundles (their "
            "own parameters, dtype and pipeline) instead of the library's "
            "regimes.",
        ),
    ] = False,
    registry_file: Annotated[
        Path | None,
        typer.Option(
            "--registry-file",
            metavar="FILE",
            help="The bundle registry --registry reads (default: recipes.toml).",
        ),
    ] = None,
    no_cache: NoCache = False,
    execution: Execution,
    common: Common,
) -> None:
    """Every probe in the library (or, with --registry, every shipped instance), no changelog:
    which shipped programs change, and does a fix record of the release step where each
    change happens explain it? Exit 1 when a change is explained by no record.

    Examples:
    inventory sweep --from 0.4.1 --to 0.4.2
    inventory sweep --from 0.4.2 --to 0.4.3 --registry
    inventory sweep --from 0.4.2 --to 0.4.3 --fixes draft.toml -f json

    Exit codes:
    0  every change is explained by a record of its release step
    1  a change no record of its step explains
    2  usage or configuration error
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory import batch
    from inventory.output import Renderer, input_files
    from inventory.policy import load_policy
    from inventory.report.notes_report import sweep_markdown, sweep_record, sweep_table
    from inventory.sweep import Sweep, registry_regimes, sweep
    from oracle.catalog import load_fixes, load_regimes
    from oracle.session import Session

    fmt = OutputFormat.choose(as_json, chosen=output_format, command="sweep", forms=FORMS)

    ready(("--from", old), ("--to", new))
    registry_file = registry_file_for(shipped, registry_file)
    use_execution(execution)
    records = load_fixes(fixes)

    def work(progress: Progress) -> Sweep:
        regimes = registry_regimes(load_registry(registry_file)) if shipped else load_regimes()
        catalog = load_catalog()
        with Session(catalog, progress) as session:
            if later(catalog, old, new):  # else `sweep` says what is wrong with the pair
                # every comparison the sweep asks for, handed over at once (each change located
                # step by step as it lands): run side by side, up to --jobs or on a cluster
                session.dispatch(batch.regimes(session, regimes, old, new), use_cache=not no_cache)
            return sweep(
                old,
                new,
                records,
                regimes,
                catalog,
                load_policy(),
                use_cache=not no_cache,
                progress=progress,
                source="registry" if shipped else "library",
                session=session,
            )

    def said(result: Sweep) -> list[str]:
        return (
            [
                f"{len(result.not_run)} probe(s) not run (their worker died, timed out or was "
                "lost): the sweep is inconclusive for them"
            ]
            if result.not_run
            else []
        )

    result = report(
        Renderer(
            "sweep",
            sweep_record,
            sweep_table,
            sweep_markdown,
            inputs=input_files(registry=registry_file if shipped else None, fixes=fixes),
            fixes=fixes,
            forms=FORMS,
        ),
        fmt,
        common.quiet,
        work,
        said,
        to=output,
    )
    if result.unexplained:
        finish(ExitCode.FINDING)
    finish(ExitCode.INCONCLUSIVE if result.not_run else ExitCode.OK)
