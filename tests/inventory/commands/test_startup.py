"""`inventory --version` and `--help` start without what the work needs: no torch, no converter,
no numpy, no cluster engine, no object-store client is imported in the command line's own
process for them (a warm answer's time is mostly start-up; each command imports its service
when it runs)."""

from __future__ import annotations

import subprocess
import sys

import pytest
from cli import ROOT

from inventory.errors import ExitCode

# What neither `--version`, `--help` nor a warm plan may import.
_HEAVY = (
    "HEAVY = {'torch', 'coreai', 'coreai_torch', 'numpy', 'safetensors', 'ray', 'transformers',"
    " 'fsspec', 's3fs', 'botocore'}\n"
)

# Runs the command line as `inventory ARGS` does, then lists what it imported of the heavy ones.
_SCRIPT = """
import runpy, sys
sys.argv = ["inventory", *sys.argv[1:]]
try:
    runpy.run_module("inventory.cli", run_name="__main__")
except SystemExit:
    pass
print("IMPORTED", sorted({m.split(".")[0] for m in sys.modules} & HEAVY))
"""


@pytest.mark.parametrize(
    "args",
    [
        ("--version",),
        ("--help",),
        ("affected", "--help"),
        ("plan", "--help"),
        ("envs", "list", "--help"),
    ],
)
def test_version_and_help_import_no_torch_no_converter(args):
    proc = subprocess.run(
        [sys.executable, "-c", _HEAVY + _SCRIPT, *args], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == "IMPORTED []", proc.stdout
    assert len(lines) > 1  # it printed the version or the help before


# What `plan` imports to answer (plan_cmd's own imports): a warm plan reads stored results and
# stored whole-program checks, and no tensor, so no numpy (about a third of its start-up).
_PLAN_IMPORTS = """
import sys
import inventory.commands.plan, inventory.deployment, inventory.ignore, inventory.output
import inventory.plan, inventory.policy, inventory.report.plan_report, inventory.verify.service
import oracle.catalog, oracle.session
print("IMPORTED", sorted({m.split(".")[0] for m in sys.modules} & HEAVY))
"""


def test_what_a_warm_plan_imports_holds_no_numpy():
    proc = subprocess.run(
        [sys.executable, "-c", _HEAVY + _PLAN_IMPORTS], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == "IMPORTED []", proc.stdout


# typer 0.29 coerces every parsed parameter through a pydantic TypeAdapter; importing pydantic
# was about a third of a warm `affected --fix 40` (pyproject.toml pins typer below it).
_PARSED = """
import runpy, sys
sys.argv = ["inventory", "affected", "--fix", "99999", "--tolerance", "0.1"]
try:
    runpy.run_module("inventory.cli", run_name="__main__")
except SystemExit as exc:
    print("EXIT", exc.code)
print("IMPORTED", sorted({m.split(".")[0] for m in sys.modules} & {"pydantic", "numpy"}))
"""


def test_parsing_a_command_s_options_imports_no_pydantic():
    proc = subprocess.run([sys.executable, "-c", _PARSED], capture_output=True, text=True, cwd=ROOT)
    # the options were parsed and the fix looked up (an unknown fix is a usage error)
    assert "99999" in proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-2] == f"EXIT {int(ExitCode.USAGE)}", proc.stdout
    assert lines[-1] == "IMPORTED []", proc.stdout


# Runs the command line as `inventory ARGS` does, then lists the command modules it imported.
_COMMAND_MODULES = """
import runpy, sys
sys.argv = ["inventory", *sys.argv[1:]]
try:
    runpy.run_module("inventory.cli", run_name="__main__")
except SystemExit:
    pass
print("IMPORTED", sorted(m for m in sys.modules if m.startswith("inventory.commands.")))
"""


@pytest.mark.parametrize(
    ("args", "imported"),
    [
        (("--version",), []),
        (("--help",), []),
        (("envs", "--help"), []),
        (("cache", "--help"), []),
        (("plan", "--help"), ["inventory.commands.common", "inventory.commands.plan"]),
        (("cache", "du", "--help"), ["inventory.commands.cache"]),
    ],
)
def test_a_command_s_module_is_imported_only_when_it_is_asked_for(args, imported):
    """`--version` and the lists of commands import no command's module (each imports its
    options, and through them the renderers); a command's own help imports its module only."""
    proc = subprocess.run(
        [sys.executable, "-c", _COMMAND_MODULES, *args], capture_output=True, text=True, cwd=ROOT
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == f"IMPORTED {imported}", proc.stdout


def test_the_list_of_commands_shows_each_command_s_own_help():
    """What `--help` lists without importing a command's module is what the command says of
    itself once imported: each row's name and its help, for every command of every group."""
    from typer.main import get_group

    from inventory.cli import TABLE, _LazyGroup, app

    root = get_group(app)
    assert isinstance(root, _LazyGroup)
    shown = {n: root.lazy.listed(n) for n in root.list_commands(None)}
    groups = [root, *(g for g in shown.values() if isinstance(g, _LazyGroup))]
    seen = []
    for group in groups:
        rows = {n: group.lazy.listed(n) for n in group.list_commands(None)}
        listed = {n: c.help for n, c in rows.items() if not isinstance(c, _LazyGroup)}
        loaded = {n: group.commands[n].help for n in listed}
        assert listed == loaded
        assert all(listed.values())
        seen += [(group.name if group is not root else "", n) for n in listed]
    assert sorted(seen) == sorted((g, n) for g, n, _ in TABLE)
