"""`inventory bisect` and `inventory envs build --from-source`: end to end on a small git
repository the test builds from two releases' published sources (CI has no network, so not the
upstream history), and the git reading and bad input without any environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli import invoke
from gitrepos import (
    PYPROJECT,
    max_pool2d_history,
)
from gitrepos import commit as _commit
from gitrepos import git as _git
from gitrepos import init as _init
from gitrepos import package_of as _package
from gitrepos import put as _put
from gitrepos import set_version as _set_version

from inventory.gitrepo import Repo, pr_of
from oracle.catalog.releases import load_catalog
from oracle.infra.paths import envs_dir


def test_pr_of_reads_squash_and_merge_messages():
    assert pr_of("Fix conv transpose lowering (#40)") == "40"
    assert pr_of("Merge pull request #12 from someone/branch\n\nci: workflow") == "12"
    assert pr_of("Sign the release tag") is None
    assert pr_of("Mention (#3) in the middle of a subject") is None


def test_release_commit_by_tag_else_by_version_bump(tmp_path):
    repo = tmp_path / "r"
    _init(repo)
    (repo / "coreai_torch").mkdir()
    _set_version(repo, "0.4.1")
    first = _commit(repo, "release (#1)")
    _git(repo, "tag", "v0.4.1")
    (repo / "README.md").write_text("docs\n")
    middle = _commit(repo, "docs (#2)")
    _set_version(repo, "0.4.2")
    bump = _commit(repo, "bump (#3)")
    r = Repo(repo)
    assert r.release_commit("0.4.1")[0].sha == first
    found, how = r.release_commit("0.4.2")
    assert (found.sha, found.pr) == (bump, "3") and "version bump" in how
    line = r.first_parent(r.commit(first), found)
    assert [c.sha for c in line] == [middle, bump]


def test_a_repository_is_named_by_its_origin_never_by_its_path(tmp_path):
    repo = tmp_path / "clone"
    _init(repo)
    assert Repo(repo).name == "clone"  # no remote: the folder's name
    for url in (
        "https://github.com/apple/coreai-torch.git",
        "git@github.com:apple/coreai-torch",
        "https://github.com/apple/coreai-torch/",
    ):
        if "origin" in _git(repo, "remote"):
            _git(repo, "remote", "remove", "origin")
        _git(repo, "remote", "add", "origin", url)
        assert Repo(repo).name == "apple/coreai-torch", url


@pytest.mark.parametrize(
    "case", ["not-a-repo", "no-such-dir", "release-not-in-repo", "unknown-release", "backwards"]
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, case):
    repo = tmp_path / "r"
    _init(repo)
    (repo / "coreai_torch").mkdir()
    _set_version(repo, "0.4.1")
    _commit(repo, "release")
    _git(repo, "tag", "v0.4.1")
    args = {
        "not-a-repo": ("0.4.1", "0.4.2", tmp_path),
        "no-such-dir": ("0.4.1", "0.4.2", tmp_path / "nope"),
        "release-not-in-repo": ("0.4.1", "0.4.2", repo),
        "unknown-release": ("0.4.1", "9.9.9", repo),
        "backwards": ("0.4.2", "0.4.1", repo),
    }[case]
    ran = invoke(
        "bisect", "--from", args[0], "--to", args[1], "--repo", str(args[2]), "-q", "--allow-code"
    )
    assert ran.returncode == 2, ran.stderr
    lines = [ln for ln in ran.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), ran.stderr
    assert "Traceback" not in ran.stderr


def test_envs_build_from_source_refuses_what_is_not_a_tree(tmp_path):
    ran = invoke("envs", "build", "--from-source", str(tmp_path))
    assert ran.returncode == 2 and "not a coreai-torch source tree" in ran.stderr


def test_bisect_names_the_commit_that_changes_a_probe(env, tmp_path, json_schema):
    """0.4.1's published sources, a docs-only commit, 0.4.2's sources still saying 0.4.1 (the
    fix merged before the release), then the version bump (no tag: found by the bump). The
    max_pool2d default-stride probe changes between the releases; bisection must name the fix
    commit, not the docs commit before it nor the bump after it, and must not bisect the
    explicit-stride probe, which does not change."""
    old, new = env("0.4.1"), env("0.4.2")
    repo = tmp_path / "coreai-torch"
    base, docs, fix, bump = max_pool2d_history(repo, old.path, new.path)

    ran = invoke(
        "bisect",
        "--from",
        "0.4.1",
        "--to",
        "0.4.2",
        "--repo",
        str(repo),
        "--json",
        "--allow-code",
        "-q",
        "--probe",
        "max_pool2d/functional-no-stride",
        "--probe",
        "max_pool2d/functional-explicit-stride",
    )
    assert ran.returncode == 0, ran.stderr
    document = json.loads(ran.stdout)
    json_schema(document)
    doc = document["result"]
    assert doc["repo"] == "coreai-torch"  # by name: the evidence names no path of this machine
    assert doc["from_commit"]["sha"] == base and doc["from_commit"]["found_by"] == "tag v0.4.1"
    assert doc["to_commit"]["sha"] == bump and "version bump" in doc["to_commit"]["found_by"]
    assert doc["to_commit"]["wheel"] == "same files"
    assert [c["sha"] for c in doc["commits"]] == [docs, fix, bump]
    assert doc["probed"] == 2
    assert [p["regime"] for p in doc["probes"]] == ["max_pool2d/functional-no-stride"]
    probe = doc["probes"][0]
    assert [(c["sha"], c["pr"], c["final"]) for c in probe["commits"]] == [(fix, "36", True)]
    assert probe["commits"][0]["parent"] == docs
    # the docs commit was converted and found to give 0.4.1's program
    assert any(t["commit"] == docs and not t["changed"] for t in probe["tested"])
    assert all(Path(t["result"]).is_dir() for t in probe["tested"])
    # each commit converted from source was its own environment, with 0.4.1's pins
    built = doc["environments"]
    assert set(built) <= {docs, fix} and fix in built
    manifest = json.loads((old.path.parent / built[fix] / "inventory-env.json").read_text())
    assert manifest["core"] == old.core and manifest["source"]["version"] == "0.4.1"

    # every format says the same (the stored conversions read back): the probe, its release
    # step and the commit with its pull request; the probe that does not change in none
    args = ran.args[: ran.args.index("--json")] + ran.args[ran.args.index("--json") + 1 :]
    table = invoke(*args, COLUMNS="200").stdout
    markdown = invoke(*args, "-f", "markdown").stdout
    said = f"{fix[:7]} (#36)"
    assert f"max_pool2d/functional-no-stride │ {probe['release_shipped']} │ {said}" in table
    from inventory.report.text import for_release_page

    assert (
        f"| max_pool2d/functional-no-stride | {probe['release_shipped']} | "
        f"{for_release_page(said)} |" in markdown
    )
    for text in (table, markdown):
        assert "1 of 2 probes change" in text and "functional-explicit-stride" not in text


def test_every_commit_finds_a_change_undone_between_two_commits_a_binary_search_tests(
    env, tmp_path, json_schema
):
    """The fix, its revert, the fix again, then the bump: a binary search tests the revert (the
    middle), sees 0.4.1's program and names the re-applied fix alone; `--every-commit` converts
    each commit against its parent and names all three changes, the last one final."""
    old, new = env("0.4.1"), env("0.4.2")
    repo = tmp_path / "coreai-torch"
    _init(repo)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    _put(repo, _package(old.path))
    _commit(repo, "sync: v0.4.1 (#28)")
    _git(repo, "tag", "v0.4.1")
    shas = []
    for package, message in (
        (new, "Bug fix: max_pool2d uses default stride value (#36)"),
        (old, "Revert max_pool2d default stride (#37)"),
        (new, "Reland max_pool2d default stride (#38)"),
    ):
        _put(repo, _package(package.path))
        _set_version(repo, "0.4.1")
        shas.append(_commit(repo, message))
    _set_version(repo, "0.4.2")
    _commit(repo, "update coreai torch version (#64)")

    def bisected(*extra: str) -> dict:
        ran = invoke(
            "bisect",
            "--from",
            "0.4.1",
            "--to",
            "0.4.2",
            "--repo",
            str(repo),
            "--json",
            "--allow-code",
            "-q",
            "--probe",
            "max_pool2d/functional-no-stride",
            *extra,
        )
        assert ran.returncode == 0, ran.stderr
        document = json.loads(ran.stdout)
        json_schema(document)
        doc = document["result"]
        return doc

    binary = bisected()
    assert binary["search"] == "binary"
    assert [(c["sha"], c["pr"]) for c in binary["probes"][0]["commits"]] == [(shas[2], "38")]
    every = bisected("--every-commit")
    assert every["search"] == "every-commit"
    assert [(c["sha"], c["pr"], c["final"]) for c in every["probes"][0]["commits"]] == [
        (shas[0], "36", False),
        (shas[1], "37", False),
        (shas[2], "38", True),
    ]


def test_release_notes_credit_a_change_to_the_record_bisection_names(tmp_path):
    """Two records of one step name arange (#13, #25 with alias #27); a bisect document that
    credits a regime's change to #13's commit takes it out of #25's changes, not #13's; a
    regime no document names keeps the step's attribution."""
    from inventory.bisect_evidence import load_bisected
    from inventory.release_notes import _elsewhere
    from oracle.catalog.fixes import load_fixes
    from oracle.catalog.regimes import load_regimes
    from oracle.catalog.releases import load_catalog

    arange = [r for r in load_regimes() if r.construct == "arange"]
    moved, kept = arange[0], arange[1]
    doc = {
        "command": "bisect",
        "result": {
            "from": "0.4.0",
            "to": "0.4.1",
            "probes": [
                {
                    "regime": moved.id,
                    "key": moved.spec.key(),
                    "commits": [{"sha": "53d6bdd" + "0" * 33, "pr": "13"}],
                },
                {"regime": kept.id, "key": kept.spec.key(), "commits": []},
            ],
        },
    }
    (tmp_path / "0.4.0-0.4.1.json").write_text(json.dumps(doc))
    (tmp_path / "notes.json").write_text(json.dumps({"command": "sweep"}))  # not bisect: unread
    bisected = load_bisected(tmp_path)
    assert len(bisected) == 1
    fixes = {f.id: f for f in load_fixes()}
    catalog = load_catalog()
    away = _elsewhere(fixes["25"], arange, "0.4.0", catalog, bisected)
    assert list(away) == [moved.id] and away[moved.id].commits == ("53d6bdd (#13)",)
    assert _elsewhere(fixes["13"], arange, "0.4.0", catalog, bisected) == {}
    # the same evidence read for another step attributes nothing there
    assert _elsewhere(fixes["40"], arange, "0.4.1", catalog, bisected) == {}


def test_a_bisected_step_explains_a_change_only_by_the_record_owning_the_commit(monkeypatch):
    """What sweep, plan and affected credit a step's change to: the records naming the
    construct, narrowed by bisection to the one whose pull request (or alias) owns the commit;
    untouched where the probe was not bisected; empty where the commit is no such record's."""
    from inventory import bisect_evidence
    from inventory.bisect_evidence import Attributed, narrowed
    from oracle.catalog.fixes import load_fixes
    from oracle.catalog.regimes import load_regimes

    fixes = load_fixes()
    arange = [r for r in load_regimes() if r.construct == "arange"]
    by_13, by_27, by_other, unbisected = (r.spec for r in arange[:4])
    monkeypatch.setattr(
        bisect_evidence,
        "_recorded",
        lambda: {
            ("0.4.0", "0.4.1", by_13.key()): Attributed(("13",), ("53d6bdd (#13)",), "e"),
            ("0.4.0", "0.4.1", by_27.key()): Attributed(("27",), ("779df85 (#27)",), "e"),
            ("0.4.0", "0.4.1", by_other.key()): Attributed(("12",), ("3a3ed6f (#12)",), "e"),
        },
    )
    both = ("13", "25")
    assert narrowed(both, fixes, "0.4.0", "0.4.1", by_13) == ("13",)
    assert narrowed(both, fixes, "0.4.0", "0.4.1", by_27) == ("25",)  # #27 is #25's alias
    assert narrowed(both, fixes, "0.4.0", "0.4.1", by_other) == ()
    assert narrowed(both, fixes, "0.4.0", "0.4.1", unbisected) == both
    assert narrowed(("40",), fixes, "0.4.1", "0.4.2", by_13) == ("40",)  # another step


def test_bisect_converts_the_to_release_tree_when_its_wheel_is_not_that_tree(env, tmp_path):
    """The bump commit holds a file the 0.4.2 wheel does not: the wheel does not stand for the
    commit, so B's tree is built and converted first (it still changes the probe), and the
    fix commit is named against it."""
    old, new = env("0.4.1"), env("0.4.2")
    repo = tmp_path / "coreai-torch"
    _init(repo)
    (repo / "pyproject.toml").write_text(PYPROJECT)
    _put(repo, _package(old.path))
    base = _commit(repo, "sync: v0.4.1 (#28)")
    _git(repo, "tag", "v0.4.1")
    _put(repo, _package(new.path))
    _set_version(repo, "0.4.1")
    fix = _commit(repo, "Bug fix: max_pool2d uses default stride value (#36)")
    _set_version(repo, "0.4.2")
    (repo / "coreai_torch" / "_release_notes.py").write_text("# not in the published wheel\n")
    bump = _commit(repo, "update coreai torch version (#64)")

    ran = invoke(
        "bisect",
        "--from",
        "0.4.1",
        "--to",
        "0.4.2",
        "--repo",
        str(repo),
        "--json",
        "--allow-code",
        "-q",
        "--probe",
        "max_pool2d/functional-no-stride",
    )
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)["result"]
    assert doc["to_commit"]["wheel"].startswith("coreai_torch/ of ") and bump in doc["environments"]
    (probe,) = doc["probes"]
    tested = [(t["commit"], t["reference"], t["changed"]) for t in probe["tested"]]
    assert tested[0] == (bump, base, True)  # B's own tree, before any search
    assert (bump, fix, False) in tested  # the fix's program is B's tree's
    assert [(c["sha"], c["pr"], c["final"]) for c in probe["commits"]] == [(fix, "36", True)]


