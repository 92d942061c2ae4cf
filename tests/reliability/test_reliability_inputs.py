"""Exit codes, literal user text, and validation of options and user files (part A).

Every case drives the real CLI. An unexpected exception is provoked with the test-only fault
injection `INVENTORY_FAULT=internal` (no real input is known to crash any more); the parsers are
also fuzzed with hypothesis: a loader returns a value or raises the project's one-line user error,
never anything else.
"""

from __future__ import annotations

import json
import math
import string
import tempfile
from pathlib import Path
from typing import Literal

import pytest
import tomli_w
from cli import invoke as run
from cli import one_line
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pages import Page

from inventory.errors import USER_ERRORS, ExitCode
from inventory.ignore import load_ignores
from inventory.plan import read_baseline
from inventory.registry import load_registry

ROOT = Path(__file__).resolve().parents[2]

# A bundle whose name, note and exporter source are rich markup: it is answered without
# converting anything (no trace recorded), so the table and markdown render quickly.
MARKUP_REGISTRY = """\
[bundles."a[/x]"]
files = ["a[/x].aimodel"]
dtype = "float32"
note = "[bold]n[/bold] [/y] :smile:"
[bundles."a[/x]".exporter]
converter = "0.4.1"
source = "[/s]"

[bundles.b]
files = ["b.aimodel"]
dtype = "float32"
[bundles.b.exporter]
converter = "0.4.1"
source = "test"
"""

GOOD_BUNDLE = """\
[bundles.x]
files = ["a.aimodel"]
dtype = "float32"
[bundles.x.exporter]
converter = "0.4.1"
source = "test"
"""
INSTANCE = """\
[[bundles.x.instances]]
kind = "pad"
{count}dtype = "float32"
source = "test"
[bundles.x.instances.params]
mode = "constant"
"""


def usage_error(*args: str, **env: str) -> str:
    """The one stderr line of a run that must end in exit code 2."""
    proc = run(*args, **env)
    assert proc.returncode == ExitCode.USAGE, (proc.returncode, proc.stderr)
    return one_line(proc)


def write(tmp_path: Path, name: str, text: str | bytes) -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


# 1. An unexpected exception is one line and exit code 4, never 1.

FAULT = {"INVENTORY_FAULT": "internal"}
INTERNAL_LINE = (
    "error: internal error (RuntimeError): injected fault [/x] "
    "(INVENTORY_FAULT=internal, tests only)"
)


@pytest.mark.parametrize(
    "command",
    [
        ("affected", "--fix", "40"),
        ("plan", "--to", "0.4.2"),
        ("release-notes", "--from", "0.4.1", "--to", "0.4.2"),
        ("sweep", "--from", "0.4.1", "--to", "0.4.2"),
        ("scan", "."),
        ("repair", "x.aimodel", "--out", "y.aimodel"),
        ("trace", "mimi"),
        ("envs", "list"),
        ("envs", "build"),
        ("cache", "prune"),
        ("cache", "list"),
        ("cache", "du"),
        ("fixes",),
    ],
)
def test_an_unexpected_exception_is_one_line_and_exit_4_in_every_command(command, tmp_path):
    proc = run(*command, INVENTORY_CACHE=str(tmp_path), **FAULT)
    assert proc.returncode == ExitCode.INTERNAL and int(ExitCode.INTERNAL) == 4, proc.stderr
    assert one_line(proc) == INTERNAL_LINE
    assert proc.stdout == ""


@pytest.mark.parametrize(
    "command",
    [
        ("affected", "--fix", "40"),
        ("plan", "--to", "0.4.2"),
        ("release-notes", "--from", "0.4.1", "--to", "0.4.2"),
        ("sweep", "--from", "0.4.1", "--to", "0.4.2"),
        ("scan", "."),
    ],
)
def test_an_unexpected_exception_in_json_mode_is_exactly_one_envelope(command, json_schema):
    proc = run(*command, "--json", "-q", **FAULT)
    assert proc.returncode == ExitCode.INTERNAL, proc.stderr
    assert one_line(proc) == INTERNAL_LINE
    data = json.loads(proc.stdout)  # the whole of stdout is one JSON document
    json_schema(data)
    assert data["command"] == command[0] and data["result"] is None
    assert data["error"] == INTERNAL_LINE.removeprefix("error: ")


