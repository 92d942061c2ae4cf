"""The command line: parse arguments, call one service, hand its result to one renderer.

Examples:
inventory plan --to 0.4.3
inventory affected --fix 40
inventory fixes

Exit codes:
  0  nothing to re-export
  1  at least one re-export required (each command's --help says what 1
     means there)
  2  usage or configuration error (for repair: a refusal), one line on
     stderr
  3  inconclusive: a run failed or the registry cannot tell (never
     reported as a pass)
  4  internal error: a defect in inventory, never a finding
     (INVENTORY_DEBUG=1 prints the traceback)
143  stopped by SIGTERM (cleaned up like Ctrl-C)
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from inventory.commands import (
    affected,
    bisect,
    cache,
    draft,
    envs,
    fixes,
    plan,
    release_notes,
    repair,
    scan,
    sweep,
    trace,
    verify,
)
from inventory.help import CONTEXT, HelpGroup, split_doc
from inventory.signals import stop_on_sigterm
from inventory.terminal import OneLineErrorGroup, command
from inventory.version import version

app = typer.Typer(
    help="Does a new coreai-torch release change the on-device bundles you already shipped?",
    epilog=split_doc(__doc__)[1],
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
    context_settings=CONTEXT,  # -h beside --help, in every command
    cls=OneLineErrorGroup,  # a usage error is one line (under --json, the error envelope)
)
envs_app = typer.Typer(
    help="Converter environments (one per coreai-torch release).",
    no_args_is_help=True,
    cls=HelpGroup,
)
app.add_typer(envs_app, name="envs")
cache_app = typer.Typer(
    help="The store: stored results, environments, runs and temp folders.",
    no_args_is_help=True,
    cls=HelpGroup,
)
app.add_typer(cache_app, name="cache")


def _version(value: bool) -> None:
    if value:
        print(f"inventory {version()}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    stop_on_sigterm()


# Every command, in the order `--help` lists them: (group, name, the function in its module
# under inventory/commands/). `command` gives each its docstring as help and the one wrapper
# that turns any error into one line and an exit code.
COMMANDS = (
    (app, "affected", affected.affected_cmd),
    (app, "plan", plan.plan_cmd),
    (app, "fixes", fixes.fixes_cmd),
    (app, "release-notes", release_notes.release_notes_cmd),
    (app, "sweep", sweep.sweep_cmd),
    (cache_app, "list", cache.cache_list),
    (cache_app, "du", cache.cache_du),
    (cache_app, "prune", cache.cache_prune),
    (app, "trace", trace.trace_cmd),
    (envs_app, "build", envs.envs_build),
    (envs_app, "list", envs.envs_list),
    (envs_app, "discover", envs.envs_discover),
    (app, "scan", scan.scan_cmd),
    (app, "repair", repair.repair_cmd),
    (app, "verify", verify.verify_cmd),
    (app, "bisect", bisect.bisect_cmd),
    (app, "draft", draft.draft_cmd),
)
GROUPS = {envs_app: "envs", cache_app: "cache"}  # a subcommand's envelope name: `cache du`
for group, name, function in COMMANDS:
    command(group, name, f"{GROUPS[group]} {name}" if group in GROUPS else name)(function)


def main() -> None:  # pragma: no cover - console entry for `python -m inventory.cli`
    sys.exit(app())


if __name__ == "__main__":
    main()
