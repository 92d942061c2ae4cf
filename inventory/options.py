"""Command-line options shared by several commands, each declared once (name, flags, help).

A command takes one as `registry: Registry = DEFAULT_REGISTRY`, and the options that travel
together as a group (`Output`, `Execution`, `Common`): a command decorated with `@takes` states a
group as one parameter (`out: Output`), its options appear in the command line where that
parameter stands, and the command receives the group whole. Every option that takes a value
names what to type (its metavar: VERSION, BUNDLE, FILE); a flag names none (`inventory.help`).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar, get_type_hints

import typer

from inventory.errors import UsageError
from inventory.output_file import WRITES

if TYPE_CHECKING:
    from inventory.report.formats import OutputFormat

R = TypeVar("R")


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


@dataclasses.dataclass(frozen=True)
class Output:
    """The answer's format and where it goes: --json, --markdown, --format, -o."""

    as_json: Json = False
    markdown: Markdown = False
    output_format: Format = None
    output: OutputFile = None

    def format(self, command: str, forms: frozenset[OutputFormat]) -> OutputFormat:
        """The run's one format, refused before the run if `command` has no form in it."""
        from inventory.report.formats import OutputFormat

        return OutputFormat.choose(
            self.as_json, self.markdown, self.output_format, command=command, forms=forms
        )


@dataclasses.dataclass(frozen=True)
class Execution:
    """Where the run's work runs and its results are kept: --executor, --ray-address, --store,
    --jobs (`inventory.commands.common.use_execution` checks them, before any work)."""

    executor: ExecutorName = "local"
    ray_address: RayAddress = None
    store: StoreUrl = None
    jobs: Jobs = None


@dataclasses.dataclass(frozen=True)
class Common:
    """What every answering command takes: -q, --progress and --catalog (the last two read by
    `inventory.terminal` for the whole run)."""

    quiet: Quiet = False
    progress_shown: ProgressMode = None
    catalog: CatalogFile = None


GROUPS: tuple[type, ...] = (Output, Execution, Common)


def takes(fn: Callable[..., R]) -> Callable[..., R]:
    """`fn` as the command line sees it: each parameter annotated with a group (`GROUPS`) is
    replaced, where it stands, by the group's options (their flags, help and defaults, as the
    group declares them), and `fn` is called with the group built from them. Every parameter is
    keyword-only: typer passes them by name."""
    hints = get_type_hints(fn, include_extras=True)
    params: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, tuple[str, ...]]] = {}
    for p in inspect.signature(fn).parameters.values():
        group = hints.get(p.name)
        if group in GROUPS:
            assert isinstance(group, type)
            fields = get_type_hints(group, include_extras=True)
            names = tuple(f.name for f in dataclasses.fields(group))
            groups[p.name] = (group, names)
            params += [
                inspect.Parameter(
                    f.name,
                    inspect.Parameter.KEYWORD_ONLY,
                    default=f.default,
                    annotation=fields[f.name],
                )
                for f in dataclasses.fields(group)
            ]
        else:
            params.append(p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints[p.name]))
    # a group's option named as one of the command's own, or of another group's, would be lost
    assert len({p.name for p in params}) == len(params), fn.__name__

    @functools.wraps(fn)
    def grouped(**kwargs: Any) -> R:
        for name, (group, names) in groups.items():
            kwargs[name] = group(**{n: kwargs.pop(n) for n in names})
        return fn(**kwargs)

    # the signature typer reads (inspect looks there first); a function has no such attribute
    # in its stub
    grouped.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        params, return_annotation=hints.get("return")
    )
    grouped.__annotations__ = {
        **{p.name: p.annotation for p in params},
        "return": hints.get("return"),
    }
    return grouped