def test_inventory_debug_adds_the_traceback_and_keeps_exit_4():
    proc = run("affected", "--fix", "40", "-q", INVENTORY_DEBUG="1", **FAULT)
    assert proc.returncode == ExitCode.INTERNAL
    assert "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.rstrip().splitlines()[-1] == INTERNAL_LINE


# 2. User text is printed literally: rich markup is never interpreted.


def test_markup_in_a_fix_id_or_bundle_name_is_printed_literally(json_schema):
    assert usage_error("affected", "--fix", "[/x]", "-q") == (
        "error: unknown fix '[/x]': not in the fix database (fixes.toml); no id is close to "
        "it; `inventory fixes` lists every record"
    )
    assert usage_error("affected", "--fix", "40", "-b", "a[/x]", "-q").startswith(
        "error: bundle 'a[/x]' is not in the registry (known: "
    )
    proc = run("affected", "--fix", "[/x]", "--json", "-q")
    assert proc.returncode == ExitCode.USAGE
    data = json.loads(proc.stdout)
    json_schema(data)
    assert data["error"] == (
        "unknown fix '[/x]': not in the fix database (fixes.toml); no id "
        "is close to it; `inventory fixes` lists every record"
    )


def test_an_error_line_keeps_its_bracketed_table_name(tmp_path):
    bad = write(tmp_path, "recipes.toml", '[bundles.x]\nfiles = ["a"]\ndtype = "float32"\n')
    line = usage_error("affected", "--fix", "40", "--registry", str(bad), "-q")
    assert line == f"error: {bad}: [bundles.x] lacks 'exporter'"


def test_a_bundle_named_in_markup_is_rendered_literally_in_table_and_markdown(tmp_path):
    registry = write(tmp_path, "recipes.toml", MARKUP_REGISTRY)
    for fmt in ((), ("--markdown",)):
        proc = run(
            "affected", "--fix", "40", "-b", "a[/x]", "--registry", str(registry), "-q", *fmt
        )
        # no trace recorded: inconclusive, answered without converting anything
        assert proc.returncode == ExitCode.INCONCLUSIVE, proc.stderr
        assert "Traceback" not in proc.stderr
        # the markdown as its reader sees it rendered
        shown = Page.of_markdown(proc.stdout).text if fmt else proc.stdout
        assert "a[/x]" in shown and "inventory trace a[/x] --write" in shown
    proc = run("affected", "--fix", "40", "-b", "a[/x]", "--registry", str(registry), "-q")
    assert "exported with coreai-torch 0.4.1 ([/s])" in proc.stdout


# names a markdown page would run, hide behind or link (a bundle's name, a record's title)
HOSTILE_NAMES = (
    "<script>alert(1)</script>",
    "<!-- the rest of the page is hidden",
    "[click](javascript:alert(1))",
    "![pixel](https://evil.example/p.png)",
    "<https://evil.example>",
    "*bold* `code` _em_",
)


def _toml_string(value: str) -> str:
    return json.dumps(value)  # a JSON string of these values is a TOML basic string


