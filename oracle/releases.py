"""The release catalog (`converters.toml`): the coreai-torch releases the oracle can build, the
coreai-core each pins, the one shared torch and its measured deviations; and release ordering
(`version_key`: "0.4.10" after "0.4.9"). Building an environment for a release is
`oracle/envs.py`'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from oracle.schema import Fields
from oracle.tomlfile import read_toml

CATALOG_FILE = Path(__file__).with_name("converters.toml")


class EnvError(Exception):
    """A converter release cannot be had: not in the catalog, a catalog that cannot be read, or
    an environment that could not be built or used (`oracle/envs.py`); one line for the user."""


@dataclass(frozen=True)
class Release:
    converter: str
    core: str
    extra: tuple[str, ...]


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
        return (f"measured: torch {self.against} and {self.torch} give the same program for "
                f"{self.identical} of {self.probes} registry probes under coreai-torch "
                f"{', '.join(self.converters)} ({self.evidence})")


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
            known = ", ".join(sorted(self.releases))
            raise EnvError(
                f"coreai-torch {version} is not a supported release (known: {known})"
            ) from None


def load_catalog(path: Path = CATALOG_FILE) -> Catalog:
    """The releases the oracle can build, each value checked (oracle.schema): a release named
    other than as digits and dots, a missing core or a value of the wrong type is one line."""
    data = read_toml(path, EnvError)
    fields = Fields(path, EnvError)
    fields.keys(data, ("torch", "converters"), "the file")
    torch = fields.table(data, "torch", "", required=True)
    fields.keys(torch, ("version", "checked"), "[torch]")
    releases: dict[str, Release] = {}
    for version, entry in fields.table(data, "converters", "", required=True).items():
        where = f"[converters.{version!r}]"
        if not re.fullmatch(r"\d+(\.\d+)+", version):
            fields.problem(f"{where}: a release is digits and dots (e.g. \"0.4.2\"), "
                           f"not {version!r}")
        if not isinstance(entry, dict):
            fields.fail("", where, "a table", entry)
        fields.keys(entry, ("core", "extra"), where)
        releases[version] = Release(version, fields.line(entry, "core", where),
                                    fields.strings(entry, "extra", where))
    if not releases:
        fields.problem("no [converters.\"<release>\"] tables")
    checked = []
    for version, entry in fields.table(torch, "checked", "[torch]").items():
        where = f"[torch.checked.{version!r}]"
        if not isinstance(entry, dict):
            fields.fail("", where, "a table", entry)
        fields.keys(entry, ("against", "converters", "probes", "identical", "evidence"), where)
        checked.append(TorchCheck(
            version, fields.line(entry, "against", where),
            fields.choices(entry, "converters", where, releases, "releases in converters.toml",
                           required=True),
            fields.integer(entry, "probes", where, None, 0, 1_000_000),
            fields.integer(entry, "identical", where, None, 0, 1_000_000),
            fields.text(entry, "evidence", where)))
    return Catalog(torch=fields.line(torch, "version", "[torch]"), releases=releases,
                   checked=tuple(checked))
