"""`inventory trace NAME --recipe-root PATH`: a user's own bundle, traced from their recipe
repository with no tool code, and the registry's builder refused where it names code it may not.

The recipe repository is made here: a git repository holding one export script, whose builder
function follows the registry's contract (returns the module and its example inputs).
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from cli import Ran, invoke, one_line
from recipe_repos import RECIPE, git, mine_registry, recipe_repo

from inventory.trace import recipes

ROOT = Path(__file__).resolve().parents[3]


def run(*args: str) -> Ran:
    return invoke(*args)


def registry(
    tmp_path: Path, commit: str, path: str = "export/export_mine.py", extra: str = ""
) -> Path:
    reg = tmp_path / "recipes.toml"
    reg.write_text(mine_registry(commit, path, extra + "\n"))
    return reg


def test_a_users_bundle_is_traced_from_their_repository_and_recorded_with_provenance(
    tmp_path, converter_envs
):
    repo, commit = recipe_repo(tmp_path)
    reg = registry(tmp_path, commit)
    proc = run("trace", "mine", "--recipe-root", str(repo), "--registry", str(reg), "--write", "-q")
    assert proc.returncode == 0, proc.stderr
    assert f"recipe example/my-recipes {commit[:12]} (git rev-parse HEAD)" in proc.stdout
    bundle = tomllib.loads(reg.read_text())["bundles"]["mine"]
    trace = bundle["trace"]
    assert trace["origin"] == "recipe" and trace["export"] == {"grad": "no_grad"}
    assert trace["provenance"] == {
        "repository": "example/my-recipes",
        "commit": commit,
        "commit_source": "git rev-parse HEAD",
        "file": "export/export_mine.py",
        "builder": "export/export_mine.py: trace_target(channels=8, length=32)",
    }
    assert trace["decompositions"] == "coreai_torch 0.4.1 get_decomp_table()"
    assert trace["facts"]["softmax"] == {"float16": 2}
    kinds = {i["kind"]: i for i in bundle["instances"]}
    assert sorted(kinds) == ["batch_norm", "softmax", "true_divide"]
    norm = kinds["batch_norm"]
    assert norm["count"] == 2 and norm["modules"] == ["blocks.0.norm", "blocks.1.norm"]
    assert norm["producers"] == ["blocks.0.dw", "blocks.1.dw"]
    assert norm["params"]["depthwise_kernel"] == 5 and norm["params"]["channels"] == 8
    assert kinds["true_divide"]["params"]["divisor"] == 4.0

    proc = run("trace", "mine", "--recipe-root", str(repo), "--registry", str(reg), "--check", "-q")
    assert proc.returncode == 0 and "registry instances match a fresh trace" in proc.stdout

    # The recipe changes upstream: the recorded trace is stale, and says how and from which commit.
    (repo / "export" / "export_mine.py").write_text(RECIPE.format(scale=8.0))
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "scale 8")
    proc = run("trace", "mine", "--recipe-root", str(repo), "--registry", str(reg), "--check", "-q")
    assert proc.returncode == 1
    assert "stale: mine: recorded but not traced" in proc.stderr and '"divisor": 4.0' in proc.stderr
    assert f"recorded from recipe commit {commit[:12]}" in proc.stderr
    assert "warning: mine: the registry names recipe commit" in proc.stderr


@pytest.mark.parametrize(
    "path, extra, says",
    [
        ("../outside.py", "", "leaves the recipe root"),
        ("/etc/passwd", "", "must be a path relative to the recipe root"),
        ("export/missing.py", "", "is not in"),
        (
            "export/export_mine.py",
            'adapter = "os:system"',
            "is not a module of inventory.trace.recipes",
        ),
        (
            "export/export_mine.py",
            'cannot_trace_offline = "its weights come from a gated hub repo"',
            "the recipe cannot be traced offline: its weights come from a gated hub repo",
        ),
    ],
)
def test_a_builder_the_registry_may_not_run_is_refused_in_one_line(tmp_path, path, extra, says):
    repo, commit = recipe_repo(tmp_path)
    (tmp_path / "outside.py").write_text("raise SystemExit('imported')\n")
    reg = registry(tmp_path, commit, path, extra)
    proc = run("trace", "mine", "--recipe-root", str(repo), "--registry", str(reg), "-q")
    assert proc.returncode == 2 and says in one_line(proc)


def test_a_builder_that_breaks_the_contract_is_one_line(tmp_path, converter_envs):
    repo, commit = recipe_repo(tmp_path)
    script = repo / "export" / "export_mine.py"
    script.write_text(script.read_text() + "\n\ndef wrong(channels, length):\n    return 3\n")
    reg = registry(tmp_path, commit)
    reg.write_text(reg.read_text().replace('call = "trace_target"', 'call = "wrong"'))
    proc = run("trace", "mine", "--recipe-root", str(repo), "--registry", str(reg), "-q")
    assert proc.returncode == 2
    assert "must return (module, inputs)" in one_line(proc)


def test_the_commit_comes_from_git_else_from_a_commit_file(tmp_path):
    repo, commit = recipe_repo(tmp_path)
    assert recipes.checkout(repo) == recipes.Checkout(commit, "git rev-parse HEAD")
    (repo / "export" / "export_mine.py").write_text("changed\n")
    assert recipes.checkout(repo).modified is True
    archive = tmp_path / "archive"  # a `git archive` of a fetched mirror: no .git
    archive.mkdir()
    assert recipes.checkout(archive).commit == "unknown"
    (archive / ".commit").write_text(f"{commit}\n")
    assert recipes.checkout(archive) == recipes.Checkout(commit, "the checkout's .commit file")
    sub = repo / "export"  # a folder inside a work tree is not the checkout's root
    assert recipes.checkout(sub).commit == "unknown"


USERS_REGISTRY = """\
# Our shipped models. Owned by the on-device team; ask in #ml-release before editing.