def test_hostile_names_and_titles_render_as_text_in_markdown(tmp_path):
    """Bundles named, and a record titled, as HTML, comments, links and emphasis, through the
    real `affected -f markdown` (each bundle exported with the record's own release: answered
    without a conversion), rendered by a markdown library: each shows as its literal text, and
    the page keeps the renderer's own markup (its table, the record's pull request link) only."""
    registry = write(
        tmp_path,
        "recipes.toml",
        "".join(
            f'[bundles.{_toml_string(name)}]\nfiles = ["a"]\ndtype = "float32"\n'
            f'[bundles.{_toml_string(name)}.exporter]\nconverter = "0.4.2"\n'
            f'source = "test"\n'
            for name in HOSTILE_NAMES
        ),
    )
    title = "Fix <!-- conv --> [transpose](javascript:alert(1)) *lowering*"
    fixes = write(
        tmp_path,
        "fixes.toml",
        (ROOT / "oracle" / "catalog" / "fixes.toml")
        .read_text()
        .replace('title = "Fix conv transpose lowering"', f"title = {_toml_string(title)}"),
    )
    store = str(tmp_path / "store")
    proc = run(
        *("affected", "--fix", "40", "--registry", str(registry), "--fixes", str(fixes)),
        *("-f", "markdown", "-q"),
        INVENTORY_CACHE=store,
        INVENTORY_STORE=store,
    )
    assert proc.returncode == ExitCode.OK, proc.stderr
    page = Page.of_markdown(proc.stdout)
    for value in (*HOSTILE_NAMES, title):
        assert value in page.text, value
    assert not page.comments
    assert not {tag for tag, _ in page.tags} & {"script", "img", "em", "code"}, page.tags
    assert page.links == {"https://github.com/apple/coreai-torch/pull/40"}
    # the summary table and the answer's, each a header and one row per bundle
    tags = [tag for tag, _ in page.tags]
    assert (tags.count("table"), tags.count("tr")) == (2, 2 * (len(HOSTILE_NAMES) + 1))


# 3. Malformed user files: one line naming the file, exit 2, never a traceback.


def test_a_binary_registry_is_one_line(tmp_path, json_schema):
    binary = write(tmp_path, "recipes.toml", b"\xff\xfe\x00[bundles]\x81")
    assert usage_error("affected", "--fix", "40", "--registry", str(binary), "-q") == (
        f"error: {binary}: not UTF-8 text (byte 0)"
    )
    proc = run("plan", "--to", "0.4.2", "--registry", str(binary), "--json", "-q")
    assert proc.returncode == ExitCode.USAGE and "Traceback" not in proc.stderr
    json_schema(json.loads(proc.stdout))


def test_a_registry_nested_too_deeply_is_one_line(tmp_path):
    deep = write(tmp_path, "recipes.toml", "x = " + "[" * 100_000 + "]" * 100_000 + "\n")
    assert usage_error("affected", "--fix", "40", "--registry", str(deep), "-q") == (
        f"error: {deep}: nested too deeply to read"
    )


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            INSTANCE.format(count="count = -3\n"),
            "[bundles.x] instance 1 count must be a whole number from 1 to 1000000, not -3",
        ),
        (
            INSTANCE.format(count="count = 9223372036854775807\n"),
            "[bundles.x] instance 1 count must be a whole number from 1 to 1000000, not "
            "9223372036854775807",
        ),
        (
            INSTANCE.format(count="count = 0\n"),
            "[bundles.x] instance 1 count must be a whole number from 1 to 1000000, not 0",
        ),
        (
            INSTANCE.format(count="count = true\n"),
            "[bundles.x] instance 1 count must be a whole number from 1 to 1000000, not True",
        ),
        (
            INSTANCE.format(count="count = 2.5\n"),
            "[bundles.x] instance 1 count must be a whole number from 1 to 1000000, not 2.5",
        ),
        (
            INSTANCE.format(count="")
            .replace('mode = "constant"', "")
            .replace("[bundles.x.instances.params]", "params = 3"),
            "[bundles.x] instance 1 params must be a table, not 3",
        ),
        (
            INSTANCE.format(count='modules = "abc"\n'),
            "[bundles.x] instance 1 modules must be a list of strings, not 'abc'",
        ),
        ('files = "abc"', "[bundles.x] files must be a non-empty list of strings, not 'abc'"),
        ("files = []", "[bundles.x] files must be a non-empty list of strings, not []"),
        (
            "dtype = 16",
            "[bundles.x] dtype must be a probe dtype (float32, float16, bfloat16), not 16",
        ),
        (
            "converter = 0.41",
            "[bundles.x.exporter] converter must be a release in converters.toml "
            "(0.4.0, 0.4.1, 0.4.2, 0.4.3, unknown), not 0.41",
        ),
        (
            '[bundles.x.pipeline]\noptimize = "yes"',
            "[bundles.x.pipeline] optimize must be true or false, not 'yes'",
        ),
        (
            "[bundles.x.pipeline]\ndecompositions = 3",
            "[bundles.x.pipeline] decompositions must be a string, not 3",
        ),
        ("note = [1]", "[bundles.x] note must be a string, not [1]"),
        (
            "fingerprint = 3",
            "[bundles.x] fingerprint must be a string, a list of strings or a table of strings, "
            "not 3",
        ),
        ("instances = 3", "[bundles.x] instances must be an array of tables, not 3"),
        ('exporter = "0.4.1"', "[bundles.x] exporter must be a table, not '0.4.1'"),
        ('recipe = "r"', "[bundles.x] recipe must be a table, not 'r'"),
    ],
)
def test_registry_fields_of_the_wrong_type_are_one_line(edit, expected, tmp_path):
    text = _edited(GOOD_BUNDLE, edit)
    registry = write(tmp_path, "recipes.toml", text)
    line = usage_error("affected", "--fix", "40", "--registry", str(registry), "-q")
    assert line == f"error: {registry}: {expected}"


