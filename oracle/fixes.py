"""The fix database: converter changes as data (`fixes.toml`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from oracle.envs import version_key
from oracle.tomlfile import read_toml

FIXES_FILE = Path(__file__).with_name("fixes.toml")
# What a change touches, and so how it is answered (see the header of fixes.toml).
KINDS = ("lowering", "asset", "pipeline")


class FixError(Exception):
    """The fix database is malformed or a fix id is unknown; the message is one line."""


@dataclass(frozen=True)
class Fix:
    id: str
    title: str
    ships_in: str
    upstream: str
    constructs: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    checked: str = ""
    kind: str = "lowering"
    # aten targets (`aten.squeeze.dims`) or Core AI ops (`coreai.broadcasting_mul`) the change
    # rewrites, read off the upstream diff like `checked`: a region of the whole program whose
    # ops it lists is explained by it, where no construct detector names the region
    touches: tuple[str, ...] = ()

    @property
    def construct(self) -> str:
        return self.constructs[0]

    @property
    def label(self) -> str:
        """`#28` for an upstream pull request, the name itself otherwise (`core-b3`)."""
        return f"#{self.id}" if self.id.isdigit() else self.id


_REQUIRED = ("id", "title", "ships_in")


def load_fixes(path: Path = FIXES_FILE) -> list[Fix]:
    data = read_toml(path, FixError)
    fixes = []
    for i, entry in enumerate(data.get("fix", []), start=1):
        missing = [k for k in _REQUIRED if k not in entry]
        if missing:
            raise FixError(f"{path}: fix record {i} lacks {', '.join(missing)}")
        kind = entry.get("kind", "lowering")
        if kind not in KINDS:
            raise FixError(f"{path}: fix record {i} ({entry['id']}): kind must be one of "
                           f"{', '.join(KINDS)}, not {kind!r}")
        constructs = entry.get("constructs", [])
        if kind == "lowering" and (not isinstance(constructs, list) or not constructs):
            raise FixError(f"{path}: fix record {i} ({entry['id']}): a lowering record needs "
                           "constructs, a non-empty list")
        if kind != "lowering" and constructs:
            raise FixError(f"{path}: fix record {i} ({entry['id']}): an {kind} record is "
                           "answered without constructs; remove them or make it a lowering")
        touches = entry.get("touches", [])
        if not isinstance(touches, list) or not all(isinstance(t, str) and t for t in touches):
            raise FixError(f"{path}: fix record {i} ({entry['id']}): touches must be a list "
                           "of aten targets or Core AI op names")
        fixes.append(Fix(str(entry["id"]), entry["title"], entry["ships_in"],
                         entry.get("upstream", ""), tuple(constructs),
                         tuple(str(a) for a in entry.get("aliases", [])),
                         entry.get("checked", ""), kind, tuple(touches)))
    return fixes


def find_fix(fix_id: str, fixes: list[Fix] | None = None, source: Path = FIXES_FILE) -> Fix:
    """`source`: the file `fixes` were read from, named when the id is not there."""
    wanted = fix_id.lstrip("#")
    for fix in fixes if fixes is not None else load_fixes(source):
        if wanted == fix.id or wanted in fix.aliases:
            return fix
    raise FixError(f"unknown fix {fix_id!r}: not in the fix database ({source.name})")


def between(fixes: list[Fix], old: str, new: str) -> list[Fix]:
    """The fixes a move from release `old` to release `new` brings: old < ships_in <= new."""
    return [f for f in fixes if version_key(old) < version_key(f.ships_in) <= version_key(new)]