def test_in_a_fresh_store_the_releases_wheels_stand_for_their_commits(env, tmp_path):
    """Environments are built when first needed: bisect builds A's and B's before comparing
    their wheels with the commits' trees, so in a store where neither is built yet the
    releases' own environments convert A and B, none is built from source."""
    old, new = env("0.4.1"), env("0.4.2")
    repo = tmp_path / "coreai-torch"
    max_pool2d_history(repo, old.path, new.path)
    cache = tmp_path / "cache"
    (cache / "envs").mkdir(parents=True)
    torch = f"torch-{load_catalog().torch}"
    (cache / "envs" / torch).symlink_to(envs_dir() / torch)  # the shared torch, borrowed
    ran = invoke(
        "bisect",
        "--from",
        "0.4.1",
        "--to",
        "0.4.2",
        "--repo",
        str(repo),
        "--json",
        "--allow-code",
        "-q",
        "--probe",
        "max_pool2d/functional-explicit-stride",
        INVENTORY_CACHE=str(cache),
    )
    assert ran.returncode == 0, ran.stderr
    doc = json.loads(ran.stdout)["result"]
    assert doc["from_commit"]["wheel"] == doc["to_commit"]["wheel"] == "same files"
    assert doc["environments"] == {} and doc["probes"] == []
    assert {p.name for p in (cache / "envs").iterdir()} >= {
        "coreai-torch-0.4.1",
        "coreai-torch-0.4.2",
    }
