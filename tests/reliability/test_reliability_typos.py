"""Reliability III, part 1: a typo in a data file is exit 2, never an answer.

Every value of every data file (registry, fixes and `--fixes` drafts, regimes, conditions,
policy, converters, ignore) is read through `oracle.catalog.schema`: a value of the wrong type, an
unknown construct kind or dtype, a release the catalog does not know, a misspelt key or a
duplicate id is one line naming the file, the key path and what was expected, before anything
runs (the store stays empty). Each loader is also fuzzed with hypothesis: a value or the one-line
user error, never anything else.
"""

from __future__ import annotations

import math
import string
import tempfile
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import pytest
import tomli_w
from cli import Ran
from cli import invoke as run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from inventory.errors import USER_ERRORS, ExitCode
from inventory.policy import load_policy
from oracle.catalog.conditions import load_conditions
from oracle.catalog.fixes import FIXES_FILE, load_fixes
from oracle.catalog.regimes import REGIMES_FILE, load_regimes
from oracle.catalog.releases import CATALOG_FILE, load_catalog
from oracle.catalog.schema import PROBE_DTYPES as SCHEMA_DTYPES
from oracle.constructs._graph import PROBE_DTYPES

ROOT = Path(__file__).resolve().parents[2]
RELEASES = "(0.4.0, 0.4.1, 0.4.2, 0.4.3)"
# each record's number in the shipped fix database, as error lines count them (from 1)
NO = {str(r["id"]): i for i, r in enumerate(tomllib.loads(FIXES_FILE.read_text())["fix"], 1)}


def one_line(proc: Ran) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    return lines[0]


def refused(tmp_path: Path, *args: str) -> str:
    """The one error line of a run that must end in exit 2 before anything runs."""
    store = tmp_path / "store"
    proc = run(*args, "-q", INVENTORY_CACHE=str(store))
    assert proc.returncode == ExitCode.USAGE, (proc.returncode, proc.stdout, proc.stderr)
    assert not store.exists() or not any(store.rglob("*")), "something ran"
    return one_line(proc)


def toml_of(path: Path) -> dict[str, Any]:
    return tomllib.loads(path.read_text())


def write_toml(tmp_path: Path, name: str, document: dict[str, Any]) -> Path:
    path = tmp_path / name
    path.write_text(tomli_w.dumps(document))
    return path


def draft(tmp_path: Path, fix_id: str, **changes: Any) -> Path:
    """The shipped fix database with one record's fields changed (None: the field removed)."""
    document = toml_of(FIXES_FILE)
    (record,) = [r for r in document["fix"] if r["id"] == fix_id]
    for key, value in changes.items():
        if value is None:
            record.pop(key)
        else:
            record[key] = value
    return write_toml(tmp_path, "draft.toml", document)


