"""`inventory release-notes --from A --to B`: per fix between two releases, per probe regime,
does the program change, do values move?"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated

import typer

from inventory.commands.common import ready, report, use_execution
from inventory.options import (
    Common,
    Details,
    Execution,
    FromRelease,
    NoCache,
    Output,
    Registry,
    ToRelease,
    takes,
)
from inventory.output import OutputFormat, forms
from inventory.registry import DEFAULT_REGISTRY, load_registry
from oracle.catalog import FIXES_FILE, load_catalog
from oracle.infra import Progress

# the formats `release-notes` has a form in (the table and JSON, and these)
FORMS = forms(OutputFormat.MARKDOWN)


@takes
def release_notes_cmd(
    *,
    old: FromRelease,
    new: ToRelease,
    out: Output,
    details: Details = False,
    registry: Registry = DEFAULT_REGISTRY,
    fixes: Annotated[
        Path,
        typer.Option(
            "--fixes",
            metavar="FILE",
            help="The fix database (e.g. a draft of the next release's records): the "
            "fixes listed, and the records that explain a change.",
        ),
    ] = FIXES_FILE,
    no_cache: NoCache = False,
    execution: Execution,
    common: Common,
) -> None:
    """Per fix between two releases, per library probe case: does the program change, do values
    move? Per shipped bundle it concerns: its own answer, as `affected --fix` gives it. And every
    shipped instance's change in each release step that no record of it explains.

    Examples:
    inventory release-notes --from 0.4.1 --to 0.4.2
    inventory release-notes --from v0.4.2 --to v0.4.3 --markdown
    inventory release-notes --from 0.4.1 --to 0.4.3 -f json -o notes.json

    Exit codes:
    0  the notes were written (what changes is in them, not in the code)
    2  usage or configuration error
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory import batch
    from inventory.affected import Analyzer
    from inventory.output import Renderer, input_files
    from inventory.policy import load_policy
    from inventory.release_notes import ReleaseNotes, release_notes
    from inventory.report.notes_report import notes_markdown, notes_record, notes_table
    from oracle.catalog import load_fixes, load_regimes
    from oracle.session import Session

    fmt = out.format("release-notes", FORMS)

    ready(("--from", old), ("--to", new))
    use_execution(execution)
    records = load_fixes(fixes)
    markdown_form = functools.partial(notes_markdown, details=details)

    def work(progress: Progress) -> ReleaseNotes:
        catalog, regimes, bundles = load_catalog(), load_regimes(), load_registry(registry)
        policy = load_policy()
        with Session(catalog, progress) as session:
            # each concerned bundle's own answer for a record, as `affected --fix` gives it
            analyzer = Analyzer(session, policy, not no_cache, fixes=records)
            # every comparison of the notes, handed to the executor at once
            session.dispatch(
                batch.release_notes(session, old, new, records, regimes, bundles, analyzer),
                use_cache=not no_cache,
            )
            return release_notes(
                old,
                new,
                records,
                regimes,
                bundles,
                catalog,
                policy,
                use_cache=not no_cache,
                progress=progress,
                session=session,
                answer=lambda bundle, fix: analyzer.answer(bundle, fix, fix.ships_in),
            )

    report(
        Renderer(
            "release-notes",
            notes_record,
            notes_table,
            markdown_form,
            inputs=input_files(registry=registry, fixes=fixes),
            fixes=fixes,
            forms=FORMS,
        ),
        fmt,
        common.quiet,
        work,
        to=out.output,
    )
