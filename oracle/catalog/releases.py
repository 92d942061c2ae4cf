"""The release catalog (`converters.toml`): the coreai-torch releases the oracle can build, the
coreai-core each pins, the one shared torch and its measured deviations; and release ordering
(`version_key`: "0.4.10" after "0.4.9"). Building an environment for a release is
`oracle/envs/environment.py`'s.

The catalog an answer uses is the packaged file, a user's catalog over it (`INVENTORY_CATALOG`,
or a command's `--catalog FILE`), and the releases `inventory envs discover` found on the package
index and recorded in the store (`oracle/envs/discovery.py`), for releases the two files lack. A
user's file holding a `[torch]` table is a whole catalog and replaces the packaged one (a copy
with a release removed, say); one holding only `[converters."V"]` tables adds those releases or
overrides the packaged entries of the same name. Both are read through the same schema.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from oracle.catalog.schema import Fields
from oracle.errors import OracleUserError
from oracle.infra.paths import cache_root
from oracle.infra.settings import user_catalog
from oracle.infra.tomlfile import read_toml

CATALOG_FILE = Path(__file__).with_name("converters.toml")
# Where a release's entry comes from (`Release.source`; `envs list` says which).
PACKAGED, USER, DISCOVERED = "catalog", "user catalog", "discovered"
# A discovered release's record (`oracle/envs/discovery.py` writes it): its folder in the cache,
# beside `envs/`, holds the entry and the wheel METADATA it was derived from.
DISCOVERED_ENTRY, DISCOVERED_METADATA = "entry.toml", "METADATA"


def discovered_folder() -> Path:
    return cache_root() / "discovered"


class EnvError(OracleUserError):
    """A converter release cannot be had: not in the catalog, a catalog that cannot be read, or
    an environment that could not be built or used (`oracle/envs/environment.py`); one line for the
    user."""


@dataclass(frozen=True)
class Release:
    converter: str
    core: str
    extra: tuple[str, ...]
    source: str = PACKAGED  # PACKAGED, USER or DISCOVERED
    origin: str = ""  # the file or store record the entry was read from


def base_version(version: str) -> str:
    """A version without its local label ("2.13.0+cpu" -> "2.13.0")."""
    return version.split("+")[0]


def version_key(version: str) -> tuple[int, ...]:
    """Order releases numerically ("0.4.10" after "0.4.9")."""
    return tuple(int(p) for p in version.split(".") if p.isdigit())


@dataclass(frozen=True)
class TorchCheck:
    """A measurement of the shared torch against another one (`[torch.checked."V"]`, written by
    scripts/torch-sensitivity): the evidence a deviation from a converter's declared torch cites."""

    torch: str  # the other torch (an exporter's)
    against: str  # the shared torch it was compared with
    converters: tuple[str, ...]
    probes: int
    identical: int
    evidence: str

    def cited(self) -> str:
        return (
            f"measured: torch {self.against} and {self.torch} give the same program for "
            f"{self.identical} of {self.probes} registry probes under coreai-torch "
            f"{', '.join(self.converters)} ({self.evidence})"
        )


@dataclass(frozen=True)
class Catalog:
    torch: str
    releases: dict[str, Release]
    checked: tuple[TorchCheck, ...] = ()

    def torch_checks(self, converter: str) -> list[TorchCheck]:
        return [c for c in self.checked if converter in c.converters]

    def oldest(self) -> str:
        return min(self.releases, key=version_key)

    def release(self, version: str) -> Release:
        try:
            return self.releases[version]
        except KeyError:
            known = ", ".join(sorted(self.releases, key=version_key))
            raise EnvError(
                f"coreai-torch {version} is not a supported release (known: {known}); "
                f"`inventory envs discover` finds the releases on the package index the "
                f"catalog lacks"
            ) from None


