"""A recipe builder's source closure (`inventory.trace.closure`): the files of the recipe
repository its module imports, read from the sources (never imported), what a stored
whole-program check of the recipe is keyed by."""

from __future__ import annotations

import pytest
from recipe_repos import split_recipe_repo

from inventory.trace import recipes
from inventory.trace.closure import closure

BUILDER = recipes.Builder(call="trace_target", path="export/export_mine.py")


def test_the_closure_is_the_files_the_builder_imports_and_nothing_else(tmp_path):
    repo, _ = split_recipe_repo(tmp_path)
    found = closure(repo, BUILDER)
    assert found.files == ("export/export_mine.py", "export/layers.py")
    assert not found.widened

    (repo / "README.md").write_text("our recipes, documented\n")
    (repo / "export" / "export_other.py").write_text("import torch  # another model\n")
    assert closure(repo, BUILDER).digest == found.digest

    (repo / "export" / "layers.py").write_text(
        (repo / "export" / "layers.py").read_text().replace("SCALE = 4.0", "SCALE = 8.0")
    )
    assert closure(repo, BUILDER).digest != found.digest


def test_packages_relative_and_conditional_imports_are_followed(tmp_path):
    """A package's `__init__`, a relative import inside it, an import under a `try` or inside
    a function: each file is in the closure, whether or not that branch runs."""
    repo = tmp_path / "repo"
    (repo / "models" / "blocks").mkdir(parents=True)
    (repo / "export").mkdir()
    (repo / "export" / "build.py").write_text(
        "import torch\nfrom models.blocks import conv\n"
        "try:\n    import fast_path\nexcept ImportError:\n    fast_path = None\n"
        "def trace_target():\n    from models import heads\n    return heads\n"
    )
    (repo / "models" / "__init__.py").write_text("")
    (repo / "models" / "heads.py").write_text("from .blocks.conv import Conv\n")
    (repo / "models" / "blocks" / "__init__.py").write_text("from . import norm\n")
    (repo / "models" / "blocks" / "conv.py").write_text("Conv = 1\n")
    (repo / "models" / "blocks" / "norm.py").write_text("Norm = 1\n")
    (repo / "models" / "unused.py").write_text("X = 1\n")
    (repo / "fast_path.py").write_text("Y = 1\n")
    builder = recipes.Builder(call="trace_target", path="export/build.py")
    assert closure(repo, builder).files == (
        "export/build.py",
        "fast_path.py",
        "models/__init__.py",
        "models/blocks/__init__.py",
        "models/blocks/conv.py",
        "models/blocks/norm.py",
        "models/heads.py",
    )


def test_a_module_named_at_run_time_widens_the_closure_to_the_repository(tmp_path):
    repo = tmp_path / "repo"
    (repo / "export").mkdir(parents=True)
    (repo / "export" / "build.py").write_text(
        "import importlib\nBLOCK = importlib.import_module('blocks_' + 'v2')\n"
    )
    (repo / "blocks_v2.py").write_text("X = 1\n")
    (repo / ".hidden").mkdir()
    (repo / ".hidden" / "skip.py").write_text("")
    found = closure(repo, recipes.Builder(call="f", path="export/build.py"))
    assert found.widened == "export/build.py"
    assert found.files == ("blocks_v2.py", "export/build.py")


def test_a_symlink_out_of_the_repository_is_not_followed(tmp_path):
    repo = tmp_path / "repo"
    (repo / "export").mkdir(parents=True)
    outside = tmp_path / "outside.py"
    outside.write_text("X = 1\n")
    (repo / "export" / "build.py").write_text("import outside\n")
    (repo / "export" / "outside.py").symlink_to(outside)
    found = closure(repo, recipes.Builder(call="f", path="export/build.py"))
    assert found.files == ("export/build.py",)


def test_a_closure_past_the_cap_is_one_line(tmp_path, monkeypatch):
    from inventory.trace import closure as closure_module

    repo = tmp_path / "repo"
    (repo / "export").mkdir(parents=True)
    (repo / "export" / "build.py").write_text("import a\nimport b\nexec('import c')\n")
    for name in "abc":
        (repo / "export" / f"{name}.py").write_text("")
    monkeypatch.setattr(closure_module, "MAX_FILES", 2)
    with pytest.raises(recipes.RecipeError, match="more than 2 files"):
        closure(repo, recipes.Builder(call="f", path="export/build.py"))
    (repo / "export" / "build.py").write_text("exec('import c')\n")
    with pytest.raises(recipes.RecipeError, match="more than 2 Python files"):
        closure(repo, recipes.Builder(call="f", path="export/build.py"))
