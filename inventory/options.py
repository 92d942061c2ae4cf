"""Command-line options shared by several commands, each declared once (name, flags, help).

A command takes one as `registry: Registry = DEFAULT_REGISTRY`; the output flags become one
`OutputFormat` with `OutputFormat.choose(as_json, markdown)`. Every option that takes a value
names what to type (its metavar: VERSION, BUNDLE, FILE); a flag names none (`inventory.help`).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Annotated

import typer

from inventory.errors import UsageError
from inventory.output_file import WRITES


def release_name(value: str) -> str:
    """A release as the catalog names it. The one place a release typed on the command line is
    normalised: `v0.4.3` (how the converter's git tags name it) is 0.4.3; anything else is left
    as typed, for the catalog to accept or refuse."""
    return value[1:] if re.fullmatch(r"[vV]\d+(\.\d+)*", value) else value


def release_option(value: str | None) -> str | None:
    """`release_name` as a typer callback of an option that names one release."""
    return None if value is None else release_name(value)


def release_list(values: list[str] | None) -> list[str] | None:
    """`release_name` as a typer callback of an argument that names several."""
    return None if values is None else [release_name(v) for v in values]


# Shell completion (`inventory --install-completion`): the names the project's own data holds.
# A file that cannot be read completes nothing: completion never prints an error.
def complete_release(incomplete: str) -> list[str]:
    from oracle.catalog import EnvError, load_catalog, version_key

    try:
        releases = sorted(load_catalog().releases, key=version_key)
    except EnvError:
        return []
    return [r for r in releases if r.startswith(release_name(incomplete))]


def complete_bundle(incomplete: str) -> list[str]:
    from inventory.errors import USER_ERRORS
    from inventory.registry import DEFAULT_REGISTRY, load_registry

    try:
        return [b.name for b in load_registry(DEFAULT_REGISTRY) if b.name.startswith(incomplete)]
    except USER_ERRORS:
        return []


def complete_fix(incomplete: str) -> list[str]:
    from oracle.catalog import FixError, load_fixes

    try:
        names = [n for f in load_fixes() for n in (f.id, *f.aliases)]
    except FixError:
        return []
    return [n for n in names if n.startswith(incomplete)]


# Read by `inventory.terminal.command`, which sets INVENTORY_CATALOG for the command's run.
CatalogFile = Annotated[
    Path | None,
    typer.Option(
        "--catalog",
        metavar="FILE",
        help="A release catalog over the packaged one, in converters.toml's format (default: "
        "INVENTORY_CATALOG): with a torch table it replaces it, else its converters."
        "VERSION tables add or override releases.",
    ),
]
Registry = Annotated[
    Path, typer.Option("--registry", metavar="FILE", help="The bundle registry (TOML).")
]
NoCache = Annotated[
    bool,
    typer.Option("--no-cache", help="Convert and measure again even if a stored result exists."),
]
RunBudget = Annotated[
    float,
    typer.Option(
        "--run-budget",
        metavar="SECONDS",
        help="Seconds the model-level runs of a whole-program check may cost (estimated from the "
        "registry's measured seconds per run); over it they are skipped, said so, and the "
        "region runs measure every region. 'inf': always run.",
    ),
]
Quiet = Annotated[bool, typer.Option("--quiet", "-q", help="No progress lines (= --progress off).")]


def _progress_mode(value: str | None) -> str | None:
    from inventory.terminal import progress_mode

    return progress_mode(value)


ProgressMode = Annotated[
    str | None,
    typer.Option(
        "--progress",
        metavar="auto|on|off",
        callback=_progress_mode,
        help="Progress on stderr: auto (a transient status on a terminal; piped, one line per "
        "phase with its counts), on (those lines even on a terminal), off.",
    ),
]
Json = Annotated[
    bool, typer.Option("--json", help="Print JSON, a versioned envelope (= --format json).")
]
Markdown = Annotated[bool, typer.Option("--markdown", help="Print markdown (= --format markdown).")]
Format = Annotated[
    str | None,
    typer.Option(
        "--format",
        "-f",
        metavar="FORMAT",
        help="The answer's format: table (the terminal's, the default), json (a versioned "
        "envelope), markdown (for a release page or a ticket), html (a "
        "self-contained report: plan, affected, verify) or cyclonedx (CycloneDX 1.6 with "
        "VEX: scan, plan, affected). --json and --markdown are its aliases; give one.",
    ),
]
OutputFile = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        metavar="FILE",
        help="Write the answer to FILE (in --format) instead of standard output: a regular "
        "file or a new name, never a file the command reads, a link, a FIFO or a device "
        "(checked before the run).",
    ),
    WRITES,
]
Details = Annotated[
    bool,
    typer.Option(
        "--details",
        help="Everything the answer holds: each record that does not affect a bundle "
        "(folded to a count by default) and every probe's evidence.",
    ),
]
Tolerance = Annotated[
    float | None,
    typer.Option(
        "--tolerance",
        metavar="NUMBER",
        help="Relative error vs torch fp32 beyond which a shipped output is wrong "
        "(default: per dtype, inventory/policy.toml).",
    ),
]
Ignore = Annotated[
    Path | None,
    typer.Option(
        "--ignore",
        metavar="FILE",
        help="Accepted risks: TOML ignore entries (fix, bundle, reason, expiry).",
    ),
]
Bundles = Annotated[
    list[str] | None,
    typer.Option(
        "--bundle",
        "-b",
        metavar="BUNDLE",
        autocompletion=complete_bundle,
        help="Only this bundle (repeatable).",
    ),
]
FullForm = Annotated[
    bool,
    typer.Option(
        "--full",
        help="Build each bundle's full target even where its registry entry states a "
        "miniature (its verify form): every repeated layer, at the cost of "
        "converting and running all of them.",
    ),
]
RecipeRoot = Annotated[
    Path | None,
    typer.Option(
        "--recipe-root",
        metavar="DIR",
        help="A checkout of the recipe repository: build a recipe-traced bundle whole with its own "
        "builder, as `trace` does.",
    ),
]
AllowCode = Annotated[
    bool,
    typer.Option(
        "--allow-code",
        help="Trust the registry as code: run a target or builder it names "
        "outside the project (by default refused).",
    ),
]
ExecutorName = Annotated[
    str,
    typer.Option(
        "--executor",
        envvar="INVENTORY_EXECUTOR",
        metavar="local|ray",
        help="Where the run's worker requests run (conversions, measurements, load checks, "
        "bundle reads and runs): local (this machine's workers, the default) or ray (the nodes "
        "of a Ray cluster; needs the ray extra and --ray-address).",
    ),
]
Jobs = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        envvar="INVENTORY_JOBS",
        metavar="N",
        show_default=False,
        help="Comparisons and load checks (scan and repair: asset runs) the local executor runs "
        "at once (a comparison converts its two sides in two worker processes; an environment "
        "gets up to N workers). Default: half the cores this process may use, at least 1; for "
        "asset runs, one process each, every core. --jobs 1 runs one at a time.",
    ),
]
RayAddress = Annotated[
    str | None,
    typer.Option(
        "--ray-address",
        metavar="HOST:PORT",
        help="The Ray cluster --executor ray runs on: the address `ray start --head` prints, or "
        "auto (the cluster started on this machine); default: RAY_ADDRESS. Only with "
        "--executor ray.",
    ),
]
StoreUrl = Annotated[
    str | None,
    typer.Option(
        "--store",
        envvar="INVENTORY_STORE",
        metavar="PATH|URL",
        help="Where results are kept: a local folder (default: the cache's results), or a URL, "
        "file:///PATH or s3://BUCKET/PREFIX (the s3 extra), a remote tier behind the local "
        "store: a result missing here is fetched from it, each file verified against its "
        "manifest; a result computed here is published to it, its files first, the manifest "
        "last. Credentials come from the environment or the AWS config files.",
    ),
]
FromRelease = Annotated[
    str,
    typer.Option(
        "--from",
        metavar="VERSION",
        callback=release_option,
        autocompletion=complete_release,
        help="The release upgraded from (e.g. 0.4.1 or v0.4.1).",
    ),
]
ToRelease = Annotated[
    str,
    typer.Option(
        "--to",
        metavar="VERSION",
        callback=release_option,
        autocompletion=complete_release,
        help="The release upgraded to (e.g. 0.4.2 or v0.4.2).",
    ),
]
Runtimes = Annotated[
    list[str] | None,
    typer.Option(
        "--runtime",
        metavar="RUNTIME",
        help="A coreai-core runtime the bundles must load on, e.g. 1.0.0b3 or b3 "
        "(repeatable; overrides the registry; default: every runtime in the "
        "catalog at or above the core the target release pins; scan: every "
        "runtime in the catalog, and only these are tried).",
    ),
]


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


def check_recipe_root(value: Path | None) -> None:
    """A checkout that is not a folder is a mistake, said before anything runs."""
    if value is not None and not value.is_dir():
        raise UsageError(f"--recipe-root {value}: not a folder")
