"""`inventory draft --from A --to B`: the fix records of a release step, drafted from what the
instruments measure, as a fix database `--fixes` reads."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from inventory.commands.common import ready, report, run
from inventory.errors import ExitCode
from inventory.options import CatalogFile, FromRelease, Json, NoCache, Quiet, ToRelease
from inventory.output import OutputFormat
from inventory.output_file import WRITES
from inventory.registry import DEFAULT_REGISTRY
from inventory.terminal import finish
from oracle.catalog import FIXES_FILE
from oracle.infra import Progress


def draft_cmd(
    old: FromRelease,
    new: ToRelease,
    repo: Annotated[
        Path | None,
        typer.Option(
            "--repo",
            metavar="DIR",
            help="A git repository of coreai-torch holding both releases' commits: each change is "
            "grouped by the commit bisection names for it (its pull request and title from "
            "the merge message), the pin commit becomes a pipeline record. Without it, "
            "changes are grouped by construct and stage, and the draft says so.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FILE",
            help="Write the draft here (default: print it): a regular file or a new name, "
            "never a file the command reads, a link, a FIFO or a device (checked before the run).",
        ),
        WRITES,
    ] = None,
    against: Annotated[
        Path | None,
        typer.Option(
            "--against",
            metavar="FILE",
            help="A curated fix database (e.g. oracle/catalog/fixes.toml): print, record by "
            "record, where the draft differs from its records of the same steps, with precision "
            "and recall.",
        ),
    ] = None,
    fixes: Annotated[
        Path,
        typer.Option(
            "--fixes",
            metavar="FILE",
            help="The fix database whose records of --from and earlier the draft keeps, so that "
            "it answers every bundle's whole range.",
        ),
    ] = FIXES_FILE,
    verify: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Measure every bundle's whole program across the step (inventory "
            "verify) and draft from its regions too; without it, stored checks "
            "are read.",
        ),
    ] = False,
    allow_code: Annotated[
        bool,
        typer.Option(
            "--allow-code",
            help="Consent to run the repository's code (--repo): each commit's "
            "coreai_torch converts the probes.",
        ),
    ] = False,
    only: Annotated[
        list[str] | None,
        typer.Option(
            "--probe",
            metavar="PROBE",
            help="Only this probe: a regime id or a construct (repeatable); the load checks run "
            "only with --probe asset_hierarchy, no whole-program region is read.",
        ),
    ] = None,
    registry_file: Annotated[
        Path,
        typer.Option(
            "--registry",
            metavar="FILE",
            help="The bundle registry whose shipped instances are probed.",
        ),
    ] = DEFAULT_REGISTRY,
    as_json: Json = False,
    no_cache: NoCache = False,
    catalog: CatalogFile = None,
    quiet: Quiet = False,
) -> None:
    """Draft the fix records of every release step from --from to --to from what the
    instruments measure: the library and registry sweeps, the whole-program regions of stored
    (or --verify) checks, the load checks of the asset probe, and with --repo bisection (the
    commit and pull request of each change) and the commit that moves the coreai-core pin. Each
    record holds its step, constructs, stage, measured columns (reaches, values), the
    conditions under which it changes, touches, checked = "drafted" and its evidence.

    Examples:
    inventory draft --from 0.4.2 --to 0.4.3 -o draft.toml
    inventory draft --from 0.4.1 --to 0.4.2 --repo ct --allow-code -o d.toml
    inventory draft --from 0.4.2 --to 0.4.3 -o d.toml --against fixes.toml

    Exit codes:
    0  drafted (with --against: no difference from the curated records)
    1  with --against: a record that differs, is missing or is extra
    2  usage or configuration error (--repo without --allow-code)
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.draft.service import Draft, draft, text, write
    from inventory.output import Renderer
    from inventory.policy import load_policy
    from inventory.registry import load_registry
    from inventory.report.draft_report import draft_record, draft_table
    from oracle.catalog import load_catalog, load_regimes

    fmt = OutputFormat.choose(as_json)
    ready(("--from", old), ("--to", new))

    def work(progress: Progress) -> Draft:
        made = draft(
            old,
            new,
            load_regimes(),
            load_registry(registry_file),
            load_catalog(),
            load_policy(),
            fixes,
            repo,
            allow_code,
            verify,
            not no_cache,
            frozenset(only or ()),
            against,
            progress,
        )
        return write(made, output) if output is not None else made

    if fmt is OutputFormat.TABLE and output is None and against is None:
        # the draft itself on stdout, each line whole (a wrapped line would not be TOML)
        print(text(run(quiet, work)), end="")
        return
    result = report(Renderer("draft", draft_record, draft_table), fmt, quiet, work)
    if against is not None and result.against is not None and result.against.differences:
        finish(ExitCode.FINDING)