[bundles.mine]  # the encoder of release 7
files = ["mine_float16.aimodel"]
dtype = "float16"
exporter = {{ converter = "0.4.1", core = "1.0.0b2", source = "our release notes" }}
pipeline = {{ grad = "no_grad" }}

# what we traced by hand last year (stale: the trace replaces it)
[[bundles.mine.instances]]
kind = "batch_norm"
count = 1
dtype = "float16"
source = "by hand"
params = {{ channels = 4 }}

[bundles.mine.recipe]
repository = "example/my-recipes"
commit = "{commit}"  # the commit we exported from

[bundles.mine.recipe.builder]
path = "export/export_mine.py"
call = "trace_target"
kwargs = {{ channels = 8, length = 32 }}

# a miniature of the two blocks
[bundles.mine.verify]
form = "miniature"
why = "one of the two blocks: each holds the same instances"
kwargs = {{ blocks = 1 }}
"""


def test_trace_write_edits_a_users_registry_in_place(tmp_path, converter_envs):
    """The header, comments, order and inline tables of a user's registry stay as written:
    `trace --write` changes the instances and adds the trace table, nothing else."""
    repo, commit = recipe_repo(tmp_path)
    reg = tmp_path / "recipes.toml"
    before = USERS_REGISTRY.format(commit=commit)
    reg.write_text(before)
    proc = run("trace", "mine", "--recipe-root", str(repo), "--registry", str(reg), "--write", "-q")
    assert proc.returncode == 0, proc.stderr
    after = reg.read_text()
    old, new = tomllib.loads(before)["bundles"]["mine"], tomllib.loads(after)["bundles"]["mine"]
    assert {k: v for k, v in new.items() if k not in ("instances", "trace")} == {
        k: v for k, v in old.items() if k != "instances"
    }
    assert sorted(i["kind"] for i in new["instances"]) == ["batch_norm", "softmax", "true_divide"]
    assert new["trace"]["origin"] == "recipe"
    # every line but the stale instance's own is still there, in its order, as written
    stale = ('kind = "batch_norm"', "count = 1", 'source = "by hand"', "params = { channels = 4 }")
    kept = [ln for ln in before.splitlines() if ln not in stale and not ln.startswith("dtype")]
    lines = iter(after.splitlines())
    assert all(any(line == ln for ln in lines) for line in kept), after
    assert after.startswith("# Our shipped models.")
    assert "kwargs = { channels = 8, length = 32 }" in after
    assert 'commit = "' + commit + '"  # the commit we exported from' in after
    # the instances' parameters are written inline, as the registry wrote them
    assert "params = {" in after and "[bundles.mine.instances.params]" not in after