def _edited(base: str, edit: str) -> str:
    """The bundle with one field replaced (a `key = value` line), or with a table appended."""
    key = edit.split(" =", 1)[0]
    if edit.startswith("[") or "\n" in edit:
        return base + edit + "\n"
    lines = base.splitlines()
    if key == "exporter":  # the whole table replaced by a value
        cut = lines.index("[bundles.x.exporter]")
        return "\n".join(lines[:cut] + [edit]) + "\n"
    for n, line in enumerate(lines):
        if line.startswith(f"{key} ="):
            lines[n] = edit
            return "\n".join(lines) + "\n"
    # a new key of the bundle table, before its sub-tables
    cut = lines.index("[bundles.x.exporter]")
    return "\n".join(lines[:cut] + [edit] + lines[cut:]) + "\n"


def test_a_registry_bundle_that_is_not_a_table_is_one_line(tmp_path):
    registry = write(tmp_path, "recipes.toml", "[bundles]\nx = 3\n")
    assert usage_error("affected", "--fix", "40", "--registry", str(registry), "-q") == (
        f"error: {registry}: [bundles.x] must be a table, not int"
    )


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            "expires = 2026-01-01T10:00:00",
            "ignore entry 1: expires must be a date (YYYY-MM-DD), not 2026-01-01T10:00:00",
        ),
        ("expires = 20260101", "ignore entry 1: expires must be a date (YYYY-MM-DD), not 20260101"),
        ("expires = 10:00:00", "ignore entry 1: expires must be a date (YYYY-MM-DD), not 10:00:00"),
        ('expires = "soon"', "ignore entry 1: expires must be a date (YYYY-MM-DD), not 'soon'"),
        ("bundle = 3", "ignore entry 1: bundle must be a non-empty string, not 3"),
        ('reason = ""', "ignore entry 1: reason must be a non-empty string, not ''"),
        ("fix = 4.5", 'ignore entry 1: fix must be a fix id (e.g. "40"), not 4.5'),
        ("fix = true", 'ignore entry 1: fix must be a fix id (e.g. "40"), not True'),
    ],
)
def test_an_ignore_entry_of_the_wrong_type_is_one_line(body, expected, tmp_path):
    fields = {"fix": '"40"', "bundle": '"mimi"', "reason": '"accepted"'}
    key, value = body.split(" = ", 1)
    fields[key] = value
    ignore = write(
        tmp_path, "ignore.toml", "[[ignore]]\n" + "".join(f"{k} = {v}\n" for k, v in fields.items())
    )
    line = usage_error("affected", "--fix", "40", "-b", "mimi", "--ignore", str(ignore), "-q")
    assert line == f"error: {ignore}: {expected}"


