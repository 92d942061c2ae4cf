"""A user's own bundle, end to end, as docs/registry.md's "Adding your own bundle" says it: its
registry entry and its commands, run as written on a recipe repository of the test's own
(tests/inventory/trace/test_recipe_root.py's recipe), with no project code for the bundle.
trace, plan, verify (a miniature stated as the builder's kwargs, a run form stated as inputs),
plan joining the stored check, --weights; and the miniature held to the distinct-instance rule
the shipped ones follow (tests/inventory/verify/test_verify_forms.py)."""

from __future__ import annotations

import json
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

import pytest
from cli import Ran, invoke, one_line
from recipe_repos import mlp_registry, recipe_repo

from inventory.errors import exit_for_reexport
from inventory.registry import load_registry
from inventory.verdict import worst
from inventory.verify.forms import distinct
from oracle.infra.paths import envs_dir

ROOT = Path(__file__).resolve().parents[3]
LEVELS = ("required", "inconclusive", "unchecked", "optional", "not_affected")


def _section() -> str:
    text = (ROOT / "docs" / "registry.md").read_text()
    start = text.index("## Adding your own bundle")
    return text[start : text.index("\n## ", start + 1)]


def _blocks(language: str) -> list[str]:
    return [
        body
        for lang, body in re.findall(r"```(\w*)\n(.*?)```", _section(), re.S)
        if lang == language
    ]


def _commands() -> list[list[str]]:
    [block] = _blocks("")
    return [shlex.split(line)[1:] for line in block.splitlines() if line.startswith("inventory ")]


@pytest.fixture(scope="module")
def own(tmp_path_factory, converter_envs) -> dict[str, Any]:
    """The page's registry entry (its commit the repository's), the recipe repository, a
    checkpoint for --weights, and a result store of the test's own."""
    tmp = tmp_path_factory.mktemp("own-bundle")
    repo, commit = recipe_repo(tmp)
    [entry] = _blocks("toml")
    registry = tmp / "recipes.toml"
    registry.write_text(entry.replace('commit = "..."', f'commit = "{commit}"'))
    cache = tmp / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    own = {
        "repo": repo,
        "commit": commit,
        "registry": registry,
        "tmp": tmp,
        "env": {"INVENTORY_CACHE": str(cache)},
    }
    trace, *_ = _commands()
    own["traced"] = _run(own, trace)  # the paragraph's first command, once for every test
    return own


def _run(own: dict[str, Any], args: list[str]) -> Ran:
    """One command of the page: its paths the test's, on the test's registry and store."""
    args = [str(own["repo"]) if a == "~/src/my-recipes" else a for a in args]
    args = [a.replace("mine.safetensors", str(own["tmp"] / "mine.safetensors")) for a in args]
    extra = [] if args[0] == "trace" else ["--json"]
    proc = invoke(*args, "--registry", str(own["registry"]), *extra, "-q", **own["env"])
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc


def _item(bundle: dict[str, Any], fix: str) -> tuple[str, dict[str, Any]]:
    [(level, item)] = [(lv, i) for lv in LEVELS for i in bundle[lv] if i["fix"] == fix]
    return level, item


