"""`inventory fixes` lists the fix database; an unknown fix id names the close ones and the
command that lists them all; a release is accepted as `v0.4.3` wherever one is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from cli import invoke, one_line

from inventory.cli import app
from inventory.options import release_name
from oracle.catalog.fixes import FIXES_FILE, FixError, find_fix, load_fixes
from oracle.catalog.releases import version_key

ROOT = Path(__file__).resolve().parents[3]
DRAFT = ROOT / "tests" / "golden" / "drafts" / "no54.toml"


def test_fixes_json_lists_every_record_with_its_release_step(json_schema):
    proc = invoke("fixes", "--json")
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    json_schema(document)
    data = document["result"]
    records = load_fixes()
    assert sorted(f["id"] for f in data["fixes"]) == sorted(r.id for r in records)
    by = {f["id"]: f for f in data["fixes"]}
    for record in records:
        listed = by[record.id]
        assert (
            listed["title"],
            listed["kind"],
            listed["ships_in"],
            listed["aliases"],
            listed["constructs"],
        ) == (
            record.title,
            record.kind,
            record.ships_in,
            list(record.aliases),
            list(record.constructs),
        )
    assert by["40"]["step"] == "0.4.1->0.4.2" and by["core-b3"]["step"] == "0.4.2->0.4.3"
    assert by["28"]["step"] == "0.4.0->0.4.1" and by["29"]["aliases"] == ["30", "31"]
    releases = [f["ships_in"] for f in data["fixes"]]
    assert releases == sorted(releases, key=version_key)
    assert data["source"] == str(FIXES_FILE)


def test_fixes_lists_each_id_and_reads_another_database():
    table = invoke("fixes", COLUMNS="200")
    assert table.returncode == 0
    rows = {ln.split()[0] for ln in table.stdout.splitlines()[2:] if ln.strip()}
    assert {r.id for r in load_fixes()} <= rows
    draft = json.loads(invoke("fixes", "--fixes", str(DRAFT), "--json").stdout)["result"]
    assert "54" not in {f["id"] for f in draft["fixes"]} and "40" in {
        f["id"] for f in draft["fixes"]
    }


def test_a_malformed_database_is_one_line(tmp_path):
    bad = tmp_path / "fixes.toml"
    bad.write_text('[[fix]]\nid = "1"\ntitle = "x"\nships_in = "9.9.9"\nconstructs = ["pad"]\n')
    proc = invoke("fixes", "--fixes", str(bad))
    assert proc.returncode == 2
    assert "9.9.9" in one_line(proc)


def test_an_unknown_fix_names_the_closest_ids_and_the_command_that_lists_them():
    proc = invoke("affected", "--fix", "999", "-q")
    assert proc.returncode == 2
    assert one_line(proc) == (
        "error: unknown fix '999': not in the fix database (fixes.toml); "
        "the closest ids: 79, 29; `inventory fixes` lists every record"
    )
    proc = invoke("affected", "--fix", "core-b4", "-q")
    assert "the closest ids: core-b3, core-b2;" in one_line(proc)


def test_a_fix_is_found_as_written_upstream_or_by_alias():
    records = load_fixes()
    for written in ("40", "#40", "coreai-torch#40", " 40 "):
        assert find_fix(written, records).id == "40", written
    assert find_fix("35", records).id == "23"  # an alias
    with pytest.raises(FixError, match="`inventory fixes --fixes .*no54.toml` lists every"):
        find_fix("54", load_fixes(DRAFT), DRAFT)


@pytest.mark.parametrize(
    ("typed", "named"),
    [
        ("v0.4.3", "0.4.3"),
        ("V0.4.3", "0.4.3"),
        ("0.4.3", "0.4.3"),
        ("v10", "10"),
        # not a tagged release: left as typed, for the catalog to refuse in its own words
        ("v", "v"),
        ("vx", "vx"),
        (" ", " "),
        ("", ""),
        ("0.4.3v", "0.4.3v"),
        ("vv0.4", "vv0.4"),
    ],
)
def test_a_release_named_as_its_tag_is_the_release(typed, named):
    assert release_name(typed) == named


def _parsed(*argv: str) -> dict:
    """The parameters a command line gives its command (parsed only, nothing runs)."""
    command = typer.main.get_command(app)
    path = []
    while hasattr(command, "commands") and argv and argv[0] in command.commands:
        command = command.commands[argv[0]]
        path.append(argv[0])
        argv = argv[1:]
    with command.make_context(" ".join(path), list(argv)) as ctx:
        return ctx.params


def test_every_option_that_names_a_release_takes_its_tag():
    assert _parsed("plan", "--to", "v0.4.3")["to"] == "0.4.3"
    assert _parsed("affected", "--fix", "40", "--to", "v0.4.3")["to"] == "0.4.3"
    assert _parsed("verify", "mimi", "--to", "v0.4.2")["to"] == "0.4.2"
    notes = _parsed("release-notes", "--from", "v0.4.1", "--to", "v0.4.2")
    assert (notes["old"], notes["new"]) == ("0.4.1", "0.4.2")
    sweep = _parsed("sweep", "--from", "v0.4.1", "--to", "V0.4.2")
    assert (sweep["old"], sweep["new"]) == ("0.4.1", "0.4.2")
    bisect = _parsed("bisect", "--from", "v0.4.0", "--to", "v0.4.1", "--repo", ".")
    assert (bisect["old"], bisect["new"]) == ("0.4.0", "0.4.1")
    assert _parsed("envs", "build", "v0.4.2", "0.4.3")["versions"] == ["0.4.2", "0.4.3"]
    assert _parsed("scan", "--reader", "v0.4.1", ".")["reader"] == "0.4.1"


def test_a_tagged_release_the_catalog_lacks_is_refused_by_its_name():
    proc = invoke("affected", "--fix", "40", "--to", "v0.9.9", "-q")
    assert proc.returncode == 2
    assert "coreai-torch 0.9.9 is not a supported release" in one_line(proc)