def registry_with(tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    document = toml_of(ROOT / "recipes.toml")
    edit(document)
    return write_toml(tmp_path, "recipes.toml", document)


# ---- fixes: a --fixes draft ----------------------------------------------------------------


@pytest.mark.parametrize("ships_in", ["0.4.2 ", "v0.4.2", "abc", "0.4.9"])
def test_a_ships_in_the_catalog_does_not_know_is_exit_2_not_a_dropped_record(tmp_path, ships_in):
    """`ships_in = "v0.4.2"` used to drop #54 silently: plan answered `no` for sortformer."""
    path = draft(tmp_path, "54", ships_in=ships_in)
    line = refused(tmp_path, "plan", "--to", "0.4.2", "-b", "sortformer", "--fixes", str(path))
    assert line == (
        f"error: {path}: fix record {NO['54']} (54) ships_in must be a release in "
        f"converters.toml {RELEASES}, not {ships_in!r}"
    )


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"ships_in": 5},
            f"fix record {NO['54']} (54) ships_in must be a release in converters.toml "
            f"{RELEASES}, not 5",
        ),
        (
            {"id": {"a": 1}},
            f"fix record {NO['54']} id must be an id (a string or a whole number, no "
            "spaces), not {'a': 1}",
        ),
        (
            {"id": "5 4"},
            f"fix record {NO['54']} id must be an id (a string or a whole number, no "
            "spaces), not '5 4'",
        ),
        ({"title": [1]}, f"fix record {NO['54']} (54) title must be a non-empty string, not [1]"),
        (
            {"constructs": [1, 2]},
            f"fix record {NO['54']} (54) constructs must be a non-empty list of "
            "strings, not [1, 2]",
        ),
        (
            {"constructs": ["batchnorm"]},
            f"fix record {NO['54']} (54) constructs must be a list of "
            "construct kinds (arange, atan2, batch_norm, cache_update, "
            "cat_dynamic, conv_transpose, embedding, floor_divide, "
            "...), not 'batchnorm'",
        ),
        (
            {"constructs": None},
            f"fix record {NO['54']} (54): a lowering record needs constructs, a "
            "non-empty list of construct kinds",
        ),
        (
            {"kind": "lowerings"},
            f"fix record {NO['54']} (54) kind must be one of lowering, asset, "
            "pipeline, not 'lowerings'",
        ),
        ({"aliases": "35"}, f"fix record {NO['54']} (54) aliases must be a list of ids, not '35'"),
        ({"upstream": 54}, f"fix record {NO['54']} (54) upstream must be a string, not 54"),
        (
            {"shipsin": "0.4.2"},
            f"fix record {NO['54']} (54) has an unknown key 'shipsin' (known: id, "
            "title, ships_in, kind, upstream, constructs, aliases, checked, "
            "touches, draft)",
        ),
        (
            {"id": "40"},
            f"fix record {NO['54']} (40): id '40' is already used by fix record {NO['40']} (40)",
        ),
        (
            {"aliases": ["13"]},
            f"fix record {NO['54']} (54): id '13' is already used by fix record {NO['13']} (13)",
        ),
    ],
)
def test_a_fix_record_of_the_wrong_type_or_a_duplicate_id_is_exit_2(tmp_path, changes, expected):
    path = draft(tmp_path, "54", **changes)
    line = refused(tmp_path, "plan", "--to", "0.4.2", "--fixes", str(path))
    assert line == f"error: {path}: {expected}"


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        (
            {"construct": "softmaxx"},
            "unchanged note 1 construct must be one of arange, atan2, batch_norm,",
        ),
        (
            {"through": "v0.4.3"},
            "unchanged note 1 (softmax) through must be a release in converters.toml "
            f"{RELEASES}, not 'v0.4.3'",
        ),
        (
            {"since": "0.4.3", "through": "0.4.1"},
            "unchanged note 1 (softmax): through 0.4.1 is not after since 0.4.3",
        ),
        ({"checked": 3}, "unchanged note 1 (softmax) checked must be a non-empty string, not 3"),
        ({"read": "0.4.2"}, "unchanged note 1 has an unknown key 'read'"),
    ],
)
def test_an_unchanged_note_with_a_typo_is_exit_2_not_a_silent_note(tmp_path, changes, expected):
    """A `[[unchanged]]` note is read by every command that reads the fix database, like a
    record: a typo in one is refused before anything runs."""
    document = toml_of(FIXES_FILE)
    document["unchanged"][0].update(changes)
    path = write_toml(tmp_path, "draft.toml", document)
    line = refused(tmp_path, "plan", "--to", "0.4.2", "--fixes", str(path))
    assert line.startswith(f"error: {path}: {expected}"), line


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("fix = 3\n", "'fix' must be an array of tables ([[fix]])"),
        ("fix = [1, 2]\n", "fix 1 must be a table ([[fix]])"),
        ('[fixes]\nid = "1"\n', "the file has an unknown key 'fixes' (known: fix, unchanged)"),
    ],
)
def test_a_fixes_file_of_the_wrong_shape_is_exit_2_in_every_command(tmp_path, text, expected):
    path = tmp_path / "draft.toml"
    path.write_text(text)
    for command in (
        ("plan", "--to", "0.4.2"),
        ("affected", "--fix", "40"),
        ("sweep", "--from", "0.4.1", "--to", "0.4.2"),
        ("release-notes", "--from", "0.4.1", "--to", "0.4.2"),
    ):
        assert refused(tmp_path, *command, "--fixes", str(path)) == f"error: {path}: {expected}"


