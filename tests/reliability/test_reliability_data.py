"""Reliability II: bundles and registries are data, and NaN statistics are said plainly.

* `scan` never follows a symlink out of a bundle (or out of the folder it scans), never quotes
  the bytes of a file it cannot parse, and a hostile `metadata.json` (100k-deep nesting, a
  timestamp out of range, NaN, wrong types) is one line for that bundle while the others are
  still reported.
* `trace` imports only the project's own targets and adapters unless `--allow-code`.
* `--weights` with an all-NaN running_var is refused in one line saying so, instead of a pass.

Everything runs through the CLI, as a user runs it. Tests that convert a bundle or need a converter
environment are marked slow.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import pytest
import tomli_w
from bundles import CONVERT, minimal_bundle
from cli import Ran, invoke, one_clean_line, spawn
from recipe_repos import mine_registry, recipe_repo
from registries import EVIL_REGISTRY, evil_registry
from safetensors.numpy import save_file

from oracle.catalog.conditions import Condition, check
from oracle.infra.checkpoint import WeightsError

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cret-0f-the-host"


def run(*args: str, **env: str) -> Ran:
    return invoke(*args, **{"COLUMNS": "200", **env})


def secret_file(tmp_path: Path, suffix: str = ".txt", text: str = SECRET) -> Path:
    """A file outside any bundle, standing for /etc/shadow."""
    path = tmp_path / f"outside{suffix}"
    path.write_text(text)
    return path


# ---- scan: symlinks out of the bundle ----------------------------------------------------------


def test_a_program_symlinked_out_of_the_bundle_is_refused_without_reading_it(tmp_path):
    bundle = minimal_bundle(tmp_path / "m.aimodel")
    (bundle / "main.mlirb").unlink()
    (bundle / "main.mlirb").symlink_to(secret_file(tmp_path))
    proc = run("scan", str(bundle), "-q")
    assert proc.returncode == 2
    line = one_clean_line(proc)
    assert (
        line == f"error: {bundle / 'main.mlirb'}: is a symlink out of the bundle; a bundle "
        f"is read only from its own folder"
    )
    assert SECRET[:4] not in proc.stdout + proc.stderr


def test_metadata_symlinked_out_of_the_bundle_is_not_echoed(tmp_path):
    bundle = minimal_bundle(tmp_path / "m.aimodel")
    (bundle / "metadata.json").unlink()
    (bundle / "metadata.json").symlink_to(
        secret_file(tmp_path, ".json", json.dumps({"producer": SECRET}))
    )
    proc = run("scan", str(bundle), "--json", "-q")
    assert proc.returncode == 2 and SECRET not in proc.stdout + proc.stderr
    (scanned,) = json.loads(proc.stdout)["result"]["bundles"]
    assert scanned["error"].endswith(
        "metadata.json: is a symlink out of the bundle; a bundle is read only from its own folder"
    )
    assert scanned["metadata"] == {}


def test_a_nested_file_or_folder_symlinked_out_of_the_bundle_is_refused(tmp_path):
    bundle = minimal_bundle(tmp_path / "m.aimodel")
    (bundle / "weights").mkdir()
    (bundle / "weights" / "w.bin").symlink_to(secret_file(tmp_path))
    proc = run("scan", str(bundle), "-q")
    assert proc.returncode == 2
    assert f"{bundle / 'weights' / 'w.bin'}: is a symlink out of the bundle" in one_clean_line(proc)
    shutil.rmtree(bundle / "weights")
    (bundle / "weights").symlink_to(tmp_path)  # a folder link: never descended into
    proc = run("scan", str(bundle), "-q")
    assert proc.returncode == 2
    assert f"{bundle / 'weights'}: is a symlink out of the bundle" in one_clean_line(proc)


def test_a_symlink_inside_the_bundle_is_followed(tmp_path):
    bundle = minimal_bundle(tmp_path / "m.aimodel")
    (bundle / "meta-real.json").write_text('{"assetVersion": "2.0", "producer": 7}')
    (bundle / "metadata.json").unlink()
    (bundle / "metadata.json").symlink_to("meta-real.json")
    proc = run("scan", str(bundle), "-q")
    # read through the link (it stays inside): its own content is what is refused
    assert proc.returncode == 2
    assert "metadata.json: producer must be a string, not a number" in one_clean_line(proc)


def test_a_program_that_is_not_bytecode_is_refused_without_quoting_its_bytes(tmp_path):
    bundle = minimal_bundle(tmp_path / "m.aimodel")
    (bundle / "main.mlirb").write_bytes(b"root:$6$salt$hash:19000:0:99999:7:::\n")
    proc = run("scan", str(bundle), "-q")
    assert proc.returncode == 2
    line = one_clean_line(proc)
    assert line.endswith("main.mlirb: not MLIR bytecode (no MLIR bytecode magic number)")
    assert "root" not in line.replace(str(bundle), "")


def test_metadata_that_is_not_utf8_is_refused_without_quoting_its_bytes(tmp_path):
    bundle = minimal_bundle(tmp_path / "m.aimodel")
    (bundle / "metadata.json").write_bytes(b'{"a": "\xff\xfe"}')
    proc = run("scan", str(bundle), "-q")
    assert proc.returncode == 2
    line = one_clean_line(proc)
    assert line.endswith("metadata.json: not UTF-8 text (byte 7): truncated or corrupt")
    assert "0xff" not in line


# ---- scan: hostile metadata.json ---------------------------------------------------------------


@pytest.mark.parametrize(
    "text, says",
    [
        ('{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply to be a bundle's metadata"),
        ('{"a":' * 100 + "1" + "}" * 100, "nested deeper than 64 levels, not a bundle's metadata"),
        (
            '{"assetVersion": "2.0", "creationDate": 1e20}',
            "creationDate 1e+20 is not a date (a timestamp out of range)",
        ),
        ('{"assetVersion": "2.0", "creationDate": -1e300}', "is not a date"),
        ('{"assetVersion": "2.0", "creationDate": NaN}', "not valid JSON (NaN is not JSON)"),
        (
            '{"assetVersion": "2.0", "creationDate": Infinity}',
            "not valid JSON (Infinity is not JSON)",
        ),
        (
            '{"assetVersion": "2.0", "creationDate": true}',
            "creationDate must be a string or a number, not a boolean",
        ),
        ('{"assetVersion": ["2.0"]}', "assetVersion must be a string or a number, not an array"),
        (
            '{"producer": {"name": "coreai-core 1.0.0b2"}}',
            "producer must be a string, not an object",
        ),
        (
            '{"creatorDefinedMetadata": "x"}',
            "creatorDefinedMetadata must be an object, not a string",
        ),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_hostile_metadata_is_one_line_for_that_bundle(tmp_path, text, says):
    bundle = minimal_bundle(tmp_path / "m.aimodel")
    (bundle / "metadata.json").write_text(text)
    proc = run("scan", str(bundle), "-q")
    assert proc.returncode == 2
    assert says in one_clean_line(proc)
    proc = run("scan", str(bundle), "--json", "-q")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    (scanned,) = json.loads(proc.stdout)["result"]["bundles"]
    assert says in scanned["error"]


# ---- scan: one bad bundle never hides the good one beside it (converts a bundle) ---------------


@pytest.fixture(scope="module")
def good_bundle(tmp_path_factory, env) -> Path:
    """A real bundle, converted with coreai-torch 0.4.0 (read by core 1.0.0b1)."""
    root = tmp_path_factory.mktemp("good")
    script = root / "convert.py"
    script.write_text(CONVERT)
    proc = subprocess.run(
        [str(env("0.4.0").python), str(script), str(root), "convbn:convbn:0"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return root / "convbn.aimodel"


@pytest.mark.slow
def test_bad_bundles_beside_a_good_one_are_each_one_line_and_the_good_one_is_read(
    tmp_path, good_bundle, json_schema
):
    folder = tmp_path / "shipped"
    folder.mkdir()
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    secret = secret_file(outside)

    def copy(name: str) -> Path:
        return Path(shutil.copytree(good_bundle, folder / f"{name}.aimodel"))

    copy("good")
    shadow = copy("shadow")
    (shadow / "main.mlirb").unlink()
    (shadow / "main.mlirb").symlink_to(secret)
    meta = copy("meta")
    (meta / "metadata.json").unlink()
    (meta / "metadata.json").symlink_to(
        secret_file(outside, ".json", json.dumps({"producer": SECRET}))
    )
    (copy("deep") / "metadata.json").write_text('{"a":' * 100_000 + "1" + "}" * 100_000)
    (copy("date") / "metadata.json").write_text('{"assetVersion": "2.0", "creationDate": 1e20}')
    linked = Path(shutil.copytree(good_bundle, outside / "linked.aimodel"))
    (folder / "linked.aimodel").symlink_to(linked)

    proc = run("scan", str(folder), "--runtime", "1.0.0b1", "-q")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert SECRET not in proc.stdout + proc.stderr
    errors = sorted(ln for ln in proc.stderr.splitlines() if ln.strip())
    assert errors == [
        f"error: {folder / 'date.aimodel' / 'metadata.json'}: creationDate 1e+20 is not a date "
        f"(a timestamp out of range)",
        f"error: {folder / 'deep.aimodel' / 'metadata.json'}: nested too deeply to be a bundle's "
        f"metadata",
        f"error: {folder / 'linked.aimodel'}: is a symlink out of the scanned folder {folder}; a "
        f"folder's bundles are read only from inside it",
        f"error: {folder / 'meta.aimodel' / 'metadata.json'}: is a symlink out of the bundle; a "
        f"bundle is read only from its own folder",
        f"error: {shadow / 'main.mlirb'}: is a symlink out of the bundle; a bundle is read only "
        f"from its own folder",
    ]
    proc = run("scan", str(folder), "--runtime", "1.0.0b1", "--json", "-q")
    document = json.loads(proc.stdout)
    json_schema(document)
    by_name = {b["name"]: b for b in document["result"]["bundles"]}
    assert sorted(by_name) == [
        "date.aimodel",
        "deep.aimodel",
        "good.aimodel",
        "linked.aimodel",
        "meta.aimodel",
        "shadow.aimodel",
    ]
    good = by_name["good.aimodel"]
    assert good["error"] is None and good["reader"]["core"] == "1.0.0b1"
    assert good["entries"][0]["composites"][0]["kind"] == "batch_norm"
    assert all(b["error"] for n, b in by_name.items() if n != "good.aimodel")


# ---- trace: the registry names code ------------------------------------------------------------


def made_dirs(tmpdir: Path) -> list[str]:
    return sorted(p.name for p in tmpdir.iterdir())


@pytest.mark.parametrize(
    "trace, key",
    [
        ('[bundles.evil.trace]\ntarget = "tempfile:mkdtemp"', "trace"),
        # a recipe-traced bundle: `trace` without --recipe-root runs its stand-in's target
        (
            '[bundles.evil.trace]\norigin = "recipe"\n[bundles.evil.standin]\n'
            'target = "tempfile:mkdtemp"',
            "standin",
        ),
    ],
)
def test_a_target_outside_the_projects_targets_is_refused_and_never_imported(tmp_path, trace, key):
    registry = evil_registry(tmp_path, trace)
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    for names in ([], ["evil"]):  # every traceable bundle, and the bundle named
        # a process of its own: TMPDIR is read once per process (tempfile caches it)
        proc = spawn("trace", *names, "--registry", str(registry), "-q", TMPDIR=str(tmpdir))
        assert proc.returncode == 2
        line = one_clean_line(proc)
        assert line.startswith("error: evil: ")
        assert (
            f"{key}] target 'tempfile:mkdtemp' is not a module of inventory.trace.targets; "
            f"the registry names code, and only the project's own is run without "
            f"--allow-code" in line
        )
        assert made_dirs(tmpdir) == []  # mkdtemp was never called


def test_a_trace_leaves_nothing_in_the_system_temp_directory(tmp_path, env):
    """torch.export's decompositions create the inductor's `torchinductor_<user>` under TMPDIR:
    the processes a trace starts have their TMPDIR and torch's scratch in the store."""
    env("0.4.1")  # the exporter's environment, whose decompositions the trace uses
    repo, commit = recipe_repo(tmp_path)
    registry = tmp_path / "recipes.toml"
    registry.write_text(mine_registry(commit, extra="", pipeline=False))
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = spawn(
        "trace",
        "mine",
        "--recipe-root",
        str(repo),
        "--registry",
        str(registry),
        "-q",
        TMPDIR=str(tmpdir),
    )
    assert proc.returncode == 0, proc.stderr
    assert "batch_norm" in proc.stdout  # traced: the recipe's module was built and exported
    assert made_dirs(tmpdir) == []