def test_an_ignore_file_of_the_wrong_shape_is_one_line(tmp_path):
    for text, expected in (
        ('ignore = "x"\n', "'ignore' must be an array of tables ([[ignore]])"),
        ("ignore = [1]\n", "ignore entry 1 must be a table ([[ignore]])"),
        (b"\xc3\x28", "not UTF-8 text (byte 0)"),
    ):
        ignore = write(tmp_path, "ignore.toml", text)
        line = usage_error("plan", "--to", "0.4.2", "--ignore", str(ignore), "-q")
        assert line == f"error: {ignore}: {expected}"


def test_an_ignore_entry_with_a_toml_date_and_a_numeric_fix_still_loads(tmp_path):
    """What a user naturally writes keeps working: a TOML date and the PR number."""
    ignore = write(
        tmp_path,
        "ignore.toml",
        '[[ignore]]\nfix = 40\nbundle = "mimi"\nreason = "accepted"\nexpires = 2099-01-01\n',
    )
    (entry,) = load_ignores(ignore)
    assert entry.expires is not None
    assert (entry.fix, entry.expires.isoformat()) == ("40", "2099-01-01")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1, 2]", "not a plan JSON (not an object)"),
        ('{"bundles": "abc"}', "not a plan JSON ('bundles' is not a list)"),
        ('{"result": {"bundles": [3]}}', "bundles[1] is not a bundle's plan (no 'bundle' name)"),
        (
            '{"bundles": [{"bundle": "mimi", "required": {}}]}',
            "bundles[1]: 'required' is not a list",
        ),
        (
            '{"bundles": [{"bundle": "mimi", "optional": [{"fix": null}]}]}',
            "bundles[1]: an entry of 'optional' has no 'fix' id",
        ),
        (
            '{"bundles": [{"bundle": "mimi", "optional": ["40"]}]}',
            "bundles[1]: an entry of 'optional' has no 'fix' id",
        ),
        ("[" * 100_000 + "]" * 100_000, "not a plan JSON (nested too deeply)"),
        ('{"to": "0.4.2"}', "not a plan JSON (no 'bundles')"),
    ],
)
def test_a_baseline_of_the_wrong_shape_is_one_line_before_the_plan_runs(text, expected, tmp_path):
    baseline = write(tmp_path, "baseline.json", text)
    # INVENTORY_CACHE is empty: the line comes before any environment or probe is needed
    line = usage_error(
        "plan",
        "--to",
        "0.4.2",
        "--baseline",
        str(baseline),
        "-q",
        INVENTORY_CACHE=str(tmp_path / "cache"),
    )
    assert line == f"error: {baseline}: {expected}"
    assert not (tmp_path / "cache").exists()


# 4. Option values.


@pytest.mark.parametrize("command", [("affected", "--fix", "40"), ("plan",)])
def test_an_empty_to_is_an_error_not_the_default(command):
    assert usage_error(*command, "--to", "", "-q") == (
        "error: --to must name a release (e.g. 0.4.2), not ''"
    )


def test_an_empty_from_or_to_is_an_error_for_release_notes_and_sweep():
    assert usage_error("release-notes", "--from", "", "--to", "0.4.2", "-q") == (
        "error: --from must name a release (e.g. 0.4.2), not ''"
    )
    assert usage_error("sweep", "--from", "0.4.1", "--to", " ", "-q") == (
        "error: --to must name a release (e.g. 0.4.2), not ' '"
    )


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "-inf"])
@pytest.mark.parametrize("command", [("affected", "--fix", "40"), ("plan", "--to", "0.4.2")])
def test_tolerance_must_be_a_finite_number_above_0(command, value, json_schema):
    shown = f"{float(value):g}"
    assert usage_error(*command, "--tolerance", value, "-q") == (
        f"error: --tolerance must be a finite number > 0, not {shown}"
    )
    proc = run(*command, "--tolerance", value, "--json", "-q")
    data = json.loads(proc.stdout)
    json_schema(data)
    assert data["error"] == f"--tolerance must be a finite number > 0, not {shown}"


