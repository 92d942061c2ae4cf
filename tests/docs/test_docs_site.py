"""The documentation site and the README, without any converter environment (the fast tier):
the site builds with `mkdocs build --strict`, and strict really fails on a broken link, a missing
anchor and an orphan page; every command has a usage page with an example; the example checker
(tests/helpers/docs_examples.py) finds what it must; the README stays an index.

What the examples print is checked against real runs in tests/docs/test_docs_examples.py (slow)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from docs_examples import ROOT, examples, missing, normalise

DOCS = ROOT / "docs"


def _build(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(root / "mkdocs.yml"),
            "-d",
            str(root / "site"),
        ],
        capture_output=True,
        text=True,
        cwd=root,
        env={"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin"},
    )


def test_the_site_builds_in_strict_mode(tmp_path):
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(DOCS, root / "docs")
    built = _build(root)
    assert built.returncode == 0, built.stdout + built.stderr
    assert (root / "site" / "commands" / "plan" / "index.html").is_file()


def test_strict_fails_on_an_orphan_page_a_broken_link_and_a_missing_anchor(tmp_path):
    """One build with the three breakages: each must be reported as a warning, which strict
    turns into a failure (a build is ~3 s; one instead of three)."""
    root = tmp_path / "repo"
    root.mkdir()
    shutil.copy(ROOT / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copytree(DOCS, root / "docs")
    (root / "docs" / "orphan.md").write_text("# Not in the nav\n")
    page = root / "docs" / "ignores.md"
    page.write_text(
        page.read_text() + "\nSee [nowhere](no-such-page.md) and "
        "[plan](commands/plan.md#no-such-section).\n"
    )
    built = _build(root)
    assert built.returncode != 0
    warnings = [ln for ln in (built.stdout + built.stderr).splitlines() if "WARNING" in ln]
    for broken in ('not included in the "nav"', "no-such-page.md", "no-such-section"):
        assert any(broken in ln for ln in warnings), (broken, warnings)


def _commands() -> dict[str, list[str]]:
    """Each command page's name and the commands it covers: `plan` -> [plan]; a group's page
    (`envs`) covers its subcommands (`envs build`, `envs list`)."""
    from inventory.cli import COMMANDS, app

    pages: dict[str, list[str]] = {}
    for group, name, _function in COMMANDS:
        if group is app:
            pages.setdefault(name, []).append(name)
        else:
            (parent,) = [g.name for g in app.registered_groups if g.typer_instance is group]
            assert parent is not None
            pages.setdefault(parent, []).append(f"{parent} {name}")
    return pages


def test_every_command_has_a_usage_page_with_an_example_a_test_runs():
    found = {(ex.page, ex.args[0]) for ex in examples()}
    for page, commands in _commands().items():
        path = DOCS / "commands" / f"{page}.md"
        assert path.is_file(), f"`inventory {page}` has no usage page ({path.relative_to(ROOT)})"
        text = path.read_text()
        for command in commands:
            assert f"inventory {command}" in text, f"{path.name} does not show `{command}`"
        assert (str(path.relative_to(ROOT)), page) in found, (
            f"{path.name} has no `<!-- example: {page} ... -->` block for a test to run"
        )


def test_every_example_shows_the_command_it_runs():
    for ex in examples():
        shown = ex.command.removeprefix("$ ").replace("scripts/inventory", "inventory")
        assert ex.command.startswith("$ ") and shown.startswith("inventory "), ex.id
        for arg in ex.args:
            if "{" not in arg:  # a placeholder is shown as the file's name
                assert arg in shown.split(), f"{ex.id}: the block shows `{shown}`"
        assert ex.shown, f"{ex.id} shows no output"


SHOWN = (
    "sortformer: values-move",
    "  - dwconv k9 -> BatchNorm1d 512 fp16: values-move - max|old-new|=0.0117, tolerance 0.01",
    "...",
    "measured on: linux-cpu, coreai-core 1.0.0b2 ...",
)
REAL = """Fix #54 title
sortformer: values-move
  - dwconv k9 -> BatchNorm1d 512 fp16: values-move - max|old-new|=0.0118, tolerance 0.01
  evidence: /somewhere/results/batch_norm-0.4.1-0.4.2-b1918c0cecd772a11068
measured on: linux-cpu, coreai-core 1.0.0b2; linux-cpu, coreai-core 1.0.0b3
"""


def test_the_checker_accepts_the_real_output_with_other_floats_and_wrapping():
    assert missing(SHOWN, REAL) == []
    assert missing(SHOWN, REAL.replace("  - dwconv", "      -   dwconv")) == []


@pytest.mark.parametrize(
    "change",
    [
        ("values-move - max", "same-program - max"),  # another verdict
        ("BatchNorm1d 512", "BatchNorm1d 1024"),  # another count or shape
        ("coreai-core 1.0.0b2;", "coreai-core 1.0.0b3;"),  # another runtime
    ],
)
def test_the_checker_finds_a_changed_answer(change):
    old, new = change
    assert missing(SHOWN, REAL.replace(old, new)), f"{change} went unnoticed"


def test_the_checker_reads_the_order_shown():
    swapped = "\n".join(reversed(REAL.splitlines()))
    assert missing(SHOWN, swapped)


def test_normalise_masks_floats_and_digests_but_not_versions():
    assert normalise("max|old-new|=0.0117,  new 6.1e-5") == "max|old-new|=<n>, new <n>"
    assert (
        normalise("torch 2.13.0+cpu 0.4.1->0.4.2 1.0.0b3")
        == "torch 2.13.0+cpu 0.4.1->0.4.2 1.0.0b3"
    )
    assert (
        normalise("results/load-0.4.0-float16-a88185968aba14faa3dc 1068 ops")
        == "results/load-0.4.0-float16-<hex> 1068 ops"
    )
    # whether this run read the result or made it is no part of the answer
    assert normalise("│ 3x shipped identical (stored)   │ no │") == normalise(
        "│ 3x shipped identical            │ no │"
    )


def test_examples_are_read_with_their_arguments_and_exit_code(tmp_path):
    page = tmp_path / "p.md"
    page.write_text(
        "<!-- example: plan --to 0.4.3 | exit 1 -->\n```\n$ inventory plan --to 0.4.3"
        "\nRe-export plan\n...\n```\n\n<!-- example: envs list -->\n```\n"
        "$ inventory envs list\ncoreai-torch-0.4.0: ...\n```\n"
    )
    plan, envs = examples([page], root=tmp_path)
    assert (plan.page, plan.args, plan.exit) == ("p.md", ("plan", "--to", "0.4.3"), 1)
    assert plan.command == "$ inventory plan --to 0.4.3" and plan.shown == ("Re-export plan", "...")
    assert (envs.args, envs.exit, envs.shown) == (("envs", "list"), 0, ("coreai-torch-0.4.0: ...",))


def test_the_readme_is_an_index_and_ci_runs_its_test_command():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 250
    setup = text[text.index("## Set up") :]
    block = setup[setup.index("```\n") + 4 : setup.index("\n```", setup.index("```\n") + 4)]
    assert block.splitlines() == ["scripts/inventory affected --fix 40", "scripts/test"]
    ci = (ROOT / ".ci" / "run").read_text()
    assert re.search(r"^scripts/test\b", ci, re.M), ".ci/run must run the README's test command"
    links = re.findall(r"\]\((docs/[^)#]+)", text)
    assert links and all((ROOT / link).is_file() for link in links), links