def test_a_malformed_target_is_refused_even_with_allow_code(tmp_path):
    registry = evil_registry(tmp_path, '[bundles.evil.trace]\ntarget = "os; rm -rf /:x"')
    proc = run("trace", "evil", "--registry", str(registry), "--allow-code", "-q")
    assert proc.returncode == 2
    assert "target 'os; rm -rf /:x' is not a module:function reference" in one_clean_line(proc)


@pytest.mark.slow
def test_with_allow_code_the_registrys_target_is_imported_and_called(tmp_path, env):
    env("0.4.0")  # the exporter's environment, whose decompositions a trace uses
    registry = evil_registry(tmp_path, '[bundles.evil.trace]\ntarget = "tempfile:mkdtemp"')
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = spawn(
        "trace", "evil", "--registry", str(registry), "--allow-code", "-q", TMPDIR=str(tmpdir)
    )
    # trusted as code: imported and called (mkdtemp returned the path of the folder it made, a
    # str, which is not a trace target: one line, exit 2)
    assert proc.returncode == 2
    assert one_clean_line(proc) == (
        "error: tracing evil failed: AttributeError: 'str' object has no attribute 'module'"
    )
    # its folder lay in the trace's scratch in the store, removed with it
    assert made_dirs(tmpdir) == []


def test_a_recipe_adapter_outside_the_project_is_refused_before_any_bundle_is_traced(tmp_path):
    """Two bundles: the first is fine, the second's adapter names outside code. The refusal comes
    before either is traced, so nothing is half-written."""
    repo = tmp_path / "recipes"
    (repo / "export").mkdir(parents=True)
    (repo / "export" / "m.py").write_text("raise SystemExit('imported')\n")
    builder = '[bundles.{name}.recipe.builder]\npath = "export/m.py"\ncall = "f"\n{extra}'
    text = (
        EVIL_REGISTRY.format(trace=builder.format(name="evil", extra=""))
        + "\n"
        + EVIL_REGISTRY.replace("evil", "worse").format(
            trace=builder.format(name="worse", extra='adapter = "tempfile:mkdtemp"')
        )
    )
    registry = tmp_path / "recipes.toml"
    registry.write_text(text)
    before = registry.read_text()
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    proc = run(
        "trace",
        "--recipe-root",
        str(repo),
        "--registry",
        str(registry),
        "--write",
        "-q",
        TMPDIR=str(tmpdir),
    )
    assert proc.returncode == 2
    assert one_clean_line(proc) == (
        "error: worse: recipe.builder.adapter 'tempfile:mkdtemp' is not a module of "
        "inventory.trace.recipes; the registry names code, and only the project's own is run "
        "without --allow-code"
    )
    assert registry.read_text() == before and made_dirs(tmpdir) == []