@pytest.mark.parametrize("value", ["-1", "nan", "-inf", "inf"])
def test_older_than_must_be_a_finite_number_of_days_and_nothing_is_pruned(value, tmp_path):
    # a stored result that `--older-than -1` used to remove with the rest of the store
    kept = tmp_path / "results" / "pad-0.4.1-0.4.2-0123456789abcdef0123"
    kept.mkdir(parents=True)
    (kept / "result.json").write_text("{}")
    line = usage_error("cache", "prune", "--older-than", value, INVENTORY_CACHE=str(tmp_path))
    assert line == f"error: --older-than must be a finite number >= 0, not {float(value):g}"
    assert kept.is_dir()


def test_a_repeated_bundle_is_listed_once_in_the_order_given(tmp_path):
    registry = write(tmp_path, "recipes.toml", MARKUP_REGISTRY)
    proc = run(
        "affected",
        "--fix",
        "40",
        "-b",
        "b",
        "-b",
        "a[/x]",
        "-b",
        "b",
        "--registry",
        str(registry),
        "--json",
        "-q",
    )
    assert proc.returncode == ExitCode.INCONCLUSIVE, proc.stderr
    assert [b["bundle"] for b in json.loads(proc.stdout)["result"]["bundles"]] == ["b", "a[/x]"]


# 5. Property-based fuzzing of the parsers: a value or the one-line user error, nothing else.

_SURROGATES: tuple[Literal["Cs"], ...] = ("Cs",)
_TEXT = st.text(st.characters(blacklist_categories=_SURROGATES), max_size=12)
_SCALARS = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _TEXT
    | st.dates()
    | st.datetimes()
    | st.times()
)
_TOML_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


def _maybe(value: st.SearchStrategy, noise: st.SearchStrategy | None = None) -> st.SearchStrategy:
    """Mostly the right shape, sometimes anything: the checks past the first field run too."""
    return value | (_TOML_VALUES if noise is None else noise)


_KINDS = st.sampled_from(["pad", "layer_norm", "conv_transpose", ""]) | _TEXT
_INSTANCE = st.fixed_dictionaries(
    {
        "kind": _maybe(_KINDS),
        "dtype": _maybe(st.just("float32")),
        "source": _maybe(st.just("test")),
        "params": _maybe(st.dictionaries(_TEXT, _SCALARS, max_size=3)),
    },
    optional={
        "count": _maybe(st.integers(min_value=-5, max_value=2**40)),
        "modules": _maybe(st.lists(_TEXT, max_size=3)),
        "producers": _maybe(st.lists(_TEXT, max_size=3)),
    },
)
_BUNDLE = st.fixed_dictionaries(
    {
        "files": _maybe(st.lists(_TEXT, max_size=3)),
        "dtype": _maybe(st.just("float16")),
        "exporter": _maybe(
            st.fixed_dictionaries(
                {"converter": _maybe(st.just("0.4.1")), "source": _maybe(st.just("test"))},
                optional={"core": _maybe(_TEXT)},
            )
        ),
    },
    optional={
        "instances": _maybe(st.lists(_INSTANCE, max_size=3)),
        "pipeline": _maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "decompositions": _maybe(st.sampled_from(["coreai", "default", "bad"])),
                    "optimize": _maybe(st.booleans()),
                    "shapes": _maybe(_TEXT),
                },
            )
        ),
        "note": _maybe(_TEXT),
        "runtimes": _maybe(st.lists(_TEXT, max_size=2)),
        "fingerprint": _TOML_VALUES,
        "fingerprints": _TOML_VALUES,
        "recipe": _TOML_VALUES,
        "trace": _TOML_VALUES,
        "standin": _TOML_VALUES,
    },
)
_REGISTRY = st.fixed_dictionaries(
    {"bundles": _maybe(st.dictionaries(_TEXT, _maybe(_BUNDLE), max_size=3))},
    optional={
        "deploy": _maybe(
            st.fixed_dictionaries({}, optional={"runtimes": _maybe(st.lists(_TEXT, max_size=2))})
        )
    },
)
_IGNORES = st.fixed_dictionaries(
    {},
    optional={
        "ignore": _maybe(
            st.lists(
                _maybe(
                    st.fixed_dictionaries(
                        {},
                        optional={
                            "fix": _maybe(st.sampled_from(["40", "#54", 40])),
                            "bundle": _maybe(_TEXT),
                            "reason": _maybe(_TEXT),
                            "expires": _maybe(st.dates() | st.dates().map(str) | st.datetimes()),
                        },
                    )
                ),
                max_size=3,
            )
        )
    },
)

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | _TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_TEXT, inner, max_size=4),
    max_leaves=12,
)


