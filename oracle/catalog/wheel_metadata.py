"""What a coreai-torch wheel's METADATA says of its release: the coreai-core it pins, the torch it
declares and its other requirements (`Requires-Dist`), read as text; and the catalog entry they
give (`derive`). A derived entry holds the pin and nothing else: every declared requirement is
installed with the converter anyway (`oracle/envs/environment.py`), so the catalog's `extra` (needs
beyond
the declared ones) has nothing to add. A wheel that pins no single coreai-core release gives no
entry, and says why: the runtime is never guessed. Neither does a wheel whose requirements are
not all registry packages' (a name a package can have, a PEP 440 version for a `==` pin): its
`coreai-core==../../x` would become a runtime's name and a folder's
(`oracle/catalog/requirements.py`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from email.parser import HeaderParser

CONVERTER, CORE, TORCH = "coreai-torch", "coreai-core", "torch"
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*(\[[^\]]*\])?\s*(.*)$")


@dataclass(frozen=True)
class Requirement:
    name: str  # normalised: lower case, runs of -_. as one -
    specifier: str  # as written, without spaces ("==1.0.0b3", "<=2.11.0,>=2.8.0", "")
    marker: str  # the environment marker after ';' ("" when none)

    @property
    def text(self) -> str:
        return f"{self.name}{self.specifier}" + (f"; {self.marker}" if self.marker else "")

    @property
    def optional(self) -> bool:
        """Installed only with an extra (`extra == "test"`): never part of an environment."""
        return re.search(r"\bextra\b", self.marker) is not None


def requirement(line: str) -> Requirement | None:
    body, _, marker = line.partition(";")
    found = _NAME.match(body)
    if not found:
        return None
    spec = re.sub(r"[\s()]+", "", found.group(3))
    return Requirement(re.sub(r"[-_.]+", "-", found.group(1)).lower(), spec, marker.strip())


@dataclass(frozen=True)
class Derived:
    """What a wheel's metadata says of a release, and the catalog entry it gives."""

    version: str
    core: str | None  # the coreai-core release it pins (None: no single release)
    torch: str  # its torch requirement as declared ("" when it declares none)
    requires: tuple[str, ...]  # every requirement an environment installs (no extra's)
    problem: str = ""  # why no entry can be derived ("" when one can)

    @property
    def others(self) -> tuple[str, ...]:
        """The bounded requirements beside coreai-core and torch (`numpy<2.5`)."""
        return tuple(
            r for r in self.requires if not r.startswith((CORE, TORCH)) and re.search(r"[<>=!~]", r)
        )


def derive(metadata: str) -> Derived:
    """The entry a wheel's METADATA gives: its version, and its coreai-core pin as `core`."""
    from oracle.catalog.requirements import is_version, registry_problem

    headers = HeaderParser().parsestr(metadata)
    version = (headers.get("Version") or "").strip()
    name = re.sub(r"[-_.]+", "-", (headers.get("Name") or "").strip()).lower()
    reqs = [
        r
        for r in (requirement(line) for line in headers.get_all("Requires-Dist") or [])
        if r is not None and not r.optional
    ]
    # every requirement an environment would install, checked before any becomes an entry
    refused = next(
        (
            f"its Requires-Dist {line.strip()!r} is refused ({why})"
            for line in headers.get_all("Requires-Dist") or []
            if not _optional(line) and (why := registry_problem(line.strip())) is not None
        ),
        "",
    )
    requires = tuple(r.text for r in reqs)
    torch = next((r.text for r in reqs if r.name == TORCH), "")
    pins = [r for r in reqs if r.name == CORE]
    exact = [r.specifier[2:] for r in pins if re.fullmatch(r"===?[^,=<>!~*]+", r.specifier)]
    problem = ""
    if refused:
        problem = f"{refused}: only registry packages' requirements are read, no entry is derived"
    elif name != CONVERTER:
        problem = f"the metadata names {name or 'no distribution'!r}, not {CONVERTER}"
    elif not re.fullmatch(r"\d+(\.\d+)+", version):
        problem = (
            f"{version or 'no version'!r} is not a release the catalog can name (digits "
            "and dots: a pre-release or local build is left to a user's catalog)"
        )
    elif not pins:
        problem = "it declares no coreai-core requirement: the runtime it builds with is unknown"
    elif len(exact) != 1 or any(r.marker for r in pins):
        said = ", ".join(r.text for r in pins)
        problem = (
            f"it requires {said}, not one coreai-core release: the runtime its assets "
            "are built with cannot be derived"
        )
    if not problem and not is_version(exact[0].lstrip("=")):
        problem = f"its coreai-core pin {exact[0]!r} is not a PEP 440 version"
    core = exact[0].lstrip("=") if not problem else None
    return Derived(version, core, torch, requires, problem)


def _optional(line: str) -> bool:
    """A Requires-Dist line installed only with an extra: never part of an environment."""
    found = requirement(line)
    return found is not None and found.optional
