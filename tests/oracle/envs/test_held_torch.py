"""Every environment holds the shared torch and nothing else of torch's: a requirement that would
pull another torch or a CUDA package is refused in one line naming the package, before anything
is installed; an environment that would import another torch, or sees a CUDA distribution, is
refused after its install. The requirements are tiny wheels made here, resolved by the real uv
(and pip) against the machine's package sources."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from oracle.catalog.releases import EnvError
from oracle.envs import installer
from oracle.envs.environment import (
    MANIFEST,
    SHARED_TORCH_PTH,
    ensure_venv,
    shared_torch,
    site_packages,
)
from oracle.envs.held_torch import check_held, resolved_beside, shared_version
from oracle.envs.installer import requirement_name


def wheel(folder: Path, name: str, requires: list[str], version: str = "1.0") -> str:
    """A wheel of one empty distribution declaring `requires`; its requirement by location."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{name.replace('-', '_')}-{version}"
    path = folder / f"{stem}-py3-none-any.whl"
    info = f"{stem}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires
    )
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(f"{info}/METADATA", meta)
        archive.writestr(
            f"{info}/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        archive.writestr(f"{info}/RECORD", f"{info}/METADATA,,\n{info}/WHEEL,,\n{info}/RECORD,,\n")
    return f"{name} @ {path.as_uri()}"


def fake_site(folder: Path, version: str = "2.13.0+cpu") -> Path:
    """A folder holding a `torch` package and its dist-info (nothing of torch's code)."""
    (folder / "torch").mkdir(parents=True)
    (folder / "torch" / "__init__.py").write_text("")
    info = folder / f"torch-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    return folder


def dist_info(site: Path, name: str, requires: list[str]) -> None:
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n"
        + "".join(f"Requires-Dist: {r}\n" for r in requires)
    )


# ---- after the install: what the environment imports ------------------------------------------


def test_an_environment_that_imports_another_torch_than_the_shared_one_is_refused(tmp_path):
    shared = fake_site(tmp_path / "shared")
    # this interpreter's torch is its own, not the one at `shared`
    with pytest.raises(EnvError) as info:
        check_held(Path(sys.executable), shared, tmp_path / "build.log", "trace-x")
    line = str(info.value)
    assert f"trace-x: imports torch from {torch.__file__}, not the shared torch 2.13.0+cpu" in line
    assert "\n" not in line


def test_a_cuda_distribution_in_an_environment_is_refused_naming_what_requires_it(
    tmp_path, monkeypatch
):
    shared = fake_site(tmp_path / "shared")
    dist_info(shared, "nvidia-cublas", [])
    dist_info(shared, "wants-cuda", ["nvidia-cublas>=12"])
    monkeypatch.setenv("PYTHONPATH", str(shared))  # found before this interpreter's own torch
    with pytest.raises(EnvError) as info:
        check_held(Path(sys.executable), shared, tmp_path / "build.log", "trace-x")
    assert "trace-x: holds the CUDA package(s) nvidia-cublas (required by wants-cuda)" in str(
        info.value
    )
    # the same folder without it: the shared torch, held
    (shared / "nvidia_cublas-1.0.dist-info" / "METADATA").unlink()
    (shared / "nvidia_cublas-1.0.dist-info").rmdir()
    assert check_held(Path(sys.executable), shared, tmp_path / "build.log", "x") == "2.13.0+cpu"


def test_beside_a_measurements_cuda_torch_its_cuda_libraries_are_held(tmp_path, monkeypatch):
    """scripts/torch-sensitivity --torch-dir: another release's PyPI wheel, a CUDA build, with
    the CUDA libraries it imports beside it (never the shared torch, never used to answer)."""
    other = fake_site(tmp_path / "other", "2.9.0")
    meta = other / "torch-2.9.0.dist-info" / "METADATA"
    meta.write_text(meta.read_text() + "Requires-Dist: nvidia-cublas-cu12==12.8\n")
    dist_info(other, "nvidia-cublas-cu12", [])
    monkeypatch.setenv("PYTHONPATH", str(other))
    assert check_held(Path(sys.executable), other, tmp_path / "build.log", "x") == "2.9.0"


# ---- before the install: what the requirements would resolve to -------------------------------


def test_a_held_torch_on_no_package_source_is_never_looked_for_there(tmp_path):
    """A measurement's torch (scripts/torch-sensitivity --torch-dir) need not be on the package
    sources: its requirements join the resolution, torch itself only where a requirement asks
    for it."""
    other = fake_site(tmp_path / "other", "1.0.0+measured")  # on no package source
    tool = installer.chosen()
    log = tmp_path / "build.log"
    python = tool.venv(tmp_path / "venv", log)
    (site_packages(python) / SHARED_TORCH_PTH).write_text(f"{other}\n")
    req = wheel(tmp_path / "wheels", "plain", [])
    pins = resolved_beside(tool, python, [req], other, log, "plain")
    assert [requirement_name(p) for p in pins] == ["plain"]