def test_the_page_runs_as_written(own, json_schema):
    _trace, plan, verify, joined, weights = _commands()

    proc = own["traced"]
    assert proc.returncode == 0, proc.stderr
    entry = tomllib.loads(own["registry"].read_text())["bundles"]["mine"]
    assert {i["kind"] for i in entry["instances"]} == {"batch_norm", "softmax", "true_divide"}
    # the trace records the op census coverage is counted over: every operator of the program
    census = entry["trace"]["facts"]["ops"]
    assert "aten.convolution.default" in census and "aten._softmax.default" in census
    assert 0 < sum(census.values()) <= entry["trace"]["facts"]["aten_ops"]

    proc = _run(own, plan)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    json_schema(data)
    [b] = data["result"]["bundles"]
    assert b["verify"] is None  # nothing stored yet, and no checkout named to build it from
    level, item = _item(b, "54")
    assert (level, item["verdict"]) == ("optional", "values-move")
    # what the plan rests on, op by op: the batch norm, the depthwise conv before it (the
    # batch-norm probe's own graph holds it), the division and the softmax probed (ops read from
    # the probes' own exported graphs): every op of it, nothing left for a whole-program check
    cover = b["coverage"]
    classes = cover["classes"]
    assert cover["counted"] and cover["ops"] == sum(census.values())
    assert {k: n for c in classes.values() for k, n in c.items()} == census
    assert {
        "aten._native_batch_norm_legit_no_training.default",
        "aten.convolution.default",
        "aten.div.Tensor",
        "aten._softmax.default",
    } <= set(classes["probed"])
    assert classes["probed"] == census and classes["not covered"] == {}
    assert classes["whole-program"] == {} and cover["complete"] is True
    assert cover["command"] == "inventory verify mine --to 0.4.2"

    proc = _run(own, verify)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    json_schema(data)
    [v] = data["result"]["bundles"]
    form = v["form"]
    assert form["form"] == "miniature" and form["build"] == {
        "channels": 8,
        "length": 32,
        "blocks": 1,
    }
    assert form["target"] == "export/export_mine.py:trace_target" and not form["standin"]
    assert form["recipe"]["commit"] == own["commit"] and form["recipe"]["adapter"] is None
    assert any("the module is the recipe's own" in n for n in v["notes"])
    assert v["status"] == "consistent" and v["cached"] is False
    [region] = v["regions"]
    assert region["step"] == "0.4.1->0.4.2" and region["explained_by"] == ["54"]
    assert region["modules"] == ["blocks.0.norm"]  # one block: the miniature's
    [step] = v["steps"]
    assert step["drift_source"] == "model-level run" and step["reexport"] == "optional"
    run = v["run"]
    assert run["form"]["form"] == "reduced" and run["ok"]
    assert run["form"]["recipe"]["inputs"]["x"]["shape"] == [1, 8, 16]

    # plan reads the stored check with the checkout named, and joins it: #54's item takes the
    # level of the step whose region it explains
    proc = _run(own, joined)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    json_schema(data)
    [b] = data["result"]["bundles"]
    again = json.loads(_run(own, verify).stdout)["result"]["bundles"][0]
    assert b["verify"] == again and again["cached"] is True
    level, item = _item(b, "54")
    assert (level, item["verdict"]) == (step["reexport"], step["verdict"])
    assert item["reason"].startswith(
        "the whole miniature program in 0.4.1->0.4.2 (model-level run)"
    )
    [part] = item["whole_program"]
    assert part["rule"] == "construct batch_norm"
    # the stored check holds every step of the plan; the probes had covered every op already
    cover = b["coverage"]
    assert cover["complete"] and cover["checked_whole"] and cover["classes"]["not covered"] == {}
    assert cover["classes"]["probed"] == census and cover["classes"]["whole-program"] == {}

    checkpoint(own)
    proc = _run(own, weights)
    assert proc.returncode == 0, proc.stderr
    [w] = json.loads(proc.stdout)["result"]["bundles"]
    assert w["cached"] is False and w["build"]["weights"]["loaded"] == 5  # blocks.0's tensors
    assert w["build"]["evidence"] != v["build"]["evidence"]


def checkpoint(own: dict[str, Any]) -> None:
    """The miniature's tensors by name (one block), as a trained checkpoint holds them."""
    import torch
    from safetensors.torch import save_file

    gen = torch.Generator().manual_seed(3)
    tensors = {
        "blocks.0.dw.weight": torch.randn(8, 1, 5, generator=gen) * 0.4,
        "blocks.0.norm.weight": 1 + 0.1 * torch.randn(8, generator=gen),
        "blocks.0.norm.bias": 0.1 * torch.randn(8, generator=gen),
        "blocks.0.norm.running_mean": 0.5 * torch.randn(8, generator=gen),
        "blocks.0.norm.running_var": torch.rand(8, generator=gen) + 0.2,
    }
    save_file({k: v.half() for k, v in tensors.items()}, str(own["tmp"] / "mine.safetensors"))


