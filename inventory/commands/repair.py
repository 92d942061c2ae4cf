"""`inventory repair`: a coreai-torch 0.4.0 asset repaired in place of a re-export (its exit
codes: the command's docstring, which is its --help)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inventory.errors import USER_ERRORS, ExitCode
from inventory.options import (
    CatalogFile,
    ExecutorName,
    Jobs,
    Json,
    Markdown,
    ProgressMode,
    Quiet,
    RayAddress,
)
from inventory.output import OutputFormat, emit, envelope, forms
from inventory.output_file import WRITES
from inventory.terminal import err, labelled, progress
from oracle.catalog import load_catalog
from oracle.envs import python_ok

# the formats `repair` has a form in (the table and JSON, and these)
FORMS = forms(OutputFormat.MARKDOWN)


def repair_cmd(
    bundle: Annotated[
        Path,
        typer.Argument(
            help="The .aimodel bundle to repair (never written).",
            metavar="BUNDLE",
            show_default=False,
        ),
    ],
    output: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            metavar="PATH",
            help="Where to write the repaired bundle (must not exist).",
        ),
    ],
    as_json: Json = False,
    markdown: Markdown = False,
    output_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            "-f",
            metavar="table|json|markdown",
            help="The report's format: table (the default), json (= --json) or markdown (= "
            "--markdown). Its -o is the repaired bundle; --report FILE writes the report.",
        ),
    ] = None,
    report_file: Annotated[
        Path | None,
        typer.Option(
            "--report",
            metavar="FILE",
            help="Write the report (in --format) to FILE instead of standard output: a regular "
            "file or a new name, never one the command reads, a link, a FIFO or a device.",
        ),
        WRITES,
    ] = None,
    executor: ExecutorName = "local",
    ray_address: RayAddress = None,
    jobs: Jobs = None,
    quiet: Quiet = False,
    progress_shown: ProgressMode = None,
    catalog: CatalogFile = None,
) -> None:
    """Repair a coreai-torch 0.4.0 asset in place of a re-export: rewrite its debug locations
    with the oldest core, re-save it with the next, and write OUT only once it is verified to
    load and run on every runtime in the catalog, with byte-identical weights and bit-identical
    outputs on the original's runtime.

    Examples:
    inventory repair sam3_float16.aimodel -o sam3_float16.repaired.aimodel
    inventory repair old.aimodel --out fixed.aimodel -f json
    inventory repair old.aimodel -o fixed.aimodel -f markdown --report repair.md

    Exit codes:
    0  repaired and verified (the output written)
    2  refused: usage, a bundle that cannot be read, the output exists, or
       anything the repair could not verify (one line; nothing written)
    3  inconclusive: a runtime aborted once and not again (flaky)
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.commands.common import show, use_executor
    from inventory.output import Renderer, input_files
    from inventory.repair import repair
    from inventory.report.repair_report import repair_markdown, repair_record, repair_table

    fmt = OutputFormat.choose(as_json, markdown, output_format, command="repair", forms=FORMS)
    use_executor(executor, ray_address, jobs)
    as_json = fmt is OutputFormat.JSON
    renderer = Renderer(
        "repair",
        repair_record,
        repair_table,
        repair_markdown,
        inputs=input_files(),
        soft_wrap=True,
        forms=FORMS,
    )
    try:
        python_ok()
        with progress(not quiet and not as_json) as report_progress:
            report = repair(bundle, output, load_catalog(), report_progress)
    except USER_ERRORS as exc:
        # Refused, not failed: nothing was written, and the line says what could not be shown.
        # A runtime with no lasting answer (flaky) is neither: inconclusive, exit 3.
        from inventory.repair import RepairInconclusive

        flaky = isinstance(exc, RepairInconclusive)
        if as_json:
            emit(envelope("repair", error=str(exc)))
        err.print(
            labelled("inconclusive:" if flaky else "refused:", "red", str(exc)),
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(ExitCode.INCONCLUSIVE if flaky else ExitCode.USAGE) from None
    show(renderer, fmt, report, to=report_file)