def test_a_recipe_requirement_that_is_not_an_index_package_is_refused(tmp_path):
    repo = tmp_path / "recipes"
    (repo / "export").mkdir(parents=True)
    (repo / "export" / "m.py").write_text("raise SystemExit('imported')\n")
    registry = evil_registry(
        tmp_path,
        '[bundles.evil.recipe.builder]\npath = "export/m.py"\n'
        'call = "f"\n[bundles.evil.recipe.environment]\n'
        'requirements = ["torch", "evil @ https://example.org/e.tgz"]',
    )
    proc = run("trace", "evil", "--recipe-root", str(repo), "--registry", str(registry), "-q")
    assert proc.returncode == 2
    line = one_clean_line(proc)
    assert (
        "requirements entry 'evil @ https://example.org/e.tgz' is not a package of the "
        "index (name and version specifiers); a URL, a path or a pip option installs code "
        "from anywhere, refused without --allow-code" in line
    )
    assert "'torch'" not in line  # a plain index package is not what is refused


# ---- --weights: NaN statistics -----------------------------------------------------------------


def one_module_parakeet(tmp_path: Path) -> Path:
    """The shipped registry's parakeet entry with its batch norm instance cut to one module
    (layers.0.conv.norm after layers.0.conv.depthwise_conv): one probe instead of 24."""
    bundle = tomllib.loads((ROOT / "recipes.toml").read_text())["bundles"]["parakeet"]
    (bn,) = [i for i in bundle["instances"] if i["kind"] == "batch_norm"]
    bn.update(modules=bn["modules"][:1], producers=bn["producers"][:1], count=1)
    path = tmp_path / "recipes.toml"
    path.write_text(tomli_w.dumps({"bundles": {"parakeet": bundle}}))
    return path


