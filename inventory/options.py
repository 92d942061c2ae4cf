"""Command-line options shared by several commands, each declared once (name, flags, help).

A command takes one as `registry: Registry = DEFAULT_REGISTRY`; the output flags become one
`OutputFormat` with `OutputFormat.choose(as_json, markdown)`.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated

import typer

from inventory.errors import UsageError

Registry = Annotated[Path, typer.Option("--registry", help="The bundle registry.")]
NoCache = Annotated[bool, typer.Option(
    "--no-cache", help="Convert and measure again even if a stored result exists.")]
RunBudget = Annotated[float, typer.Option(
    "--run-budget", metavar="SECONDS",
    help="Seconds the model-level runs of a whole-program check may cost (estimated from the "
         "registry's measured seconds per run); over it they are skipped, said so, and the "
         "region runs measure every region. 'inf': always run.")]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines.")]
Json = Annotated[bool, typer.Option("--json", help="Print JSON (a versioned envelope).")]
Markdown = Annotated[bool, typer.Option("--markdown", help="Print markdown.")]
Tolerance = Annotated[float | None, typer.Option(
    "--tolerance", help="Relative error vs torch fp32 beyond which a shipped output is wrong "
                        "(default: per dtype, inventory/policy.toml).")]
Ignore = Annotated[Path | None, typer.Option(
    "--ignore", help="Accepted risks: TOML ignore entries (fix, bundle, reason, expiry).")]
Bundles = Annotated[list[str] | None, typer.Option(
    "--bundle", "-b", help="Only this bundle (repeatable).")]
FullForm = Annotated[bool, typer.Option(
    "--full", help="Build each bundle's full target even where its registry entry states a "
                   "miniature (its verify form): every repeated layer, at the cost of "
                   "converting and running all of them.")]
ExecutorName = Annotated[str, typer.Option(
    "--executor", envvar="INVENTORY_EXECUTOR", metavar="local|ray",
    help="Where conversions and measurements run: local (this machine's workers, the default) "
         "or ray (the nodes of a Ray cluster; needs the ray extra and --ray-address).")]
RayAddress = Annotated[str | None, typer.Option(
    "--ray-address", envvar="RAY_ADDRESS", metavar="HOST:PORT",
    help="The Ray cluster --executor ray runs on: the address `ray start --head` prints, or "
         "auto (the cluster started on this machine).")]
FromRelease = Annotated[str, typer.Option("--from", help="The release upgraded from.")]
ToRelease = Annotated[str, typer.Option("--to", help="The release upgraded to.")]
Runtimes = Annotated[list[str] | None, typer.Option(
    "--runtime", help="A coreai-core runtime the bundles must load on, e.g. 1.0.0b3 or b3 "
                      "(repeatable; overrides the registry; default: every runtime in the "
                      "catalog at or above the core the target release pins; scan: every "
                      "runtime in the catalog, and only these are tried).")]


# Checked in the command, not as typer callbacks, so a bad value is the project's one line (and
# the JSON envelope in --json mode) rather than click's usage box.
def check_release(flag: str, value: str | None) -> None:
    """An empty release is a mistake (an unset shell variable), never "the default"."""
    if value is not None and not value.strip():
        raise UsageError(f"{flag} must name a release (e.g. 0.4.2), not {value!r}")


def check_number(flag: str, value: float | None, minimum: float, inclusive: bool) -> None:
    """A finite number above (or, inclusive, at least) the minimum; NaN and inf are refused."""
    if value is None:
        return
    if not math.isfinite(value) or value < minimum or (not inclusive and value == minimum):
        bound = f">= {minimum:g}" if inclusive else f"> {minimum:g}"
        raise UsageError(f"{flag} must be a finite number {bound}, not {value:g}")


def check_budget(flag: str, value: float) -> None:
    """Seconds at least 0, or inf (no limit); NaN is refused."""
    if math.isnan(value) or value < 0:
        raise UsageError(f"{flag} must be a number of seconds >= 0 or inf, not {value:g}")