def test_a_fixes_error_is_the_json_envelope_under_json(tmp_path, json_schema):
    import json

    path = draft(tmp_path, "54", ships_in="v0.4.2")
    proc = run("plan", "--to", "0.4.2", "--fixes", str(path), "--json", "-q")
    assert proc.returncode == ExitCode.USAGE
    data = json.loads(proc.stdout)
    json_schema(data)
    assert data["error"].startswith(f"{path}: fix record {NO['54']} (54) ships_in must be")


# ---- registry -----------------------------------------------------------------------------


def _instance(document: dict[str, Any], bundle: str = "sortformer") -> dict[str, Any]:
    return document["bundles"][bundle]["instances"][0]


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        (
            "kind",
            "batchnorm",
            "[bundles.sortformer] instance 1 kind must be a construct kind "
            "(arange, atan2, batch_norm, cache_update, cat_dynamic, "
            "conv_transpose, embedding, floor_divide, ...), not 'batchnorm'",
        ),
        (
            "dtype",
            "fp16",
            "[bundles.sortformer] instance 1 dtype must be a probe dtype (float32, "
            "float16, bfloat16), not 'fp16'",
        ),
        (
            "dtype",
            "../../../../outside/dt",
            "[bundles.sortformer] instance 1 dtype must be a probe "
            "dtype (float32, float16, bfloat16), not "
            "'../../../../outside/dt'",
        ),
        (
            "kinds",
            "pad",
            "[bundles.sortformer] instance 1 has an unknown key 'kinds' (known: kind, "
            "params, count, dtype, modules, source, producers)",
        ),
    ],
)
def test_an_unknown_kind_or_dtype_in_the_registry_is_exit_2_in_plan_and_sweep(
    tmp_path, field, value, expected
):
    """`kind = "batchnorm"` used to be skipped: plan answered `no`, sweep said "0 of 8"."""
    path = registry_with(tmp_path, lambda d: _instance(d).__setitem__(field, value))
    assert (
        refused(tmp_path, "plan", "--to", "0.4.2", "-b", "sortformer", "--registry", str(path))
        == f"error: {path}: {expected}"
    )
    assert (
        refused(
            tmp_path,
            "sweep",
            "--from",
            "0.4.1",
            "--to",
            "0.4.2",
            "--registry",
            "--registry-file",
            str(path),
        )
        == f"error: {path}: {expected}"
    )


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d["bundles"]["mimi"].__setitem__("dtype", "fp32"),
            "[bundles.mimi] dtype must be a probe dtype (float32, float16, bfloat16), not 'fp32'",
        ),
        (
            lambda d: d["bundles"]["mimi"]["exporter"].__setitem__("converter", "0.4.1 "),
            "[bundles.mimi.exporter] converter must be a release in converters.toml (0.4.0, 0.4.1, "
            "0.4.2, 0.4.3, unknown), not '0.4.1 '",
        ),
        (
            lambda d: d["bundles"]["mimi"]["exporter"].__setitem__("core", "b2"),
            "[bundles.mimi.exporter] core must be a coreai-core release in converters.toml "
            "(1.0.0b1, 1.0.0b2, 1.0.0b3, unknown), not 'b2'",
        ),
        (
            lambda d: d["bundles"]["mimi"]["pipeline"].__setitem__("shapes", "dinamic"),
            "[bundles.mimi.pipeline] shapes must be one of static, dynamic, not 'dinamic'",
        ),
        (
            lambda d: d["bundles"]["mimi"]["pipeline"].__setitem__("decompositions", "coreia"),
            "[bundles.mimi.pipeline] decompositions must be one of coreai, default, none, not "
            "'coreia'",
        ),
        (
            lambda d: d["bundles"]["mimi"].__setitem__("runtime", ["b3"]),
            "[bundles.mimi] has an unknown key 'runtime' (known: files, dtype, exporter, pipeline, "
            "recipe, trace, instances, note, fingerprint, fingerprints, runtimes, standin, verify)",
        ),
        (
            # a misspelt miniature would be ignored, the full module built in its place
            lambda d: d["bundles"]["mimi"].__setitem__(
                "verify", {"form": "miniature", "why": "one layer", "kwarg": {"layers": 1}}
            ),
            "[bundles.mimi.verify] has an unknown key 'kwarg' (known: form, why, build, kwargs, "
            "inputs, seconds_per_run, cost_measured, run)",
        ),
        (
            lambda d: d["bundles"]["parakeet"]["verify"]["run"].__setitem__("inputz", {}),
            "[bundles.parakeet.verify.run] has an unknown key 'inputz' (known: why, build, "
            "kwargs, inputs, seconds_per_run, cost_measured)",
        ),
        (
            lambda d: d.__setitem__("deploy", {"runtimes": ["b9"]}),
            "[deploy] runtimes: runtime 'b9' is not in the catalog (coreai-core releases in "
            "converters.toml: 1.0.0b1, 1.0.0b2, 1.0.0b3)",
        ),
        (
            lambda d: d.__setitem__("bundle", {}),
            "the file has an unknown key 'bundle' (known: bundles, deploy)",
        ),
    ],
)
def test_a_registry_value_the_catalog_or_schema_does_not_know_is_exit_2(tmp_path, edit, expected):
    path = registry_with(tmp_path, edit)
    assert refused(tmp_path, "affected", "--fix", "40", "--registry", str(path)) == (
        f"error: {path}: {expected}"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            '[[ignore]]\nfix = "40"\nbundle = "mimi"\nreason = "r"\nexpire = 2020-01-01\n',
            "ignore entry 1 has an unknown key 'expire' (known: fix, bundle, reason, expires)",
        ),
        (
            '[[ignores]]\nfix = "40"\n',
            "unknown table or key 'ignores' (an ignore file holds [[ignore]] entries only)",
        ),
    ],
)
def test_a_misspelt_ignore_key_is_exit_2_not_an_entry_that_never_expires(tmp_path, text, expected):
    path = tmp_path / "ignore.toml"
    path.write_text(text)
    assert refused(tmp_path, "plan", "--to", "0.4.2", "--ignore", str(path)) == (
        f"error: {path}: {expected}"
    )


