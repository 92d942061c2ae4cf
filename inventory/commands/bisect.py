"""`inventory bisect --from A --to B --repo DIR`: the commit of the converter's history that
changes each probe that changes between two releases."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inventory.commands.common import ready, registry_file_for, report
from inventory.errors import ExitCode
from inventory.options import (
    Common,
    Format,
    FromRelease,
    Json,
    Markdown,
    NoCache,
    OutputFile,
    ToRelease,
    takes,
)
from inventory.output import OutputFormat, forms
from inventory.terminal import finish
from oracle.catalog import FIXES_FILE
from oracle.infra import Progress

# the formats `bisect` has a form in (the table and JSON, and these)
FORMS = forms(OutputFormat.MARKDOWN)


@takes
def bisect_cmd(
    *,
    old: FromRelease,
    new: ToRelease,
    repo: Annotated[
        Path,
        typer.Option(
            "--repo",
            metavar="DIR",
            help="A git repository of coreai-torch (bare or not; a clone of "
            "https://github.com/apple/coreai-torch) holding both releases' commits: a tag vX, "
            "or the commit that sets the version.",
        ),
    ],
    as_json: Json = False,
    markdown: Markdown = False,
    output_format: Format = None,
    output: OutputFile = None,
    registry: Annotated[
        bool,
        typer.Option(
            "--registry",
            help="Also bisect every distinct traced instance of the shipped "
            "bundles that changes, beside the library's regimes.",
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
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--probe",
            metavar="PROBE",
            help="Only this probe: a regime id (max_pool2d/functional-no-stride) or a "
            "construct (every regime of it); repeatable.",
        ),
    ] = None,
    fixes: Annotated[
        Path,
        typer.Option(
            "--fixes", metavar="FILE", help="The fix database the release comparison is read with."
        ),
    ] = FIXES_FILE,
    every_commit: Annotated[
        bool,
        typer.Option(
            "--every-commit",
            help="Convert each changing probe at every commit against its parent "
            "instead of a binary search: every change point, including one "
            "undone between two commits a binary search tests.",
        ),
    ] = False,
    allow_code: Annotated[
        bool,
        typer.Option(
            "--allow-code",
            help="Consent to run the repository's code: each commit's coreai_torch "
            "converts the probes (its files are copied, never built).",
        ),
    ] = False,
    no_cache: NoCache = False,
    common: Common,
) -> None:
    """Per probe that changes from --from to --to: convert it at the commits between the two
    releases (binary search over the first-parent history, each commit built with the pins of
    the release it descends from) and name the commit that changes it, with the pull request
    of its merge message. It runs the repository's code (each commit's coreai_torch converts
    the probes), so it needs --allow-code. Exit 1 when a changing probe could not be attributed.

    Examples:
    inventory bisect --from 0.4.0 --to 0.4.1 --repo coreai-torch --allow-code
    inventory bisect --from 0.4.1 --to 0.4.2 --repo src --allow-code -f json

    Exit codes:
    0  every changing probe was attributed to a commit
    1  a changing probe could not be attributed
    2  usage or configuration error (a repository without both releases, no
       --allow-code), or a release's environment that cannot be built
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.bisect import Bisection, bisect
    from inventory.output import Renderer, input_files
    from inventory.policy import load_policy
    from inventory.registry import load_registry
    from inventory.report.bisect_report import bisect_markdown, bisect_record, bisect_table
    from oracle.catalog import load_catalog, load_fixes, load_regimes

    fmt = OutputFormat.choose(as_json, markdown, output_format, command="bisect", forms=FORMS)

    ready(("--from", old), ("--to", new))
    registry_file = registry_file_for(registry, registry_file)
    records = load_fixes(fixes)

    def work(progress: Progress) -> Bisection:
        bundles = load_registry(registry_file) if registry else None
        return bisect(
            old,
            new,
            repo,
            records,
            load_regimes(),
            load_catalog(),
            load_policy(),
            bundles,
            use_cache=not no_cache,
            progress=progress,
            only=frozenset(only or ()),
            every_commit=every_commit,
            allow_code=allow_code,
        )

    result = report(
        Renderer(
            "bisect",
            bisect_record,
            bisect_table,
            bisect_markdown,
            inputs=input_files(registry=registry_file if registry else None, fixes=fixes),
            fixes=fixes,
            forms=FORMS,
        ),
        fmt,
        common.quiet,
        work,
        to=output,
    )
    finish(ExitCode.FINDING if result.unattributed else ExitCode.OK)