def parakeet_layer0(path: Path, running_var: np.ndarray) -> Path:
    rng = np.random.default_rng(0)
    c = running_var.size
    save_file(
        {
            "layers.0.conv.norm.running_var": running_var.astype(np.float16),
            "layers.0.conv.norm.running_mean": np.zeros(c, np.float16),
            "layers.0.conv.norm.weight": np.ones(c, np.float16),
            "layers.0.conv.norm.bias": np.zeros(c, np.float16),
            "layers.0.conv.depthwise_conv.weight": (rng.standard_normal((c, 1, 9)) * 0.3).astype(
                np.float16
            ),
        },
        str(path),
    )
    return path


@pytest.mark.slow
def test_an_all_nan_running_var_is_refused_saying_nan_not_measured_as_a_pass(tmp_path, env):
    # Before: both programs output NaN everywhere, as torch does, and the answer was exit 0,
    # "values-identical, re-export optional - outputs bit-identical".
    env("0.4.1"), env("0.4.2")  # the exporter's and the fix's environments
    registry = one_module_parakeet(tmp_path)
    weights = parakeet_layer0(tmp_path / "nan.safetensors", np.full(1024, np.nan))
    args = (
        "affected",
        "--fix",
        "54",
        "--bundle",
        "parakeet",
        "--registry",
        str(registry),
        "--weights",
        f"parakeet={weights}",
    )
    proc = run(*args, "-q")
    assert proc.returncode == 2
    assert one_clean_line(proc) == (
        f"error: {weights}: layers.0.conv.norm.running_var has 1024 NaN of 1024 values; "
        f"parakeet's batch_norm at layers.0.conv.norm then outputs NaN in torch itself, under "
        f"any converter, so there is nothing to measure a conversion against (the checkpoint is "
        f"broken, not its export)"
    )
    proc = run(*args, "--json", "-q")
    assert proc.returncode == 2
    assert "1024 NaN of 1024 values" in json.loads(proc.stdout)["error"]
    # one NaN is enough: its channel is NaN in the reference, which no verdict can be read from
    var = np.ones(1024)
    var[5] = np.nan
    parakeet_layer0(weights, var)
    proc = run(*args, "-q")
    assert proc.returncode == 2 and "has 1 NaN of 1024 values" in one_clean_line(proc)


