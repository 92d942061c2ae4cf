"""The set-up's `.venv` (`scripts/setup_venv.py`) runs the checkout's code without building the
project: `inventory` and `oracle` are imported from the checkout, so a change there is what the
next command runs; the project's metadata is there (`inventory --version` reads it) and so is
its `inventory` command. A bare venv stands in for one the installer filled: what is tested is
the link to the checkout, which needs none of the dependencies."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import venv
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _setup_script() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "setup_venv_script", ROOT / "scripts" / "setup_venv.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _checkout(root: Path, says: str) -> None:
    for package in ("inventory", "oracle", "tests"):
        (root / package).mkdir(parents=True, exist_ok=True)
        (root / package / "__init__.py").write_text("")
    (root / "inventory" / "cli.py").write_text(f"def app():\n    print({says!r})\n    return 0\n")


@pytest.fixture
def linked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    setup = _setup_script()
    checkout = tmp_path / "checkout"
    _checkout(checkout, "first")
    monkeypatch.setattr(setup, "ROOT", checkout)
    where = tmp_path / "venv"
    venv.create(where, with_pip=False, symlinks=True)
    meta = {"name": "inventory", "version": "9.8.7", "scripts": {"inventory": "inventory.cli:app"}}
    setup.link_checkout(where, meta)
    return checkout, where


def _run(args: list[str]) -> str:
    proc = subprocess.run(args, capture_output=True, text=True, cwd="/", timeout=60)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.strip()


def test_the_venv_runs_the_checkout_s_code_as_it_is_now(linked):
    checkout, where = linked
    assert _run([str(where / "bin" / "inventory")]) == "first"
    _checkout(checkout, "changed")  # an edit in the checkout
    assert _run([str(where / "bin" / "inventory")]) == "changed"


def test_the_venv_has_the_project_s_metadata_and_only_its_packages_from_the_checkout(linked):
    checkout, where = linked
    python = str(where / "bin" / "python")
    assert _run(
        [python, "-c", "import importlib.metadata as m; print(m.version('inventory'))"]
    ) == ("9.8.7")
    found = _run([python, "-c", "import oracle, inventory; print(oracle.__file__)"])
    assert Path(found) == checkout / "oracle" / "__init__.py"
    # the checkout's other folders (tests, scripts) are not importable names of the venv
    proc = subprocess.run([python, "-c", "import tests"], capture_output=True, text=True, cwd="/")
    assert proc.returncode != 0 and "No module named 'tests'" in proc.stderr
    # nothing of a build: no editable install's finder or metadata beside it
    site = next((where / "lib").glob("python*/site-packages"))
    assert not list(site.glob("__editable__*")) and len(list(site.glob("*.dist-info"))) == 1


def test_the_venv_s_metadata_declares_the_project_s_requirements_and_extras(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """What reads the installed package's requirements reads pyproject.toml's: the `trace`
    extra's pins, which decide whether this interpreter can build a bundle's module or the
    store's environment of the extra is needed (an empty list passed every interpreter)."""
    setup = _setup_script()
    meta = setup.project()  # the project's own pyproject.toml
    checkout = tmp_path / "checkout"
    _checkout(checkout, "first")
    monkeypatch.setattr(setup, "ROOT", checkout)
    where = tmp_path / "venv"
    venv.create(where, with_pip=False, symlinks=True)
    setup.link_checkout(where, meta)
    site = next((where / "lib").glob("python*/site-packages"))
    monkeypatch.syspath_prepend(str(site))  # its metadata found before this interpreter's

    from inventory.trace import extra

    declared = tuple(meta["optional-dependencies"][extra.EXTRA])
    assert declared and extra.requirements() == declared
    found = importlib.metadata.distribution("inventory")
    assert found.version == meta["version"] and Path(str(found.locate_file(""))) == site
    plain = [r for r in found.requires or [] if "extra ==" not in r]
    assert plain == meta["dependencies"]