def test_without_the_checkout_verify_says_it_needs_one(own):
    proc = invoke(
        "verify", "mine", "--to", "0.4.2", "--registry", str(own["registry"]), "-q", **own["env"]
    )
    assert proc.returncode == 2
    line = one_line(proc)
    assert "has no project target to build whole" in line and "--recipe-root" in line


def test_the_miniature_keeps_every_distinct_instance_of_the_recipes_module(own, catalog):
    """The rule of tests/inventory/verify/test_verify_forms.py, for a miniature stated as the
    builder's kwargs: traced at those kwargs, the recipe's module gives the full module's distinct
    instances; and the rule can fail (no block at all loses them)."""
    from inventory.trace.service import trace_recipe

    [bundle] = [b for b in load_registry(own["registry"]) if b.name == "mine"]
    kwargs = bundle.verify["kwargs"]
    full = distinct(trace_recipe(bundle, own["repo"], catalog).instances)
    mini = distinct(trace_recipe(bundle, own["repo"], catalog, build=kwargs).instances)
    assert full and mini == full
    none = distinct(trace_recipe(bundle, own["repo"], catalog, build={"blocks": 0}).instances)
    assert none < full


def test_a_pipeline_record_is_answered_on_the_recipes_own_program(own, json_schema):
    """`affected --verify --recipe-root`: core-b3 (0.4.3) on the recipe's own module, the check
    `verify mine --to 0.4.3` is (the miniature, built from the checkout)."""
    proc = _run(
        own,
        [
            "affected",
            "--fix",
            "core-b3",
            "--bundle",
            "mine",
            "--verify",
            "--recipe-root",
            "~/src/my-recipes",
        ],
    )
    assert proc.returncode in (0, 1), proc.stderr
    data = json.loads(proc.stdout)
    json_schema(data)
    [b] = data["result"]["bundles"]
    assert b["whole_program"] is not None and b["not_checked"] is None
    assert b["whole_program"]["to"] == "0.4.3" and b["whole_program"]["step"] == "0.4.2->0.4.3"
    assert b["whole_program"]["form"]["recipe"]["commit"] == own["commit"]


