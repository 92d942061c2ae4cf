"""`inventory envs build` and `inventory envs list`: the converter environments, one per
coreai-torch release."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer

from inventory.options import CatalogFile, Json, Quiet, complete_release, release_list
from inventory.terminal import out, progress
from oracle.catalog import PACKAGED, Catalog, load_catalog, version_key
from oracle.envs import (
    damaged_envs,
    deviations_with_evidence,
    ensure_env,
    installed_envs,
    python_ok,
    record_line,
    torch_installs,
    warmed_up,
)


def envs_build(
    versions: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="VERSION",
            callback=release_list,
            autocompletion=complete_release,
            help="coreai-torch releases (default: every supported release).",
        ),
    ] = None,
    from_source: Annotated[
        Path | None,
        typer.Option(
            "--from-source",
            metavar="DIR",
            help="Build from a coreai-torch source tree (a checkout at a commit) instead, with the "
            "pins of the release its coreai_torch/__version__.py names.",
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name",
            metavar="NAME",
            help="With --from-source: the environment is coreai-torch-src-NAME "
            "(default: the tree's digest).",
        ),
    ] = None,
    allow_code: Annotated[
        bool,
        typer.Option(
            "--allow-code",
            help="Consent to run code from outside the package registry: with --from-source, "
            "the build code of a tree that is not pure Python (a pure-Python tree is "
            "installed by copying its files: nothing of it runs); a catalog's extra "
            "requirement that is a local path, a URL, a VCS reference or an installer option "
            "(installed and said so; refused without).",
        ),
    ] = False,
    catalog: CatalogFile = None,
) -> None:
    """Build converter environments ahead of time (needs the package registry once), or one
    from a source tree (--from-source: the release's environment with the tree's converter).

    A release the catalog lacks is built once `inventory envs discover` has found it on the
    package index (its entry derived from the wheel's metadata). A release a user's catalog
    re-pins (another core, extra or torch) gets an environment of its own beside the packaged
    one. A new environment converts a tiny probe once, writing the bytecode its workers import;
    this command returns when it has.

    Examples:
    inventory envs build
    inventory envs build 0.4.2 v0.4.3

    Exit codes:
    0  every environment asked for is ready
    2  usage error, an environment that could not be built (its log), or a catalog extra
       that installs code from outside the registry, without --allow-code
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    python_ok()
    known = load_catalog()  # with --catalog's releases and the discovered ones
    if from_source is not None or name is not None:
        _build_from_source(versions, from_source, name, known, allow_code)
        return
    for version in versions or sorted(known.releases, key=version_key):
        with progress(True) as report_progress:
            # built ahead of time: its warm-up too (stopped at exit otherwise), so that its
            # first worker finds the bytecode it would compile (oracle/envs/bytecode.py)
            env = warmed_up(ensure_env(version, known, report_progress, allow_code=allow_code))
        out.print(
            f"{env.name}: ready ({env.runtime}) at {env.path}{_source(version, known)}",
            highlight=False,
            soft_wrap=True,
        )
        for deviation in deviations_with_evidence(env, known):
            out.print(f"  deviation: {deviation}", highlight=False, soft_wrap=True)


def envs_list(
    as_json: Json = False,
    output_format: Annotated[
        str | None,
        typer.Option(
            "--format", "-f", metavar="table|json", help="table (the default) or json (= --json)."
        ),
    ] = None,
    catalog: CatalogFile = None,
) -> None:
    """List the converter environments that are ready, with their exact versions, the
    installer that built each, what its build recorded (every distribution and the sha256 of
    every file) and whether its files are still as built (one that changed is rebuilt before it
    is used); a release whose catalog entry was discovered on the package index is marked
    `discovered`, with the record it was derived from.

    Examples:
    inventory envs list
    inventory envs list -f json

    Exit codes:
    0  listed (none yet is said so)
    2  a configuration error (INVENTORY_CACHE)
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.commands.common import show
    from inventory.output import OutputFormat, Renderer

    fmt = OutputFormat.choose(as_json, chosen=output_format, command="envs list")
    known = load_catalog()
    listing = EnvListing(
        tuple(
            {
                "name": env.name,
                "path": str(env.path),
                "packages": dict(env.packages),
                "source": _source(env.converter, known) or None,
                "record": record_line(env.path),
                "deviations": deviations_with_evidence(env, known),
            }
            for env in installed_envs()
        ),
        tuple(damaged_envs()),
        tuple({"name": t.name, "path": str(t), "record": record_line(t)} for t in torch_installs()),
    )
    show(Renderer("envs list", EnvListing.record, EnvListing.table), fmt, listing)


@dataclass(frozen=True)
class EnvListing:
    """The converter environments of the cache, those whose manifest cannot be read, and the
    shared torch installs."""

    envs: tuple[dict, ...]
    damaged: tuple[str, ...]
    torches: tuple[dict, ...]

    def record(self) -> dict:
        return {"envs": list(self.envs), "damaged": list(self.damaged), "torch": list(self.torches)}

    def table(self) -> str:
        """Plain lines, each as long as it is (never wrapped or cropped: a reader splits them
        by line, and a deviation's evidence is a path to copy)."""
        lines: list[str] = []
        if not self.envs and not self.damaged:
            lines.append("no converter environments yet (inventory envs build)")
        lines += list(self.damaged)
        for env in self.envs:
            pkgs = ", ".join(
                f"{k} {env['packages'][k]}"
                for k in ("coreai-torch", "coreai-core", "torch", "numpy")
                if k in env["packages"]
            )
            source = f"; {env['source']}" if env.get("source") else ""
            lines.append(f"{env['name']}: {pkgs}{source}")
            lines.append(f"  {env['record']}")
            lines += [f"  deviation: {d}" for d in env["deviations"]]
        lines += [f"{t['name']} (shared through .pth files): {t['record']}" for t in self.torches]
        return "\n".join(lines)


def _source(version: str, catalog: Catalog) -> str:
    """`discovered (...)` for a release whose entry the package index gave, `user catalog
    (...)` for one a user's catalog gives; nothing for the packaged catalog's."""
    release = catalog.releases.get(version)
    if release is None or release.source == PACKAGED:
        return ""
    return f"{release.source} ({release.origin})"


def envs_discover(
    as_json: Json = False,
    catalog: CatalogFile = None,
    quiet: Quiet = False,
) -> None:
    """List the coreai-torch releases on the package index (pip's configuration: its indexes
    and find-links) that the catalog lacks, each with the coreai-core it pins and the torch and
    other requirements its wheel's metadata declares (Requires-Dist), read from the wheel,
    never guessed; each one whose entry follows is recorded in the store beside the
    environments, and plan, sweep, verify and envs build accept it from then on.

    Examples:
    inventory envs discover
    inventory envs discover --catalog my-converters.toml --json

    Exit codes:
    0  listed (none new is said so)
    1  a release on the index whose catalog entry cannot be derived (said why)
    2  no package source could be read, or a catalog that cannot be read
    4  internal error (INVENTORY_DEBUG=1 prints the traceback)
    """
    from inventory.commands.common import report
    from inventory.errors import ExitCode
    from inventory.output import OutputFormat, Renderer
    from inventory.report.envs_report import discovery_record, discovery_table
    from inventory.terminal import finish
    from oracle.envs import Discovery, discover

    known = load_catalog(discovered=False)
    result: Discovery = report(
        Renderer("envs discover", discovery_record, discovery_table),
        OutputFormat.choose(as_json),
        quiet,
        lambda progress: discover(known, progress),
        lambda d: d.problems,
    )
    finish(ExitCode.FINDING if any(f.derived.problem for f in result.found) else ExitCode.OK)


def _build_from_source(
    versions: list[str] | None,
    tree: Path | None,
    name: str | None,
    catalog: Catalog,
    allow_code: bool,
) -> None:
    from inventory.errors import UsageError
    from oracle.envs import ensure_source_env

    if tree is None:
        raise UsageError("--name is only for --from-source DIR")
    if versions:
        raise UsageError("--from-source builds the release its tree names: give no release")
    if not tree.is_dir():
        raise UsageError(f"--from-source {tree}: no such directory")
    with progress(True) as report_progress:
        env = ensure_source_env(
            tree.resolve(), name, catalog, report_progress, allow_code=allow_code
        )
    out.print(
        f"{env.name}: ready (coreai-torch {env.converter}, {env.runtime}) at {env.path}",
        highlight=False,
    )
    for deviation in deviations_with_evidence(env, catalog):
        out.print(f"  deviation: {deviation}", highlight=False, soft_wrap=True)
