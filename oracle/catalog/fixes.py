"""The fix database: converter changes as data (`fixes.toml`)."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from oracle.catalog.record_kinds import DEFAULT_KIND, KINDS, RecordKind
from oracle.catalog.releases import load_catalog, version_key
from oracle.catalog.schema import Fields, construct_kinds, unique
from oracle.errors import OracleUserError
from oracle.infra.tomlfile import read_toml

FIXES_FILE = Path(__file__).with_name("fixes.toml")


class FixError(OracleUserError):
    """The fix database is malformed or a fix id is unknown; the message is one line."""


# What a record's `touches` may name: an aten target or a Core AI op, as the programs print them.
_TOUCHES = re.compile(r"aten\.[A-Za-z_]\w*(\.[A-Za-z_]\w*)?|coreai\.[A-Za-z_][\w.]*")


@dataclass(frozen=True)
class DraftNote:
    """What `inventory draft` measured for a drafted record (`[fix.draft]`): never read to
    answer (outcomes are measured again), shown beside the record for its review."""

    step: str  # the release step it was drafted from ("0.4.1->0.4.2")
    stage: str  # lowering, optimizer, load
    grouped_by: str  # how its changes were grouped (a bisected commit, a construct, the pin)
    reaches: str
    values: str
    conditions: tuple[str, ...]
    evidence: tuple[str, ...]  # the stored results it rests on, by id


@dataclass(frozen=True)
class Fix:
    id: str
    title: str
    ships_in: str
    upstream: str
    constructs: tuple[str, ...]
    aliases: tuple[str, ...] = ()
    checked: str = ""
    kind: str = DEFAULT_KIND
    # aten targets (`aten.squeeze.dims`) or Core AI ops (`coreai.broadcasting_mul`) the change
    # rewrites, read off the upstream diff like `checked`: a region of the whole program whose
    # ops it lists is explained by it, where no construct detector names the region
    touches: tuple[str, ...] = ()
    draft: DraftNote | None = None  # a drafted record's measurements (`checked = "drafted"`)

    @property
    def record_kind(self) -> RecordKind:
        """What the record changes, and so how it is probed, whom it concerns and what it is
        credited with (`oracle/catalog/record_kinds.py`)."""
        return KINDS[self.kind]

    @property
    def construct(self) -> str:
        return self.constructs[0]

    @property
    def label(self) -> str:
        """`#28` for an upstream pull request, the name itself otherwise (`core-b3`)."""
        return f"#{self.id}" if self.id.isdigit() else self.id


_KEYS = (
    "id",
    "title",
    "ships_in",
    "kind",
    "upstream",
    "constructs",
    "aliases",
    "checked",
    "touches",
    "draft",
)
_DRAFT_TEXT = ("step", "stage", "grouped_by", "reaches", "values")
_DRAFT_LISTS = ("conditions", "evidence")


def load_fixes(path: Path = FIXES_FILE) -> list[Fix]:
    """Every record, each value checked (oracle.catalog.schema): a record the loader cannot read
    exactly as written (a `ships_in` the catalog does not know, an unknown construct, a value
    of the wrong type, a duplicate id) is one line, never a record silently dropped."""
    data = read_toml(path, FixError)
    fields = Fields(path, FixError)
    fields.keys(data, ("fix",), "the file")
    releases = load_catalog().releases
    fixes = []
    for where, entry in fields.tables(data, "fix"):
        where = f"fix record {where.split()[-1]}"
        fix_id = fields.ident(entry, "id", where)
        where = f"{where} ({fix_id})"
        fields.keys(entry, _KEYS, where)
        kind = fields.choice(entry, "kind", where, tuple(KINDS), DEFAULT_KIND)
        if KINDS[kind].names_constructs:
            if entry.get("constructs") in (None, []):
                fields.problem(
                    f"{where}: a {kind} record needs constructs, a non-empty list "
                    "of construct kinds"
                )
            constructs = fields.choices(
                entry, "constructs", where, construct_kinds(), "construct kinds", required=True
            )
        else:
            constructs = fields.strings(entry, "constructs", where)
            if constructs:
                fields.problem(
                    f"{where}: an {kind} record is answered without constructs; "
                    "remove them or make it a lowering"
                )
        aliases = tuple(
            fields.ident({"alias": a}, "alias", f"{where} aliases")
            for a in _list(fields, entry, "aliases", where)
        )
        touches = fields.strings(entry, "touches", where, blank=True)
        for target in touches:
            if not _TOUCHES.fullmatch(target):
                fields.fail(
                    where,
                    "touches",
                    "aten targets ('aten.squeeze.dims') or Core AI ops ('coreai.conv')",
                    target,
                )
        fixes.append(
            Fix(
                fix_id,
                fields.line(entry, "title", where),
                fields.release(entry, "ships_in", where, releases),
                fields.text(entry, "upstream", where, ""),
                constructs,
                aliases,
                fields.text(entry, "checked", where, ""),
                kind,
                tuple(touches),
                _draft(fields, entry, where),
            )
        )
    unique(
        fields,
        (
            (f"fix record {i} ({f.id})", name)
            for i, f in enumerate(fixes, start=1)
            for name in (f.id, *f.aliases)
        ),
        "id",
    )
    return fixes


def _draft(fields: Fields, entry: dict, where: str) -> DraftNote | None:
    if "draft" not in entry:
        return None
    table = fields.table(entry, "draft", where)
    at = f"{where} draft"
    fields.keys(table, (*_DRAFT_TEXT, *_DRAFT_LISTS), at)
    step, stage, grouped_by, reaches, values = (fields.text(table, k, at, "") for k in _DRAFT_TEXT)
    conditions, evidence = (fields.strings(table, k, at, blank=True) for k in _DRAFT_LISTS)
    return DraftNote(step, stage, grouped_by, reaches, values, conditions, evidence)


def _list(fields: Fields, entry: dict, key: str, where: str) -> list:
    value = entry.get(key, [])
    if not isinstance(value, list):
        fields.fail(where, key, "a list of ids", value)
    return value


def find_fix(fix_id: str, fixes: list[Fix] | None = None, source: Path = FIXES_FILE) -> Fix:
    """A record by its id or an alias (`40`, `#40` or `coreai-torch#40`). `source`: the file
    `fixes` were read from, named when the id is not there, with the ids closest to it."""
    records = fixes if fixes is not None else load_fixes(source)
    wanted = fix_id.strip().removeprefix("coreai-torch").lstrip("#")
    for fix in records:
        if wanted == fix.id or wanted in fix.aliases:
            return fix
    names = [name for fix in records for name in (fix.id, *fix.aliases)]
    # a low cutoff: ids are short, and "999" should still point somewhere (79, 29)
    close = difflib.get_close_matches(wanted, names, n=5, cutoff=0.3)
    near = f"the closest ids: {', '.join(close)}" if close else "no id is close to it"
    listed = "inventory fixes" + ("" if source == FIXES_FILE else f" --fixes {source}")
    raise FixError(
        f"unknown fix {fix_id!r}: not in the fix database ({source.name}); {near}; "
        f"`{listed}` lists every record"
    )


def between(fixes: list[Fix], old: str, new: str) -> list[Fix]:
    """The fixes a move from release `old` to release `new` brings: old < ships_in <= new."""
    return [f for f in fixes if version_key(old) < version_key(f.ships_in) <= version_key(new)]
