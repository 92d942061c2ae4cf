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

Every value that becomes a folder name or an installer argument is checked as it is read
(`oracle/catalog/requirements.py`): `[torch] version` and `core` are PEP 440 versions, an `extra`
is a requirement of a registry package, or one that installs code from anywhere (a path, a URL,
a VCS reference, an option) kept apart in `Release.code`, which an environment installs only
with consent (`--allow-code`). A catalog holds at most `MAX_RELEASES` releases.
"""

from __future__ import annotations

import functools
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
# More releases than any converter will have in years (4 today): every answer walks the catalog,
# and a catalog of 200,000 tables took minutes before it was refused here.
MAX_RELEASES = 1000
# A catalog of MAX_RELEASES tables is about 60 kB; a file far larger is not a catalog.
MAX_CATALOG_BYTES = 1024 * 1024


def discovered_folder() -> Path:
    return cache_root() / "discovered"


class EnvError(OracleUserError):
    """A converter release cannot be had: not in the catalog, a catalog that cannot be read, or
    an environment that could not be built or used (`oracle/envs/environment.py`); one line for the
    user."""


class RunFault(EnvError):
    """An environment error that is the whole run's, never one bundle's answer: the store cannot
    be written, or a built environment cannot run its worker (an environment fault). Where a
    build that fails when a worker first needs it leaves that bundle inconclusive, this is
    raised on: one line and exit 2, never stored as a verdict."""


@dataclass(frozen=True)
class Release:
    converter: str
    core: str
    extra: tuple[str, ...]
    source: str = PACKAGED  # PACKAGED, USER or DISCOVERED
    origin: str = ""  # the file or store record the entry was read from
    # the `extra` entries that install code from anywhere, each as "'ENTRY' (what it is)":
    # installed only with consent (`envs build --allow-code`)
    code: tuple[str, ...] = ()
    # the torch requirement the release's wheel declares (`declares_torch`), "" when the
    # catalog does not say: an environment installs the converter without dependency resolution
    # beside the shared torch, so one outside it is a deviation known from the pins
    # (`oracle.envs.environment.planned_deviations`)
    declares_torch: str = ""


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
    data = read_toml(path, EnvError, MAX_CATALOG_BYTES)
    fields = Fields(path, EnvError)
    if partial:
        fields.keys(data, ("converters",), "a catalog without [torch]")
    else:
        fields.keys(data, ("torch", "converters"), "the file")
    torch = {} if partial else fields.table(data, "torch", "", required=True)
    fields.keys(torch, ("version", "checked"), "[torch]")
    releases: dict[str, Release] = {}
    tables = fields.table(data, "converters", "", required=True)
    if len(tables) > MAX_RELEASES:
        fields.problem(
            f"{len(tables)} releases: a catalog holds at most {MAX_RELEASES} "
            "(docs/reference/catalog.md)"
        )
    for version, entry in tables.items():
        where = f"[converters.{version!r}]"
        if not re.fullmatch(r"\d+(\.\d+)+", version):
            fields.problem(f'{where}: a release is digits and dots (e.g. "0.4.2"), not {version!r}')
        if not isinstance(entry, dict):
            fields.fail("", where, "a table", entry)
        fields.keys(entry, ("core", "extra", "declares_torch"), where)
        extra = fields.strings(entry, "extra", where)
        releases[version] = Release(
            version,
            fields.version(entry, "core", where),
            extra,
            source,
            str(path),
            _code(fields, extra, where),
            _declared_torch(fields, entry, where),
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
                fields.version(entry, "against", where),
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
        torch="" if partial else fields.version(torch, "version", "[torch]"),
        releases=releases,
        checked=tuple(checked),
    )


def _declared_torch(fields: Fields, entry: dict[str, object], where: str) -> str:
    """`declares_torch`, a requirement of torch with version specifiers ("" when absent)."""
    from packaging.requirements import InvalidRequirement, Requirement

    text = fields.line(entry, "declares_torch", where, "")
    if not text:
        return ""
    try:
        ok = Requirement(text).name == "torch"
    except InvalidRequirement:
        ok = False
    if not ok:
        fields.fail(where, "declares_torch", "a requirement of torch (torch<=2.11.0,>=2.8.0)", text)
    return text


def _code(fields: Fields, extra: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The `extra` entries that install code from anywhere, said as what they are; an entry that
    is neither a registry package's requirement nor such a thing is refused here."""
    from oracle.catalog.requirements import code_kind, registry_problem

    out = []
    for text in extra:
        problem = registry_problem(text)
        if problem is None:
            continue
        kind = code_kind(text)
        if kind is None:
            fields.fail(where, "extra", f"requirements of registry packages ({problem})", text)
        out.append(f"{text!r} ({kind})")
    return tuple(out)


@functools.cache
def packaged_catalog() -> Catalog:
    """The packaged catalog alone (read once): the pins an environment's plain name stands for
    (oracle/envs/environment.py)."""
    return read_catalog(CATALOG_FILE)


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
        data = read_toml(user, EnvError, MAX_CATALOG_BYTES)
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
    if len(catalog.releases) + len(found) > MAX_RELEASES:
        raise EnvError(
            f"{discovered_folder()}: {len(found)} discovered releases beside the catalog's "
            f"{len(catalog.releases)}: a catalog holds at most {MAX_RELEASES} "
            "(docs/reference/catalog.md)"
        )
    return Catalog(catalog.torch, {**catalog.releases, **found}, catalog.checked)


def recorded() -> dict[str, Release]:
    """Every release `inventory envs discover` recorded, its entry read through this schema and
    checked against the METADATA it was derived from (oracle/catalog/wheel_metadata.py). A
    record that fails either (written by an older tool, which took `coreai-core==../../x` for a
    pin, or edited) is refused in one line naming it and how to remove it: never used, so a
    wrong entry cannot go on answering."""
    from oracle.catalog.wheel_metadata import derive

    root = discovered_folder()
    if not root.is_dir():
        return {}
    folders = sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    if len(folders) > MAX_RELEASES:
        raise EnvError(
            f"{root}: {len(folders)} discovered releases: a catalog holds at most "
            f"{MAX_RELEASES} (docs/reference/catalog.md); remove the ones not needed"
        )
    out: dict[str, Release] = {}
    for path in folders:
        remove = f"remove the record (rm -r {path}) and discover again (inventory envs discover)"
        try:
            entry = read_catalog(path / DISCOVERED_ENTRY, DISCOVERED, partial=True)
        except EnvError as exc:
            raise EnvError(f"{exc}; {remove}") from None
        try:
            derived = derive((path / DISCOVERED_METADATA).read_text(errors="replace"))
        except OSError as exc:
            raise EnvError(
                f"{path / DISCOVERED_METADATA}: cannot read: {exc.strerror or exc}; {remove}"
            ) from None
        for version, release in entry.releases.items():
            if derived.problem or (derived.version, derived.core) != (version, release.core):
                said = derived.problem or f"{derived.version} pins {derived.core}"
                raise EnvError(
                    f'{path / DISCOVERED_ENTRY}: [converters."{version}"] core = '
                    f"{release.core!r} does not follow from the METADATA beside it "
                    f"({said}); {remove}"
                )
            out[version] = Release(version, release.core, release.extra, DISCOVERED, str(path))
    return out