TINY = Condition(
    "batch_norm",
    "tiny-running-var",
    "a running_var lies below 6.1e-5",
    "running_var",
    below=6.103515625e-05,
)


def test_a_threshold_condition_counts_nan_and_inf_apart(tmp_path):
    """`oracle.catalog.conditions.check` directly: since --weights measures batch norms with their
    own
    tensors, no shipped construct reaches it through the CLI, but a construct with a
    condition and no checkpoint probe would."""
    path = tmp_path / "w.safetensors"
    save_file({"bn.running_var": np.full(64, np.nan, np.float32)}, str(path))
    with pytest.raises(WeightsError) as refused:
        check(TINY, path)
    assert str(refused.value) == (
        f"{path}: running_var has 64 NaN of 64 values; the module then outputs NaN in torch "
        f"itself, so whether a running_var lies below 6.1e-5 cannot be decided (the checkpoint "
        f"is broken, not its export)"
    )
    values = np.ones(64, np.float32)
    values[:2], values[2], values[3] = np.nan, np.inf, 1e-9
    save_file({"bn.running_var": values}, str(path))
    checked = check(TINY, path)  # a real value below the threshold decides, NaN aside
    assert checked.holds
    assert checked.detail == (
        "1 of 64 running_var values in 1 tensors meet it (range 1e-09 .. inf; 2 NaN; 1 inf)"
    )
    save_file({"bn.running_var": np.ones(4, np.float32)}, str(path))
    assert check(TINY, path).detail == (
        "0 of 4 running_var values in 1 tensors meet it (range 1 .. 1)"
    )