# ---- the project's own data files (regimes, conditions, policy, converters) -----------------


def _edited(source: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    document = toml_of(source)
    edit(document)
    return write_toml(tmp_path, source.name, document)


def _one_line_error(load: Callable[[Path], Any], path: Path) -> str:
    with pytest.raises(USER_ERRORS) as caught:
        load(path)
    message = str(caught.value)
    assert "\n" not in message
    return message


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d["regime"][0].__setitem__("construct", "conv_transpse"),
            "regime 1 construct must be a construct kind (arange, atan2, batch_norm, cache_update, "
            "cat_dynamic, conv_transpose, embedding, floor_divide, ...), not 'conv_transpse'",
        ),
        (
            lambda d: d["regime"][0].__setitem__("dtype", "half"),
            "regime 1 dtype must be a probe dtype (float32, float16, bfloat16), not 'half'",
        ),
        (
            lambda d: d["regime"][0].__setitem__("values", "trainde"),
            "regime 1 values must be one of init, trained, adversarial, not 'trainde'",
        ),
        (
            lambda d: d["regime"][0].__setitem__("control", "yes"),
            "regime 1 control must be true or false, not 'yes'",
        ),
        (
            lambda d: d["regime"][0].__setitem__("tolerance", -1),
            "regime 1 tolerance must be a finite number above 0, not -1",
        ),
        (
            lambda d: d["regime"][0].__setitem__("seed", 1.5),
            "regime 1 seed must be a whole number from 0 to 4294967295, not 1.5",
        ),
        (
            lambda d: d["regime"][0].__setitem__("pipeline", {"optimise": False}),
            "regime 1 pipeline has an unknown key 'optimise' (known: decompositions, optimize, "
            "shapes, keep)",
        ),
        (
            lambda d: d["regime"][1].__setitem__("name", d["regime"][0]["name"]),
            "regime conv_transpose/1d-op0-p0 is defined twice",
        ),
    ],
)
def test_a_regimes_typo_is_one_line_naming_the_regime_and_key(tmp_path, edit, expected):
    path = _edited(REGIMES_FILE, tmp_path, edit)
    assert _one_line_error(load_regimes, path) == f"{path}: {expected}"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d["condition"][0].__setitem__("below", "tiny"),
            "condition 1 below must be a finite number, not 'tiny'",
        ),
        (
            lambda d: d["condition"][0].__setitem__("construct", "batchnorm"),
            "condition 1 construct must be a construct kind (arange, atan2, batch_norm, "
            "cache_update, cat_dynamic, conv_transpose, embedding, floor_divide, ...), "
            "not 'batchnorm'",
        ),
        (
            lambda d: d["condition"][0].pop("below"),
            "condition 1 needs 'below' or 'above' (the threshold it checks)",
        ),
        (
            lambda d: d["condition"][1].__setitem__("name", "tiny-running-var"),
            "condition 2: condition 'batch_norm/tiny-running-var' is already used by condition 1",
        ),
    ],
)
def test_a_conditions_typo_is_one_line(tmp_path, edit, expected):
    path = _edited(ROOT / "oracle" / "catalog" / "conditions.toml", tmp_path, edit)
    assert _one_line_error(load_conditions, path) == f"{path}: {expected}"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d["tolerance"].__setitem__("float16", "1e-2"),
            "[tolerance] float16 must be a finite number above 0, not '1e-2'",
        ),
        (
            lambda d: d["tolerance"].__setitem__("fp16", 0.01),
            "[tolerance] has an unknown key 'fp16' (known: float32, float16, bfloat16)",
        ),
        (lambda d: d["tolerance"].pop("float32"), "[tolerance] lacks 'float32'"),
        (
            lambda d: d["tolerance"].__setitem__("float32", 0),
            "[tolerance] float32 must be a finite number above 0, not 0",
        ),
        (
            lambda d: d["levels"].__setitem__("accept_unchecked", "yes"),
            "[levels] accept_unchecked must be true or false, not 'yes'",
        ),
        (
            lambda d: d["levels"].__setitem__("accept_inconclusive", True),
            "[levels] has an unknown key 'accept_inconclusive' (known: accept_unchecked)",
        ),
    ],
)
def test_a_policy_typo_is_one_line(tmp_path, edit, expected):
    path = _edited(ROOT / "inventory" / "policy.toml", tmp_path, edit)
    assert _one_line_error(lambda p: load_policy(None, p), path) == f"{path}: {expected}"


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d["converters"]["0.4.2"].__setitem__("core", 2),
            "[converters.'0.4.2'] core must be a non-empty string, not 2",
        ),
        (
            lambda d: d["converters"].__setitem__("v0.4.4", {"core": "1.0.0b3"}),
            "[converters.'v0.4.4']: a release is digits and dots (e.g. \"0.4.2\"), not 'v0.4.4'",
        ),
        (
            lambda d: d["converters"]["0.4.3"].__setitem__("extras", []),
            "[converters.'0.4.3'] has an unknown key 'extras' (known: core, extra, declares_torch)",
        ),
        (
            lambda d: d["torch"]["checked"]["2.9.0"].__setitem__("converters", ["0.4.9"]),
            "[torch.checked.'2.9.0'] converters must be a list of releases in converters.toml "
            "(0.4.0, 0.4.1, 0.4.2, 0.4.3), not '0.4.9'",
        ),
    ],
)
def test_a_converters_typo_is_one_line(tmp_path, edit, expected):
    path = _edited(CATALOG_FILE, tmp_path, edit)
    assert _one_line_error(load_catalog, path) == f"{path}: {expected}"


