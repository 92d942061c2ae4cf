"""Releases on the package index that the catalog lacks: each one's catalog entry derived from its
wheel's own metadata (`oracle/catalog/wheel_metadata.py`: the coreai-core it pins in
`Requires-Dist`,
the catalog's `core`), and recorded in the store beside the environments.

The record (`discovered/<version>/` in the cache, beside `envs/`) keeps the wheel's METADATA as
downloaded, the entry derived from it (`entry.toml`, in converters.toml's format) and where the
wheel came from (`source.json`). The catalog reads the records back (`oracle/catalog/releases.py`):
the entry through its own schema, derived again from the METADATA beside it, and an entry that
no longer follows from its metadata is one line, never used.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from oracle.catalog.releases import (
    DISCOVERED_ENTRY,
    DISCOVERED_METADATA,
    MAX_RELEASES,
    Catalog,
    EnvError,
    discovered_folder,
    version_key,
)
from oracle.catalog.wheel_metadata import Derived, derive
from oracle.envs import package_index
from oracle.envs.installer import package_sources
from oracle.infra.paths import in_store, safe_name
from oracle.infra.progress import Progress

SOURCE = "source.json"


@dataclass(frozen=True)
class Found:
    """One release on the package index the catalog lacks (`inventory envs discover`)."""

    derived: Derived
    wheel: str  # the wheel's file name
    sha256: str
    where: str  # the index or find-links entry that lists it
    record: str = ""  # the store folder it was recorded in ("" when not derived)
    others: tuple[str, ...] = field(default_factory=tuple)  # other wheels of the release


def record(derived: Derived, metadata: str, wheel: str, sha256: str, where: str) -> Path:
    """Keep a derived release in the store: its METADATA, the entry and the wheel's origin,
    written in a temp folder and renamed into place (a reader never sees half of it)."""
    root = discovered_folder()
    root.mkdir(parents=True, exist_ok=True)
    target = in_store(root / safe_name(derived.version))
    tmp = Path(tempfile.mkdtemp(dir=root, prefix=f".{target.name}."))
    try:
        (tmp / DISCOVERED_METADATA).write_text(metadata)
        (tmp / DISCOVERED_ENTRY).write_text(
            f"# derived by `inventory envs discover` from {wheel}'s METADATA (beside this file)\n"
            f'[converters."{derived.version}"]\ncore = "{derived.core}"\nextra = []\n'
        )
        (tmp / SOURCE).write_text(
            json.dumps(
                {
                    "wheel": wheel,
                    "sha256": sha256,
                    "listed_by": where,
                    "torch": derived.torch,
                    "requires": list(derived.requires),
                    "recorded": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                },
                indent=2,
            )
            + "\n"
        )
        if target.exists():
            shutil.rmtree(target)
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def forget(version: str) -> None:
    """Remove the record of a release whose wheel no longer gives an entry (one an older tool
    recorded from a pin it should have refused): it would go on answering."""
    target = in_store(discovered_folder() / safe_name(version))
    if target.is_dir():
        shutil.rmtree(target)


@dataclass(frozen=True)
class Discovery:
    sources: str  # the package sources read, as pip's configuration names them
    found: tuple[Found, ...]  # releases the catalog lacks, newest first
    known: tuple[str, ...]  # releases on the sources the catalog has
    problems: tuple[str, ...] = ()  # one line per source that could not be read


def discover(catalog: Catalog, progress: Progress = lambda _: None) -> Discovery:
    """The coreai-torch releases the machine's package sources offer that `catalog` lacks, each
    derived from its wheel's METADATA and, when an entry follows, recorded in the store. No
    source could be read at all: EnvError (nothing is known, not "nothing new")."""
    sources = package_sources()
    progress(f"listing {package_index.PROJECT} on {sources.describe()}")
    listed, problems = package_index.listed(sources)
    if problems and not listed and len(problems) == len(sources.indexes) + len(sources.find_links):
        raise EnvError(f"no package source could be read: {'; '.join(problems)}")
    lacked = [v for v in sorted(listed, key=version_key, reverse=True) if v not in catalog.releases]
    if len(catalog.releases) + len(lacked) > MAX_RELEASES:
        # refused before a wheel is read: recorded, they would make every catalog too large
        raise EnvError(
            f"the package sources list {len(lacked)} {package_index.PROJECT} releases the "
            f"catalog lacks, beside its {len(catalog.releases)}: a catalog holds at most "
            f"{MAX_RELEASES} (docs/reference/catalog.md; {sources.describe()})"
        )
    reader = package_index.Reader(sources)
    found = []
    for version in lacked:
        wheel = listed[version][0]
        progress(f"reading the metadata of {wheel.filename} ({wheel.where})")
        try:
            text, sha = package_index.metadata(wheel, sources, reader)
        except package_index.SourceError as exc:
            problems.append(str(exc))
            continue
        derived = derive(text)
        if derived.version != version and not derived.problem:
            derived = Derived(
                version,
                None,
                derived.torch,
                derived.requires,
                f"{wheel.filename}'s metadata says version {derived.version}",
            )
        if derived.problem:
            forget(version)
        where = (
            "" if derived.problem else str(record(derived, text, wheel.filename, sha, wheel.where))
        )
        found.append(
            Found(
                derived,
                wheel.filename,
                sha,
                wheel.where,
                where,
                tuple(w.filename for w in listed[version][1:]),
            )
        )
    known = tuple(sorted((v for v in listed if v in catalog.releases), key=version_key))
    return Discovery(sources.describe(), tuple(found), known, tuple(problems))