def read_catalog(path: Path, source: str = PACKAGED, partial: bool = False) -> Catalog:
    """One catalog file, each value checked (oracle.catalog.schema): a release named other than as
    digits and dots, a missing core or a value of the wrong type is one line. `partial`: a
    user's file of `[converters."V"]` tables only (no `[torch]`), laid over another catalog."""
    data = read_toml(path, EnvError)
    fields = Fields(path, EnvError)
    if partial:
        fields.keys(data, ("converters",), "a catalog without [torch]")
    else:
        fields.keys(data, ("torch", "converters"), "the file")
    torch = {} if partial else fields.table(data, "torch", "", required=True)
    fields.keys(torch, ("version", "checked"), "[torch]")
    releases: dict[str, Release] = {}
    for version, entry in fields.table(data, "converters", "", required=True).items():
        where = f"[converters.{version!r}]"
        if not re.fullmatch(r"\d+(\.\d+)+", version):
            fields.problem(f'{where}: a release is digits and dots (e.g. "0.4.2"), not {version!r}')
        if not isinstance(entry, dict):
            fields.fail("", where, "a table", entry)
        fields.keys(entry, ("core", "extra"), where)
        releases[version] = Release(
            version,
            fields.line(entry, "core", where),
            fields.strings(entry, "extra", where),
            source,
            str(path),
        )
    if not releases:
        fields.problem('no [converters."<release>"] tables')
    checked = []
    for version, entry in fields.table(torch, "checked", "[torch]").items():
        where = f"[torch.checked.{version!r}]"
        if not isinstance(entry, dict):
            fields.fail("", where, "a table", entry)
        fields.keys(entry, ("against", "converters", "probes", "identical", "evidence"), where)
        checked.append(
            TorchCheck(
                version,
                fields.line(entry, "against", where),
                fields.choices(
                    entry,
                    "converters",
                    where,
                    releases,
                    "releases in converters.toml",
                    required=True,
                ),
                fields.integer(entry, "probes", where, None, 0, 1_000_000),
                fields.integer(entry, "identical", where, None, 0, 1_000_000),
                fields.text(entry, "evidence", where),
            )
        )
    return Catalog(
        torch="" if partial else fields.line(torch, "version", "[torch]"),
        releases=releases,
        checked=tuple(checked),
    )


def load_catalog(path: Path | None = None, discovered: bool = True) -> Catalog:
    """The catalog answers use: `path` alone when given; else the packaged file, a user's
    catalog over it (INVENTORY_CATALOG, set by `--catalog`), then (unless not `discovered`)
    every release discovered on the package index and recorded in the store that neither file
    names."""
    if path is not None:
        return read_catalog(path)
    catalog = read_catalog(CATALOG_FILE)
    user = user_catalog()
    if user is not None:
        data = read_toml(user, EnvError)
        if "torch" in data:
            catalog = read_catalog(user, USER)
        else:
            over = read_catalog(user, USER, partial=True)
            catalog = Catalog(catalog.torch, {**catalog.releases, **over.releases}, catalog.checked)
    if not discovered:
        return catalog
    found = {v: r for v, r in recorded().items() if v not in catalog.releases}
    if not found:
        return catalog
    return Catalog(catalog.torch, {**catalog.releases, **found}, catalog.checked)


def recorded() -> dict[str, Release]:
    """Every release `inventory envs discover` recorded, its entry read through this schema and
    checked against the METADATA it was derived from (oracle/catalog/wheel_metadata.py)."""
    from oracle.catalog.wheel_metadata import derive

    root = discovered_folder()
    if not root.is_dir():
        return {}
    out: dict[str, Release] = {}
    for path in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")):
        entry = read_catalog(path / DISCOVERED_ENTRY, DISCOVERED, partial=True)
        try:
            derived = derive((path / DISCOVERED_METADATA).read_text(errors="replace"))
        except OSError as exc:
            raise EnvError(
                f"{path / DISCOVERED_METADATA}: cannot read: {exc.strerror or exc}; "
                "discover the release again (inventory envs discover)"
            ) from None
        for version, release in entry.releases.items():
            if derived.problem or (derived.version, derived.core) != (version, release.core):
                said = derived.problem or f"{derived.version} pins {derived.core}"
                raise EnvError(
                    f'{path / DISCOVERED_ENTRY}: [converters."{version}"] core = '
                    f"{release.core!r} does not follow from the METADATA beside it "
                    f"({said}); discover the release again (inventory envs "
                    "discover)"
                )
            out[version] = Release(version, release.core, release.extra, DISCOVERED, str(path))
    return out
