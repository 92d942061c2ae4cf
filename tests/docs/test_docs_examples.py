"""Every usage example of the docs and the README, run for real and held to the output it shows
(tests/helpers/docs_examples.py says how a shown line is compared).

The examples of `affected`, `plan`, `release-notes` and `sweep` are answers on the shipped
registry: they read the store the answer matrix filled (the `matrix` fixture), so each costs
one warm run, about a second. The others make their own inputs: the asset coreai-torch 0.4.0
writes for the load check's probe (`scan`, `repair`), the four-commit history of the 0.4.1 and
0.4.2 sources (`bisect`, as tests/inventory/test_bisect.py builds it, so its conversions are
shared), an empty store (`cache`), and mimi's stand-in (`trace`, `verify`). A failure prints the
whole real output, to update the page from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import answers
import pytest
from cli import invoke
from docs_examples import Example, examples, missing
from gitrepos import max_pool2d_history

from inventory.terminal import PIPED_WIDTH
from oracle.store.result_store import results_root

MATRIX_COMMANDS = ("affected", "plan", "release-notes", "sweep")
# the pages show what a pipe prints, as wide as a pipe is without COLUMNS (pytest-xdist's
# workers set COLUMNS=80, which the CLI would honour)
PIPE = str(PIPED_WIDTH)
EXAMPLES = examples()


def _check(ex: Example, returncode: int, stdout: str, stderr: str) -> None:
    assert returncode == ex.exit, f"{ex.id}: exit {returncode}, the page says {ex.exit}\n{stderr}"
    lost = missing(ex.shown, stdout)
    assert not lost, (
        f"{ex.page} shows lines `inventory {' '.join(ex.args)}` no longer prints:\n"
        + "\n".join(lost)
        + "\n---- the real output ----\n"
        + stdout
    )


@pytest.mark.parametrize(
    "ex", [e for e in EXAMPLES if e.args[0] in MATRIX_COMMANDS], ids=lambda e: e.id
)
def test_an_answer_on_the_shipped_registry_matches_its_page(ex, matrix):
    ran = invoke(*ex.args, COLUMNS=PIPE)
    _check(ex, ran.returncode, ran.stdout, ran.stderr)


@pytest.fixture(scope="module")
def inputs(env, tmp_path_factory) -> dict[str, Path]:
    """The files the other examples name, in one folder they run in."""
    folder = tmp_path_factory.mktemp("example")
    # the load check of sam3 stores the asset coreai-torch 0.4.0 writes for its probe (float16)
    ran = invoke("affected", "--fix", "28", "--bundle", "sam3", "--json", "-q")
    assert ran.returncode == 1, ran.stderr
    asset = max(
        results_root().glob("load-0.4.0-float16-*/export-0.4.0/model.aimodel"),
        key=lambda p: p.stat().st_mtime,
    )
    shutil.copytree(asset, folder / "probe_float16.aimodel")
    max_pool2d_history(folder / "coreai-torch", env("0.4.1").path, env("0.4.2").path)
    return {
        "asset_040": folder / "probe_float16.aimodel",
        "out": folder / "probe_float16.repaired.aimodel",
        "repo": folder / "coreai-torch",
    }


@pytest.mark.parametrize(
    "ex", [e for e in EXAMPLES if e.args[0] not in MATRIX_COMMANDS], ids=lambda e: e.id
)
def test_an_example_with_its_own_inputs_matches_its_page(ex, inputs, tmp_path):
    folder = inputs["asset_040"].parent
    args = [a.format(**{k: str(v) for k, v in inputs.items()}) for a in ex.args]
    env = {**os.environ, "COLUMNS": PIPE}
    if ex.args[0] == "cache":
        env["INVENTORY_STORE"] = str(tmp_path / "store")  # a store of its own: nothing to prune
    if answers.stores_a_check(ex.args):
        # the bare store's plans, which the answer examples read at the same time, would take
        # this check (mimi's "unchecked" turning "no"); the checked store holds every bundle's
        env["INVENTORY_CACHE"] = str(answers.stores()[answers.CHECKED])
    shutil.rmtree(inputs["out"], ignore_errors=True)  # repair never writes over its output
    # what this example adds to the bare store is its doing; what other tests of the session
    # left there (their own stores are theirs to keep) is not this example's
    before = set(answers.bare_checks())
    proc = subprocess.run(
        [sys.executable, "-m", "inventory.cli", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
    )
    # the files are named as a reader in that folder names them
    _check(ex, proc.returncode, proc.stdout.replace(f"{folder}/", ""), proc.stderr)
    stored = sorted(set(answers.bare_checks()) - before)
    assert not stored, f"{ex.id}: a whole-program check in the bare store: {stored}"
