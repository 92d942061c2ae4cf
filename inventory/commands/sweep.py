"""`inventory sweep --from A --to B`: every probe of the library (or every shipped instance),
no changelog: does a record of the release step where a change happens explain it?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inventory.commands.common import ready, report
from inventory.errors import ExitCode
from inventory.options import FromRelease, Json, NoCache, Quiet, ToRelease
from inventory.output import OutputFormat
from inventory.registry import DEFAULT_REGISTRY, load_registry
from inventory.terminal import finish
from oracle.fixes import FIXES_FILE
from oracle.progress import Progress
from oracle.releases import load_catalog


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
    from inventory.release_notes import Sweep, registry_regimes, sweep
    from inventory.report.notes_report import sweep_record, sweep_table
    from oracle.fixes import load_fixes
    from oracle.regimes import load_regimes

    fmt = OutputFormat.choose(as_json)
    ready(("--from", old), ("--to", new))
    records = load_fixes(fixes)

    def work(progress: Progress) -> Sweep:
        regimes = registry_regimes(load_registry(registry_file)) if shipped else load_regimes()
        return sweep(old, new, records, regimes, load_catalog(), load_policy(),
                     use_cache=not no_cache, progress=progress,
                     source="registry" if shipped else "library")

    result = report(Renderer("sweep", sweep_record, sweep_table), fmt, quiet, work)
    finish(ExitCode.FINDING if result.unexplained else ExitCode.OK)
