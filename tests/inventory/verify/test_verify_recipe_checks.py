"""A stored whole-program check of a recipe's own module is keyed by what determines it: the
builder's source closure in the recipe repository (the files it imports and their contents),
its arguments and export steps, not the repository's HEAD. One unrelated commit must not cost a
rebuild (it cost 264 s on a user's bundle); a change to an imported file must. A check stored
under the earlier key (the checkout's commit) is read, not measured again. And a miniature is
held to the full module's distinct instances, as the registry's recipe trace recorded them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cli import invoke, spawn
from recipe_repos import LAYERS, commit_all, mine_registry, split_recipe_repo

from inventory.verify import parts
from oracle.infra.paths import envs_dir

# its miniature: the builder's kwargs the test gives
VERIFY = """
[bundles.mine.verify]
form = "miniature"
why = "one of the two blocks: each holds the same instances"
kwargs = {{ {miniature} }}
"""


def _traced(tmp_path: Path, miniature: str) -> dict[str, Any]:
    """The split recipe traced into a registry of the test's own (its miniature the builder's
    kwargs `miniature`), with a cache whose environments are the suite's and a store of the
    test's own."""
    repo, commit = split_recipe_repo(tmp_path)
    registry = tmp_path / "recipes.toml"
    registry.write_text(mine_registry(commit, extra=VERIFY.format(miniature=miniature)))
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    env = {"INVENTORY_CACHE": str(cache), "INVENTORY_STORE": str(tmp_path / "store")}
    traced = invoke(
        "trace", "mine", "--recipe-root", str(repo), "--registry", str(registry), "--write",
        "-q", **env,
    )  # fmt: skip
    assert traced.returncode == 0, traced.stderr
    return {"repo": repo, "registry": registry, "env": env}


@pytest.fixture
def split(tmp_path, converter_envs) -> dict[str, Any]:
    return _traced(tmp_path, "blocks = 1")


def _json(split: dict[str, Any], *args: str, exits: tuple[int, ...] = (0, 1)) -> dict[str, Any]:
    """One command in a process of its own, as a user runs each: nothing read in an earlier
    command's process (a checkout's commit, a chain read back) is at hand."""
    proc = spawn(
        *args, "--recipe-root", str(split["repo"]), "--registry", str(split["registry"]),
        "--json", "-q", **split["env"],
    )  # fmt: skip
    assert proc.returncode in exits, proc.stderr
    [bundle] = json.loads(proc.stdout)["result"]["bundles"]
    return bundle


def _verify(split: dict[str, Any]) -> dict[str, Any]:
    return _json(split, "verify", "mine", "--to", "0.4.2")


def _plan(split: dict[str, Any]) -> dict[str, Any]:
    return _json(split, "plan", "--to", "0.4.2", "--bundle", "mine")


def test_an_unrelated_commit_keeps_the_stored_check_and_an_imported_files_change_does_not(split):
    repo = split["repo"]
    measured = _verify(split)
    assert measured["cached"] is False and not measured.get("error"), measured.get("error")
    assert _plan(split)["verify"] == _verify(split)

    # a commit that touches no file the builder imports: the check is joined as stored
    (repo / "README.md").write_text("our recipes, now documented\n")
    (repo / "export" / "export_other.py").write_text("import torch  # another model\n")
    commit_all(repo, "docs and another model")
    joined = _plan(split)["verify"]
    assert joined is not None and joined["cached"] is True
    assert joined["build"]["evidence"] == measured["build"]["evidence"]

    # a change to the module the builder imports (not the builder's own file): not joined
    (repo / "export" / "layers.py").write_text(LAYERS.format(scale=8.0))
    commit_all(repo, "scale 8")
    assert _plan(split)["verify"] is None


def test_a_check_stored_under_the_commit_key_is_read_not_measured_again(split, monkeypatch):
    """What an earlier version stored (its build keyed by the checkout's commit and the recipe
    file's digest, `parts.legacy_build_folder`) is joined by plan and read back by verify."""

    def by_commit(bundle, form, weights, reference, recipe_root=None):  # the earlier key
        legacy = parts.legacy_build_folder(bundle, form, weights, reference)
        assert legacy is not None
        return legacy

    with monkeypatch.context() as m:
        m.setattr(parts, "build_folder", by_commit)
        proc = invoke(
            "verify", "mine", "--to", "0.4.2", "--recipe-root", str(split["repo"]),
            "--registry", str(split["registry"]), "--json", "-q", **split["env"],
        )  # fmt: skip
        assert proc.returncode in (0, 1), proc.stderr
        [stored] = json.loads(proc.stdout)["result"]["bundles"]
    assert stored["cached"] is False and not stored.get("error"), stored.get("error")
    build = Path(stored["build"]["evidence"])
    joined = _plan(split)["verify"]
    assert joined is not None and joined["build"]["evidence"] == str(build)
    again = _verify(split)
    assert again["cached"] is True and again["build"]["evidence"] == str(build)


def test_a_miniature_whose_instances_are_not_the_full_modules_is_refused_naming_one(
    tmp_path, converter_envs
):
    """A miniature of half the channels changes every instance's parameters: the check says
    which instance of the full module's trace the miniature lacks, and converts nothing."""
    split = _traced(tmp_path, "blocks = 1, channels = 4")
    proc = invoke(
        "verify", "mine", "--to", "0.4.2", "--recipe-root", str(split["repo"]),
        "--registry", str(split["registry"]), "--json", "-q", **split["env"],
    )  # fmt: skip
    assert proc.returncode == 3, proc.stderr
    [bundle] = json.loads(proc.stdout)["result"]["bundles"]
    error = bundle["error"]
    assert "the miniature (blocks=1, channels=4, length=32) does not hold" in error
    assert 'it lacks {"dtype": "float16", "kind": "batch_norm"' in error
    assert '"channels": 8' in error.split("lacks", 1)[1]
    assert not bundle["sides"] and not bundle["steps"]

    # the miniature the registry states when it keeps them: the same check goes on
    registry = split["registry"].read_text().replace("channels = 4 }", "}")
    split["registry"].write_text(registry.replace("blocks = 1, ", "blocks = 1 "))
    kept = _json(split, "verify", "mine", "--to", "0.4.2")
    assert not kept.get("error") and kept["steps"], kept.get("error")
