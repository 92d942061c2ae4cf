"""`inventory fixes`: the fix database as a document, each record with the release step it ships
in (the release before `ships_in` in the catalog, and `ships_in`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oracle.catalog import Catalog, Fix, version_key


@dataclass(frozen=True)
class FixRow:
    id: str  # what `--fix` takes
    aliases: tuple[str, ...]
    title: str
    kind: str  # lowering | asset | pipeline
    ships_in: str
    step: str  # "0.4.1->0.4.2": the release step that brings it
    constructs: tuple[str, ...]
    upstream: str


@dataclass(frozen=True)
class FixListing:
    source: str  # the fix database read
    fixes: tuple[FixRow, ...]


def step_of(catalog: Catalog, release: str) -> str:
    """`A->B` for the release B a record ships in, A the catalog's release before it (B alone
    for the oldest release)."""
    before = [v for v in catalog.releases if version_key(v) < version_key(release)]
    return f"{max(before, key=version_key)}->{release}" if before else release


def listing(fixes: list[Fix], catalog: Catalog, source: Path) -> FixListing:
    """Every record, in release order and, within a release, as the file lists them."""
    order = sorted(fixes, key=lambda f: version_key(f.ships_in))  # stable: file order kept
    return FixListing(
        str(source),
        tuple(
            FixRow(
                f.id,
                f.aliases,
                f.title,
                f.kind,
                f.ships_in,
                step_of(catalog, f.ships_in),
                f.constructs,
                f.upstream,
            )
            for f in order
        ),
    )
