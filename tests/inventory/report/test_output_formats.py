"""`-f/--format` and `-o/--output` on every answering command: one format per run (two format
flags are a usage error, never one silently winning), an unknown format or an unwritable output
refused in one line before any work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import invoke, one_line

from inventory.errors import UsageError
from inventory.output import OutputFormat, envelope

# each answering command with the arguments it requires (none of them is run: the format flags
# are refused before anything is read)
COMMANDS = {
    "affected": ("affected", "--fix", "40"),
    "plan": ("plan", "--to", "0.4.3"),
    "release-notes": ("release-notes", "--from", "0.4.1", "--to", "0.4.2"),
    "sweep": ("sweep", "--from", "0.4.1", "--to", "0.4.2"),
    "verify": ("verify", "mimi", "--to", "0.4.3"),
    "scan": ("scan", "nothing.aimodel"),
    "bisect": ("bisect", "--from", "0.4.1", "--to", "0.4.2", "--repo", "src"),
    "repair": ("repair", "old.aimodel", "-o", "new.aimodel"),
}
# the JSON envelope's own keys: the only ones at the top of a document (the answer is `result`)
ENVELOPE = {
    "schema_version",
    "version",
    "tool",
    "command",
    "inputs",
    "summary",
    "result",
    "warnings",
    "error",
}
# a bundle exported with 0.4.2: `affected --fix 40` answers it without converting anything
EXPORTED_WITH_0_4_2 = (
    '[bundles.a]\nfiles = ["a"]\ndtype = "float32"\n'
    '[bundles.a.exporter]\nconverter = "0.4.2"\nsource = "test"\n'
)


def test_the_format_is_chosen_once():
    assert OutputFormat.choose() is OutputFormat.TABLE
    assert OutputFormat.choose(as_json=True) is OutputFormat.JSON
    assert OutputFormat.choose(markdown=True) is OutputFormat.MARKDOWN
    assert OutputFormat.choose(chosen=" Markdown ") is OutputFormat.MARKDOWN
    with pytest.raises(UsageError, match="--json and --markdown"):
        OutputFormat.choose(as_json=True, markdown=True)
    with pytest.raises(UsageError, match="--json and --format json"):
        OutputFormat.choose(as_json=True, chosen="json")
    with pytest.raises(UsageError, match="not a format"):
        OutputFormat.choose(chosen="xml")


@pytest.mark.parametrize("args", COMMANDS.values(), ids=COMMANDS.keys())
def test_two_format_flags_are_a_usage_error_on_every_command(args):
    ran = invoke(*args, "--json", "-f", "table")
    assert ran.returncode == 2
    assert "give one output format" in one_line(ran)
    # JSON was asked for: the refusal is also a JSON error envelope on stdout
    assert "give one output format" in json.loads(ran.stdout)["error"]


@pytest.mark.parametrize("args", COMMANDS.values(), ids=COMMANDS.keys())
def test_an_unknown_format_is_refused_on_every_command(args):
    ran = invoke(*args, "--format", "xml")
    assert ran.returncode == 2
    assert "--format xml: not a format" in one_line(ran)


@pytest.mark.parametrize("name", [n for n in COMMANDS if n != "repair"])
def test_an_output_file_that_cannot_be_written_is_refused_before_the_run(name, tmp_path):
    ran = invoke(*COMMANDS[name], "-f", "json", "-o", str(tmp_path / "no" / "such" / "x.json"))
    assert ran.returncode == 2
    assert "no folder" in one_line(ran)
    ran = invoke(*COMMANDS[name], "-o", str(tmp_path))
    assert ran.returncode == 2
    assert "a folder, not a file" in one_line(ran)


@pytest.mark.parametrize("fmt", ["html", "cyclonedx"])
def test_a_format_a_command_has_no_form_in_is_refused_before_the_run(fmt):
    for name in ("repair", "bisect", "sweep", "release-notes"):
        ran = invoke(*COMMANDS[name], "-f", fmt)
        assert ran.returncode == 2, name
        assert f"{name} has no {fmt} form" in one_line(ran), name


def test_the_report_of_a_repair_goes_to_report_not_to_its_output_bundle(tmp_path):
    # -o is the repaired bundle; the report's file is --report, checked before the run
    ran = invoke(*COMMANDS["repair"], "--report", str(tmp_path / "no" / "such" / "r.md"))
    assert ran.returncode == 2
    assert one_line(ran).startswith("error: --report ") and "no folder" in one_line(ran)


def test_envs_list_in_json_is_the_listing_the_table_prints(json_schema):
    data = json.loads(invoke("envs", "list", "-f", "json").stdout)
    json_schema(data)
    assert data["command"] == "envs list"
    table = invoke("envs", "list", COLUMNS="400").stdout
    for env in data["result"]["envs"]:
        assert f"{env['name']}: " in table and env["record"] in table
    if not data["result"]["envs"] and not data["result"]["damaged"]:
        assert "no converter environments yet" in table
    assert invoke("envs", "list", "--json", "-f", "json").returncode == 2


def test_the_envelope_holds_the_result_once_under_result():
    answer = {"to": "0.4.3", "reexport": "no", "bundles": []}
    document = json.loads(envelope("plan", answer, summary=None))
    assert set(document) == ENVELOPE
    assert document["result"] == answer


@pytest.mark.parametrize(
    "args",
    [
        ("fixes",),
        ("cache", "list"),
        ("cache", "du"),
        ("envs", "list"),
        ("affected", "--fix", "40", "-q"),
    ],
    ids=lambda args: " ".join(args[:2]),
)
def test_no_field_of_the_result_is_repeated_at_the_top_of_the_document(args, tmp_path, json_schema):
    """A field of the answer is in `result` and nowhere else: repeated at the top level it
    doubled every document (a plan's 102 KB printed as 205 KB). The command's schema refuses a
    document that repeats them."""
    registry = tmp_path / "recipes.toml"
    registry.write_text(EXPORTED_WITH_0_4_2)
    extra = ("--registry", str(registry)) if args[0] == "affected" else ()
    store = str(tmp_path / "store")
    ran = invoke(*args, *extra, "--json", INVENTORY_CACHE=store, INVENTORY_STORE=store)
    assert ran.returncode == 0, ran.stderr
    document = json.loads(ran.stdout)
    json_schema(document)
    assert set(document) == ENVELOPE
    result = document["result"]
    assert isinstance(result, dict) and result, result
    assert set(result).isdisjoint(document), set(result) & set(document)
    with pytest.raises(AssertionError, match="Additional properties are not allowed"):
        json_schema({**result, **document})


def test_markdown_links_each_fix_as_the_answers_own_records_name_it(tmp_path):
    """A release page links `#54` to the pull request the fix records the answer read name
    (`--fixes`), not to the packaged database's."""
    from rich.console import Console

    from inventory.output import Renderer, render
    from oracle.catalog.fixes import FIXES_FILE

    packaged = "https://github.com/apple/coreai-torch/pull/54"
    fork = "https://github.com/example/coreai-torch-fork/pull/54"
    text = FIXES_FILE.read_text()
    assert packaged in text
    own = tmp_path / "fixes.toml"
    own.write_text(text.replace(packaged, fork))

    def page(fixes: Path | None) -> str:
        renderer: Renderer[None] = Renderer(
            "plan", lambda v: {}, lambda v: "", lambda v: "#54 moves values", fixes=fixes
        )
        out = tmp_path / "page.md"
        render(renderer, None, OutputFormat.MARKDOWN, Console(), to=out)
        return out.read_text()

    assert page(None).strip() == f"[apple/coreai-torch#54]({packaged}) moves values"
    assert page(own).strip() == f"[example/coreai-torch-fork#54]({fork}) moves values"