def _jmaybe(value: st.SearchStrategy) -> st.SearchStrategy:
    return _maybe(value, _JSON)


_LEVEL_ENTRIES = _jmaybe(
    st.lists(
        _jmaybe(
            st.fixed_dictionaries({}, optional={"fix": _jmaybe(st.sampled_from(["40", "54", 7]))})
        ),
        max_size=3,
    )
)
_BASELINE_BUNDLE = st.fixed_dictionaries(
    {},
    optional={
        "bundle": _jmaybe(st.sampled_from(["mimi", "sam3"])),
        "required": _LEVEL_ENTRIES,
        "inconclusive": _LEVEL_ENTRIES,
        "unchecked": _LEVEL_ENTRIES,
        "optional": _LEVEL_ENTRIES,
        "not_affected": _LEVEL_ENTRIES,
        "ignored": _LEVEL_ENTRIES,
    },
)
_BASELINE = st.fixed_dictionaries(
    {},
    optional={
        "bundles": _jmaybe(st.lists(_jmaybe(_BASELINE_BUNDLE), max_size=3)),
        "result": _jmaybe(
            st.fixed_dictionaries(
                {}, optional={"bundles": _jmaybe(st.lists(_BASELINE_BUNDLE, max_size=3))}
            )
        ),
    },
)

FUZZ = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _loads_or_user_error(load, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input"
        path.write_bytes(content)
        try:
            load(path)
        except USER_ERRORS as exc:
            message = str(exc)
            assert message and "\n" not in message, message  # one line for the user


def _toml(document: dict) -> bytes:
    return tomli_w.dumps(document).encode()


@FUZZ
@given(_REGISTRY)
def test_fuzz_the_registry_loader_with_registry_shaped_documents(document):
    _loads_or_user_error(load_registry, _toml(document))


@FUZZ
@given(st.binary(max_size=200) | st.text(string.printable, max_size=200).map(str.encode))
def test_fuzz_the_registry_and_ignore_loaders_with_arbitrary_bytes(content):
    _loads_or_user_error(load_registry, content)
    _loads_or_user_error(load_ignores, content)


@FUZZ
@given(_IGNORES)
def test_fuzz_the_ignore_loader_with_ignore_shaped_documents(document):
    _loads_or_user_error(load_ignores, _toml(document))


@FUZZ
@given(_BASELINE | _JSON)
def test_fuzz_the_baseline_reader_with_json_documents(document):
    _loads_or_user_error(read_baseline, json.dumps(document).encode())


@FUZZ
@given(st.binary(max_size=200) | st.text(string.printable, max_size=200).map(str.encode))
def test_fuzz_the_baseline_reader_with_arbitrary_bytes(content):
    _loads_or_user_error(read_baseline, content)


def test_the_fuzz_strategies_reach_a_valid_registry():
    """The registry strategy is not all noise: its right-shaped branch loads."""
    document = {
        "bundles": {
            "x": {
                "files": ["a"],
                "dtype": "float16",
                "exporter": {"converter": "0.4.1", "source": "test"},
                "instances": [
                    {"kind": "pad", "dtype": "float32", "source": "t", "params": {"v": math.pi}}
                ],
            }
        }
    }
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recipes.toml"
        path.write_bytes(_toml(document))
        (bundle,) = load_registry(path)
    assert bundle.instances[0].count == 1
