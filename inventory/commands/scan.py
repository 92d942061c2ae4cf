"""`inventory scan`: read shipped .aimodel bundles with coreai-core's own parser (its exit
codes: the command's docstring, which is its --help)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inventory.commands.common import ready, run, show, use_executor
from inventory.errors import ExitCode
from inventory.options import (
    Common,
    ExecutorName,
    Format,
    Jobs,
    Json,
    OutputFile,
    RayAddress,
    Registry,
    Runtimes,
    release_option,
    takes,
)
from inventory.output import OutputFormat, Renderer, forms, input_files
from inventory.registry import DEFAULT_REGISTRY, load_registry
from inventory.terminal import err, fail, finish, labelled
from oracle.catalog import load_catalog

# the formats `scan` has a form in (the table and JSON, and these)
FORMS = forms(OutputFormat.MARKDOWN, OutputFormat.CYCLONEDX)


@takes
def scan_cmd(
    *,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="PATH",
            help="Bundle folders (.aimodel), or folders holding bundles.",
            show_default=False,
        ),
    ] = None,
    against_registry: Annotated[
        bool,
        typer.Option(
            "--against-registry",
            help="Match each bundle to its registry entry (by file name or fingerprint) and flag "
            "what disagrees with the traced instances.",
        ),
    ] = False,
    registry: Registry = DEFAULT_REGISTRY,
    reader: Annotated[
        str | None,
        typer.Option(
            "--reader",
            metavar="VERSION",
            callback=release_option,
            help="Read only with this coreai-torch release's environment (default: the core the "
            "bundle's producer names, then the others).",
        ),
    ] = None,
    runtime: Runtimes = None,
    executor: ExecutorName = "local",
    ray_address: RayAddress = None,
    jobs: Jobs = None,
    as_json: Json = False,
    output_format: Format = None,
    output: OutputFile = None,
    common: Common,
) -> None:
    """Read shipped .aimodel bundles with coreai-core's own parser: metadata, entry points, op
    histogram with composites resolved, dynamic shapes, weights fingerprint, the exporter its
    producer stamp points to; and load each on every runtime (contained: a runtime that aborts
    is reported). Nothing in a bundle is run; a runtime that does not load a bundle is
    reported, not an error of the scan.

    Examples:
    inventory scan shipped/
    inventory scan sam3_float16/sam3_float16.aimodel -f json -o scan.json
    inventory scan shipped/ --against-registry --runtime b3

    Exit codes:
    0  every bundle read and loaded on its deployment runtimes (with
       --against-registry: no disagreement)
    1  a bundle does not load on a deployment runtime (--runtime, else every
       runtime from the core its exporter pins), or a disagreement with the
       registry
    2  usage error, or a bundle that cannot be read (one line each)
    3  a runtime gave no lasting answer (it aborted once, not again in a
       fresh process: flaky), or a bundle was not read because no reader's
       environment could be built (scan again)
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.deployment import parse_overrides
    from inventory.report.scan_report import scan_markdown, scan_record, scan_text
    from inventory.scan import scan

    fmt = OutputFormat.choose(as_json, chosen=output_format, command="scan", forms=FORMS)

    as_json = fmt is OutputFormat.JSON
    ready()
    use_executor(executor, ray_address, jobs)
    known = load_catalog()  # with --catalog's releases (set for the run by `command`)
    runtimes = parse_overrides(runtime, known)
    linked = (registry, load_registry(registry)) if against_registry else None
    try:
        result = run(
            common.quiet or as_json,
            lambda progress: scan(
                list(paths or []),
                known,
                reader=reader,
                registry=linked,
                progress=progress,
                runtimes=runtimes,
            ),
        )
    except OSError as exc:
        fail(f"{exc.filename or 'scan'}: {exc.strerror or exc}", as_json, "scan")
        return
    failed = result.errors
    flaky = [
        f"{s.name} on coreai-core {o.core}: {o.describe()} (inconclusive: scan again)"
        for s in result.scans
        for o in s.loads
        if o.outcome == "flaky"
    ]
    result.warnings.extend(w for w in flaky if w not in result.warnings)
    error = (
        (
            f"{len(failed)} of {len(result.scans)} bundle(s) could not be read; the first: "
            f"{failed[0].error}"
        )
        if failed
        else None
    )
    show(
        Renderer(
            "scan",
            scan_record,
            scan_text,
            scan_markdown,
            inputs=input_files(registry=registry if against_registry else None),
            forms=FORMS,
        ),
        fmt,
        result,
        result.warnings,
        error,
        to=output,
    )
    for bad in failed:
        err.print(labelled("error:", "red", bad.error or ""), highlight=False, soft_wrap=True)
    if [bad for bad in failed if not bad.unbuilt]:
        finish(ExitCode.USAGE)
    if failed:
        finish(ExitCode.INCONCLUSIVE)  # read by no core only for want of an environment
    if result.disagreements or result.not_loading:
        finish(ExitCode.FINDING)
    finish(ExitCode.INCONCLUSIVE if flaky else ExitCode.OK)