def test_verify_auto_checks_whole_only_the_incomplete_bundles(own, json_schema):
    """`--verify auto` measures the whole-program check of exactly the bundles whose coverage is
    incomplete or whose answer would be `unchecked`, where they can be built, and answers them
    from it. Beside mine (every op of it probed; checked whole first too), the repository's
    plain MLP (an RNN-T joint network, linear, tanh, linear: its linears are probed as matmuls,
    its tanh by no probe, so a "no" rests on its whole program), registered by its builder as
    mlp (exported with 0.4.1) and mlp_b1 (0.4.0, for core-b2's step). Builds are counted in the
    store: a check measured is one build folder of its bundle."""
    registry = own["tmp"] / "auto.toml"
    registry.write_text(
        own["registry"].read_text()
        + mlp_registry(own["commit"])
        + mlp_registry(own["commit"], "mlp_b1", "0.4.0", "1.0.0b1")
    )
    repo = str(own["repo"])
    results = own["tmp"] / "cache" / "results"

    def run(*args: str) -> Any:
        proc = invoke(*args, "--registry", str(registry), "-q", "--json", **own["env"])
        assert "Traceback" not in proc.stderr, proc.stderr
        data = json.loads(proc.stdout)
        json_schema(data)
        return proc.returncode, data, {b["bundle"]: b for b in data["result"]["bundles"]}

    def builds(name: str) -> int:
        return len(list(results.glob(f"verify-build-{name}-*")))

    for name in ("mlp", "mlp_b1"):
        proc = invoke("trace", name, "--recipe-root", repo, "--write", "--registry", str(registry))
        assert proc.returncode == 0, proc.stderr
    # mine's check, as the page's verify stores it (read back if that test ran first)
    code, _data, _by = run("verify", "mine", "--to", "0.4.2", "--recipe-root", repo)
    assert code == 0
    mine_builds = builds("mine")

    # without a checkout, the MLP cannot be built: it stays unchecked, and one line says why;
    # mine needs no check (its probes cover every op of it), so no line names it
    plan = ("plan", "--to", "0.4.2", "--bundle", "mine", "--bundle", "mlp", "--verify", "auto")
    code, data, by = run(*plan)
    assert by["mlp"]["reexport"] == "unchecked" and not by["mlp"]["coverage"]["complete"]
    assert by["mlp"]["verify"] is None and code == 5
    assert by["mine"]["coverage"]["complete"] and by["mine"]["verify"] is None
    lines = sorted(w for w in data["warnings"] if "--verify auto" in w)
    assert [w.split(":")[0] for w in lines] == ["mlp"]
    assert all("not checked whole" in w and "--recipe-root" in w for w in lines)
    mine_level = by["mine"]["reexport"]
    assert mine_level == "optional"  # #54 moves its values
    assert builds("mlp") == 0 and builds("mine") == mine_builds

    # with it, only the MLP is checked whole (mine's probes cover every op of it; its stored
    # check is read and joined), and the MLP's level is what its whole program measures
    code, data, by = run(*plan, "--recipe-root", repo)
    check = by["mlp"]["verify"]
    assert check is not None and check["cached"] is False and check["error"] is None
    [step] = check["steps"]
    assert step["step"] == "0.4.1->0.4.2"
    assert by["mlp"]["reexport"] == step["reexport"] != "unchecked"
    cover = by["mlp"]["coverage"]
    assert cover["complete"] and cover["classes"]["not covered"] == {}
    census = tomllib.loads(registry.read_text())["bundles"]["mlp"]["trace"]["facts"]["ops"]
    # its linears are probed (the matmul kind), its tanh rests on the whole program alone
    assert {"aten.addmm.default", "aten.permute.default"} <= set(cover["classes"]["probed"])
    assert cover["classes"]["whole-program"] == {"aten.tanh.default": census["aten.tanh.default"]}
    assert by["mine"]["reexport"] == mine_level and by["mine"]["coverage"]["complete"]
    assert by["mine"]["verify"]["cached"] is True
    assert not [w for w in data["warnings"] if "--verify auto" in w]
    assert code == exit_for_reexport(worst(b["reexport"] for b in by.values()))
    assert builds("mlp") == 1 and builds("mine") == mine_builds

    # affected: core-b2's step on mlp_b1, the only bundle it reaches (the others hold the pin)
    fix = ("affected", "--fix", "core-b2", "--verify", "auto")
    code, _data, by = run(*fix)
    assert by["mlp_b1"]["reexport"] == "unchecked" and code == 5
    assert by["mlp_b1"]["reason"].startswith(
        "answered by the asset probe alone, not on mlp_b1's own program (--verify auto could "
        "not check it: no whole-bundle form"
    )
    assert builds("mlp_b1") == 0
    code, _data, by = run(*fix, "--recipe-root", repo)
    whole = by["mlp_b1"]["whole_program"]
    assert whole is not None and whole["to"] == "0.4.1" and whole["step"] == "0.4.0->0.4.1"
    assert by["mlp_b1"]["coverage"]["complete"] and by["mlp_b1"]["not_checked"] is None
    assert {by["mine"]["reexport"], by["mlp"]["reexport"]} == {"no"}
    assert code == exit_for_reexport(worst(b["reexport"] for b in by.values()))
    assert builds("mlp_b1") == 1 and builds("mlp") == 1 and builds("mine") == mine_builds
    # stored as verify stores it: verify reads it back, and its step's level is the answer's
    _code, _data, by_verify = run("verify", "mlp_b1", "--to", "0.4.1", "--recipe-root", repo)
    stored = by_verify["mlp_b1"]
    assert stored["cached"] is True and builds("mlp_b1") == 1
    [step] = stored["steps"]
    assert step["step"] == "0.4.0->0.4.1"
    assert by["mlp_b1"]["reexport"] == step["reexport"] != "unchecked"