def test_the_schema_dtypes_are_the_probe_dtypes_and_the_shipped_files_load():
    assert SCHEMA_DTYPES == PROBE_DTYPES
    assert load_fixes() and load_regimes() and load_conditions() and load_catalog()
    assert set(load_policy().tolerance) == set(PROBE_DTYPES)
    for draft_file in (ROOT / "tests" / "golden" / "drafts").glob("*.toml"):
        assert load_fixes(draft_file)


# ---- fuzzing: a value or the one-line user error, for each file kind -------------------------

_SURROGATES: tuple[Literal["Cs"], ...] = ("Cs",)
_TEXT = st.text(st.characters(blacklist_categories=_SURROGATES), max_size=10)
_SCALARS = (
    st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=True, allow_infinity=True)
    | _TEXT
    | st.dates()
)
_ANY = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


def _maybe(value: st.SearchStrategy) -> st.SearchStrategy:
    """Mostly the right shape, sometimes anything: the checks past the first field run too."""
    return value | _ANY


_RELEASE = _maybe(st.sampled_from(["0.4.1", "0.4.2", "v0.4.2", "0.4.2 ", ""]))
_KIND = _maybe(st.sampled_from(["pad", "batch_norm", "batchnorm", ""]))
_DTYPE = _maybe(st.sampled_from([*PROBE_DTYPES, "fp16", "../x"]))
_FIX = st.fixed_dictionaries(
    {
        "id": _maybe(st.sampled_from(["1", "2", 3, "a b"])),
        "title": _maybe(_TEXT),
        "ships_in": _RELEASE,
    },
    optional={
        "kind": _maybe(st.sampled_from(["lowering", "asset", "pipeline"])),
        "constructs": _maybe(st.lists(_KIND, max_size=2)),
        "aliases": _maybe(st.lists(st.sampled_from(["1", "9", 9]), max_size=2)),
        "upstream": _maybe(_TEXT),
        "checked": _maybe(_TEXT),
    },
)
_FIXES = st.fixed_dictionaries({}, optional={"fix": _maybe(st.lists(_maybe(_FIX), max_size=3))})
_REGIME = st.fixed_dictionaries(
    {"construct": _KIND, "name": _maybe(st.sampled_from(["a", "b"]))},
    optional={
        "dtype": _DTYPE,
        "values": _maybe(st.sampled_from(["trained", "init", "x"])),
        "seed": _maybe(st.integers(-2, 2**33)),
        "control": _maybe(st.booleans()),
        "tolerance": _maybe(st.floats()),
        "params": _maybe(st.dictionaries(_TEXT, _SCALARS, max_size=2)),
        "pipeline": _maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "decompositions": _maybe(st.sampled_from(["coreai", "none", "x"])),
                    "optimize": _maybe(st.booleans()),
                    "shapes": _maybe(st.sampled_from(["static", "dynamic", "x"])),
                },
            )
        ),
    },
)
_REGIMES = st.fixed_dictionaries(
    {}, optional={"regime": _maybe(st.lists(_maybe(_REGIME), max_size=3))}
)
_CONDITION = st.fixed_dictionaries(
    {
        "construct": _KIND,
        "name": _maybe(st.sampled_from(["a", "b"])),
        "when": _maybe(_TEXT),
        "tensor_suffix": _maybe(_TEXT),
    },
    optional={
        "below": _maybe(st.floats()),
        "above": _maybe(st.floats()),
        "params": _maybe(st.dictionaries(_TEXT, _SCALARS, max_size=2)),
    },
)
_CONDITIONS = st.fixed_dictionaries(
    {}, optional={"condition": _maybe(st.lists(_maybe(_CONDITION), max_size=3))}
)
_POLICY = st.fixed_dictionaries(
    {},
    optional={
        "tolerance": _maybe(
            st.dictionaries(
                st.sampled_from([*PROBE_DTYPES, "fp16"]) | _TEXT, _maybe(st.floats()), max_size=4
            )
        )
    },
)
_CONVERTERS = st.fixed_dictionaries(
    {
        "torch": _maybe(
            st.fixed_dictionaries(
                {"version": _maybe(st.just("2.13.0"))}, optional={"checked": _ANY}
            )
        ),
        "converters": _maybe(
            st.dictionaries(
                st.sampled_from(["0.4.1", "0.4.2", "x"]) | _TEXT,
                _maybe(
                    st.fixed_dictionaries(
                        {"core": _maybe(st.just("1.0.0b2"))},
                        optional={"extra": _maybe(st.lists(_TEXT, max_size=2))},
                    )
                ),
                max_size=3,
            )
        ),
    }
)

