"""`inventory scan`: the command. Registered in cli.py with `app.command("scan")(scan_cmd)`.

Exit codes: 0 every bundle read (and, with --against-registry, no disagreement), 1 at least one
disagreement with the registry, 2 usage error or a bundle that cannot be read (one line on stderr
per bundle, never a traceback).
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from inventory.registry import DEFAULT_REGISTRY, RegistryError, load_registry

EXIT_OK, EXIT_DISAGREE, EXIT_USAGE = 0, 1, 2

_err = Console(stderr=True)
_out = Console()


def _fail(message: str, as_json: bool) -> None:
    from inventory.report.json_report import error_json

    if as_json:
        print(error_json("scan", message))
    _err.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    raise typer.Exit(EXIT_USAGE)


@contextmanager
def _progress(enabled: bool):
    """A one-line status on stderr while environments build and bundles are read."""
    if not enabled or not _err.is_terminal:
        yield lambda _msg: None
        return
    with _err.status("starting") as status:
        yield lambda msg: status.update(msg)


def scan_cmd(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Bundle folders (.aimodel), or folders holding bundles.", show_default=False)] = None,
    against_registry: Annotated[bool, typer.Option(
        "--against-registry",
        help="Match each bundle to its registry entry (by file name or fingerprint) and flag "
             "what disagrees with the traced instances.")] = False,
    registry: Annotated[Path, typer.Option(help="The bundle registry.")] = DEFAULT_REGISTRY,
    reader: Annotated[str | None, typer.Option(
        "--reader", help="Read only with this coreai-torch release's environment (default: the "
                         "core the bundle's producer names, then the others).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")] = False,
) -> None:
    """Read shipped .aimodel bundles with coreai-core's own parser: metadata, entry points, op
    histogram with composites resolved, dynamic shapes, weights fingerprint. Nothing in a
    bundle is run."""
    from inventory.report.scan_report import scan_json, scan_text
    from inventory.scan import ScanError, scan
    from oracle.envs import EnvError, load_catalog, python_ok

    try:
        python_ok()
        catalog = load_catalog()
        linked = None
        if against_registry:
            linked = (registry, load_registry(registry))
        with _progress(not quiet and not as_json) as progress:
            report = scan(list(paths or []), catalog, reader=reader, registry=linked,
                          progress=progress)
    except (ScanError, EnvError, RegistryError) as exc:
        _fail(str(exc), as_json)
        return
    except OSError as exc:
        _fail(f"{exc.filename or 'scan'}: {exc.strerror or exc}", as_json)
        return
    if as_json:
        print(scan_json(report))
    else:
        _out.print(scan_text(report))
    for warning in report.warnings:
        _err.print(f"[yellow]warning:[/yellow] {warning}", highlight=False, soft_wrap=True)
    for failed in report.errors:
        _err.print(f"[red]error:[/red] {failed.error}", highlight=False, soft_wrap=True)
    if report.errors:
        raise typer.Exit(EXIT_USAGE)
    if report.disagreements:
        raise typer.Exit(EXIT_DISAGREE)