@pytest.fixture(params=["uv", "pip"])
def installer_named(request, monkeypatch):
    monkeypatch.setenv("INVENTORY_INSTALLER", request.param)
    installer.chosen.cache_clear()
    yield request.param
    installer.chosen.cache_clear()


def test_a_requirement_that_pulls_another_torch_is_refused_naming_it(
    scratch_cache, catalog, installer_named
):
    req = wheel(scratch_cache / "wheels", "wants-new-torch", ["torch==2.14.1"])
    version = shared_version(shared_torch(catalog))
    with pytest.raises(EnvError) as info:
        ensure_venv("trace-new-torch", (req,), catalog)
    line = str(info.value)
    assert (
        f"refused: wants-new-torch depends on torch==2.14.1, but every environment holds the "
        f"shared torch {version}"
    ) in line
    assert "\n" not in line
    # nothing of the refused environment is kept, and nothing was installed for it
    assert not (scratch_cache / "envs" / "trace-new-torch").exists()
    log = (scratch_cache / "envs" / "trace-new-torch.build.log").read_text()
    assert "Installed" not in log and "Successfully installed" not in log


def test_a_requirement_that_pulls_a_cuda_package_is_refused_naming_what_pulled_it(
    scratch_cache, catalog
):
    wheels = scratch_cache / "wheels"
    cuda = wheel(wheels, "nvidia-fake-runtime", [])
    req = wheel(wheels, "wants-cuda", ["nvidia-fake-runtime"])
    with pytest.raises(EnvError) as info:
        ensure_venv("trace-cuda", (req, cuda), catalog)
    line = str(info.value)
    assert "refused: it would install the CUDA package(s) nvidia-fake-runtime (via wants-cuda)" in (
        line
    )
    assert not (scratch_cache / "envs" / "trace-cuda").exists()


def test_an_environment_holds_the_shared_torch_and_no_torch_of_its_own(scratch_cache, catalog):
    req = wheel(scratch_cache / "wheels", "wants-any-torch", ["torch>=2.0"])
    python = ensure_venv("trace-any-torch", (req,), catalog)
    site = site_packages(python)
    # torch's own requirements are installed beside it; torch is not
    assert not list(site.glob("torch-*.dist-info")) and not (site / "torch").exists()
    assert list(site.glob("sympy-*.dist-info"))
    manifest = json.loads((python.parent.parent / MANIFEST).read_text())
    version = shared_version(shared_torch(catalog))
    assert manifest["torch"] == version
    assert "wants-any-torch" in manifest["packages"]
    # a manifest that says another torch (built before the rule) is not reused: rebuilt
    manifest["torch"] = "2.14.1+cu130"
    (python.parent.parent / MANIFEST).write_text(json.dumps(manifest))
    said: list[str] = []
    ensure_venv("trace-any-torch", (req,), catalog, lambda line: said.append(str(line)))
    assert any(f"not built on the shared torch {version}" in s for s in said), said
    assert json.loads((python.parent.parent / MANIFEST).read_text())["torch"] == version


def test_an_environment_built_through_a_linked_cache_still_imports_torch_once_it_is_gone(
    scratch_cache, catalog, tmp_path_factory, monkeypatch
):
    """A cache whose `envs` links to another store's (the first-use test's clone, a second
    checkout) builds the `trace` extra's environment there: its `.pth` named the torch through
    that cache, so once the cache was gone the environment, reused, could not import torch."""
    req = wheel(scratch_cache / "wheels", "wants-any-torch", ["torch>=2.0"])
    borrowing = tmp_path_factory.mktemp("borrowing")
    (borrowing / "envs").symlink_to(scratch_cache / "envs")
    monkeypatch.setenv("INVENTORY_CACHE", str(borrowing))
    ensure_venv("trace-linked", (req,), catalog)
    shutil.rmtree(borrowing)  # the borrowing run's cache goes with it
    monkeypatch.setenv("INVENTORY_CACHE", str(scratch_cache))
    said: list[str] = []
    python = ensure_venv("trace-linked", (req,), catalog, lambda line: said.append(str(line)))
    imports = [str(python), "-c", "import torch"]
    assert subprocess.run(imports, capture_output=True).returncode == 0
    assert not any("re-pointing" in s or "creating" in s for s in said), said

    # one built before (its line names a cache that is gone): re-pointed, as a converter's is
    pth = site_packages(python) / SHARED_TORCH_PTH
    pth.write_text(f"{borrowing / 'envs' / f'torch-{catalog.torch}' / 'site'}\n")
    python = ensure_venv("trace-linked", (req,), catalog, lambda line: said.append(str(line)))
    assert subprocess.run(imports, capture_output=True).returncode == 0
    assert any("re-pointing trace-linked" in s for s in said), said
    assert not any("creating" in s for s in said), said