FUZZ = settings(
    max_examples=150,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


def _loads_or_user_error(load: Callable[[Path], Any], document: dict[str, Any]) -> bool:
    """True when the document loaded; else the error must be a one-line user error."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "input.toml"
        try:
            path.write_text(tomli_w.dumps(document))
        except (TypeError, ValueError):
            return False  # not representable in TOML (e.g. a NaN key): nothing to load
        try:
            load(path)
        except USER_ERRORS as exc:
            message = str(exc)
            assert message.startswith(str(path)) and "\n" not in message, message
            return False
    return True


@FUZZ
@given(_FIXES)
def test_fuzz_the_fixes_loader(document):
    _loads_or_user_error(load_fixes, document)


@FUZZ
@given(_REGIMES)
def test_fuzz_the_regimes_loader(document):
    _loads_or_user_error(load_regimes, document)


@FUZZ
@given(_CONDITIONS)
def test_fuzz_the_conditions_loader(document):
    _loads_or_user_error(load_conditions, document)


@FUZZ
@given(_POLICY)
def test_fuzz_the_policy_loader(document):
    _loads_or_user_error(lambda p: load_policy(None, p), document)


@FUZZ
@given(_CONVERTERS)
def test_fuzz_the_converters_loader(document):
    _loads_or_user_error(load_catalog, document)


@FUZZ
@given(st.binary(max_size=200) | st.text(string.printable, max_size=200).map(str.encode))
def test_fuzz_every_data_file_loader_with_arbitrary_bytes(content):
    for load in (
        load_fixes,
        load_regimes,
        load_conditions,
        load_catalog,
        lambda p: load_policy(None, p),
    ):
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "input.toml"
            path.write_bytes(content)
            try:
                load(path)
            except USER_ERRORS as exc:
                assert "\n" not in str(exc)


def test_the_fuzz_strategies_reach_a_valid_document_of_each_kind():
    """The strategies are not all noise: their right-shaped branch loads."""
    assert _loads_or_user_error(
        load_fixes, {"fix": [{"id": "1", "title": "t", "ships_in": "0.4.2", "constructs": ["pad"]}]}
    )
    assert _loads_or_user_error(load_regimes, {"regime": [{"construct": "pad", "name": "a"}]})
    assert _loads_or_user_error(
        load_conditions,
        {
            "condition": [
                {
                    "construct": "batch_norm",
                    "name": "a",
                    "when": "w",
                    "tensor_suffix": "v",
                    "below": math.pi,
                }
            ]
        },
    )
    assert _loads_or_user_error(lambda p: load_policy(None, p), {"tolerance": {"float32": 1.0}})
    assert _loads_or_user_error(
        load_catalog, {"torch": {"version": "2.13.0"}, "converters": {"0.4.2": {"core": "1.0.0b2"}}}
    )
