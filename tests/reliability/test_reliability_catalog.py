"""The release catalog and the environment builds against hostile values (a hostile round's).

A discovered wheel pinning `coreai-core==../../x` was recorded and from then on answered every
plan with `../../x` as a deployment runtime; a catalog `extra = ["/path/pkg"]` ran that folder's
`setup.py` without consent; a `[torch] version = "../../../../victim"` emptied a folder outside
the store; a re-pinned release was rebuilt in place under a run using it; a build left uv's lock
file in the system's temp directory; and a 200,000-release catalog or 3,000 wheels to discover
did not answer in minutes. Each is refused in one line, or kept inside the store, here.

The fast tests read catalogs, records and wheel archives the test writes (a wheel holding only
its METADATA, enough for discovery), and build with the real installer only what needs no
converter environment (a one-module package into a bare virtualenv). The slow test builds real
environments in a cache of its own that borrows the shared torch.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from cli import invoke, one_line, spawn

from oracle.catalog.releases import MAX_RELEASES, EnvError, load_catalog
from oracle.envs import environment, installer
from oracle.envs.discovery import discover
from oracle.envs.pip_config import Sources
from oracle.infra.paths import StorePathError

METADATA = """Metadata-Version: 2.4
Name: coreai-torch
Version: {version}
Requires-Python: >=3.11
Requires-Dist: coreai-core{core}
Requires-Dist: numpy<2.5
Requires-Dist: torch>=2.8.0
"""


def wheel(folder: Path, version: str, core: str = "==1.0.0b3") -> Path:
    """A coreai-torch wheel archive holding only its dist-info METADATA."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"coreai_torch-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr(
            f"coreai_torch-{version}.dist-info/METADATA",
            METADATA.format(version=version, core=core),
        )
    return path


@pytest.fixture()
def cache(tmp_path, monkeypatch) -> Path:
    folder = tmp_path / "cache"
    folder.mkdir()
    monkeypatch.setenv("INVENTORY_CACHE", str(folder))
    monkeypatch.delenv("INVENTORY_STORE", raising=False)
    monkeypatch.delenv("INVENTORY_CATALOG", raising=False)
    return folder


def links(monkeypatch, folder: Path) -> None:
    """Discovery reads this find-links folder alone."""
    monkeypatch.setattr(
        "oracle.envs.discovery.package_sources", lambda: Sources((), (str(folder),))
    )


# ---- a discovered wheel's requirements ------------------------------------------------------


@pytest.mark.parametrize("core", ["==../../x", "===../../x", "==/etc", "==1.0 --index-url=x"])
def test_a_wheel_pinning_a_core_that_is_no_version_is_refused_and_not_recorded(
    cache, tmp_path, monkeypatch, core
):
    links(monkeypatch, tmp_path / "links")
    wheel(tmp_path / "links", "0.4.9", core)
    wheel(tmp_path / "links", "0.4.8")  # a good one beside it is recorded
    result = discover(load_catalog(discovered=False))
    found = {f.derived.version: f for f in result.found}
    bad = found["0.4.9"]
    assert bad.derived.core is None and bad.record == ""
    assert f"Requires-Dist 'coreai-core{core}' is refused" in bad.derived.problem
    assert found["0.4.8"].record
    catalog = load_catalog()
    assert "0.4.9" not in catalog.releases and catalog.release("0.4.8").core == "1.0.0b3"
    # the listing names the wheel and the field, and exits 1 (an entry that cannot be derived)
    ran = invoke("envs", "discover", "--json")
    assert ran.returncode == 1, ran.stderr
    [listed] = [f for f in json.loads(ran.stdout)["result"]["found"] if f["release"] == "0.4.9"]
    assert listed["wheel"] == "coreai_torch-0.4.9-py3-none-any.whl"
    assert "Requires-Dist" in listed["problem"] and listed["recorded"] is None


def test_a_record_an_older_tool_wrote_is_refused_naming_it_and_how_to_remove_it(
    cache, tmp_path, monkeypatch
):
    """What an older discover recorded from `coreai-core==../../x` made `plan --to 0.4.2` list
    `../../x` as a runtime (5 inconclusive, exit 3) until the folder was deleted."""
    record = cache / "discovered" / "0.4.9"
    record.mkdir(parents=True)
    (record / "entry.toml").write_text('[converters."0.4.9"]\ncore = "../../x"\nextra = []\n')
    (record / "METADATA").write_text(METADATA.format(version="0.4.9", core="==../../x"))
    ran = invoke("plan", "--to", "0.4.2", "-q")
    line = one_line(ran)
    assert ran.returncode == 2
    assert str(record / "entry.toml") in line and f"rm -r {record}" in line
    with pytest.raises(EnvError, match="PEP 440 version"):
        load_catalog()
    # discovering again removes the record its wheel no longer gives
    links(monkeypatch, tmp_path / "links")
    wheel(tmp_path / "links", "0.4.9", "==../../x")
    discover(load_catalog(discovered=False))
    assert not record.exists() and "0.4.9" not in load_catalog().releases


# ---- a catalog's values ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[torch]\nversion = "../../../../victim"\n[converters."0.4.2"]\ncore = "1.0.0b2"\n',
         "[torch] version must be a PEP 440 version"),
        ('[converters."0.4.2"]\ncore = "../../x"\n', "core must be a PEP 440 version"),
        ('[converters."0.4.2"]\ncore = "1.0.0b2 --pre"\n', "core must be a PEP 440 version"),
        ('[converters."0.4.2"]\ncore = "1.0.0b2"\nextra = ["numpy<<2 x"]\n',
         "extra must be requirements of registry packages"),
    ],
)  # fmt: skip
def test_a_catalog_value_that_would_be_a_path_or_an_option_is_one_line(cache, tmp_path, text, said):
    bad = tmp_path / "bad.toml"
    bad.write_text(text)
    for args in (("plan", "--to", "0.4.2", "-q"), ("envs", "build", "0.4.2")):
        ran = invoke(*args, "--catalog", str(bad))
        line = one_line(ran)
        assert ran.returncode == 2 and said in line and str(bad) in line, line
    assert not (cache / "envs").exists() or not any((cache / "envs").iterdir())


@pytest.mark.parametrize(
    ("extra", "kind"),
    [
        ("/path/pkg", "a local path"),
        ("./pkg", "a local path"),
        ("git+https://example.invalid/pkg.git", "a VCS reference"),
        ("pkg @ https://example.invalid/pkg-1.0.tar.gz", "a URL"),
        ("--index-url=https://example.invalid/simple", "an installer option"),
        ("-e /path/pkg", "an installer option"),
    ],
)
def test_a_catalog_extra_that_installs_code_is_refused_without_allow_code(
    cache, tmp_path, extra, kind
):
    user = tmp_path / "extra.toml"
    user.write_text(f'[converters."0.4.2"]\ncore = "1.0.0b2"\nextra = [{json.dumps(extra)}]\n')
    ran = invoke("envs", "build", "0.4.2", "--catalog", str(user))
    line = one_line(ran)
    assert ran.returncode == 2, line
    assert f"{extra!r} ({kind})" in line and "refused without --allow-code" in line
    # refused before anything is installed: not even the shared torch
    assert not (cache / "envs").exists() or not any((cache / "envs").glob("*/"))


def test_an_environment_folder_outside_the_store_is_never_emptied_or_locked(cache, tmp_path):
    """Defence at the root, whatever the catalog's reader lets through: the folder a version
    names (`torch-../../../../victim`, with folders present that make it resolve) is refused
    before it is emptied, and its lock is never made beside it."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("kept")
    for present in ("torch-..", ".torch-.."):  # what makes the path resolve to the victim
        (cache / "envs" / present).mkdir(parents=True)
    name = "torch-../../../../victim"
    with pytest.raises(StorePathError), environment.locked(name):
        pass
    with pytest.raises(StorePathError):
        environment.torch_install("../../../../victim", name, ["--no-deps"])
    with pytest.raises(StorePathError):
        environment.remove_env(cache / "envs" / "torch-.." / ".." / ".." / ".." / "victim")
    assert (victim / "precious.txt").read_text() == "kept"
    assert not (tmp_path / "victim.lock").exists()


# ---- the installer leaves nothing outside the store ------------------------------------------


def test_an_install_leaves_nothing_in_the_system_temp_directory(cache, tmp_path, monkeypatch):
    """uv took a lock file in TMPDIR for the source build of a package
    (`uv-setuptools-<digest>.lock`) and left it there: each installer run now has a TMPDIR of
    its own in the store's scratch, removed when it ends."""
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))
    package = tmp_path / "tinypkg"
    package.mkdir()
    (package / "setup.py").write_text(
        "from setuptools import setup\n"
        'setup(name="tinypkg", version="0.1", py_modules=["tinypkg"])\n'
    )
    (package / "tinypkg.py").write_text("X = 1\n")
    tool = installer.chosen()
    log = cache / "envs" / "tiny.build.log"
    python = tool.venv(cache / "envs" / "tiny", log, seed=False)
    tool.install(python, [str(package)], log, "tinypkg")
    assert subprocess.run([str(python), "-c", "import tinypkg"]).returncode == 0
    assert sorted(p.name for p in system_tmp.iterdir()) == []
    assert not (cache / "tmp").exists() or list((cache / "tmp").iterdir()) == []


# ---- bounds ---------------------------------------------------------------------------------


def test_a_catalog_of_200000_releases_is_refused_in_one_line_naming_the_limit(cache, tmp_path):
    big = tmp_path / "big.toml"
    big.write_text(
        "".join(
            f'[converters."9.{i // 1000}.{i % 1000}"]\ncore = "1.0.{i}"\n' for i in range(200_000)
        )
    )
    ran = invoke("plan", "--to", "0.4.2", "-q", "--catalog", str(big))
    line = one_line(ran)
    assert ran.returncode == 2 and str(big) in line and "more than the 1 MiB" in line
    # under the size bound, the count is the limit
    many = tmp_path / "many.toml"
    many.write_text(
        "".join(f'[converters."9.9.{i}"]\ncore = "1.0.0"\n' for i in range(MAX_RELEASES + 1))
    )
    ran = invoke("envs", "list", "--catalog", str(many))
    line = one_line(ran)
    assert ran.returncode == 2 and f"a catalog holds at most {MAX_RELEASES}" in line, line


def test_3000_wheels_to_discover_are_refused_before_one_is_read(cache, tmp_path, monkeypatch):
    folder = tmp_path / "links"
    for i in range(3000):
        wheel(folder, f"9.{i // 100}.{i % 100}")
    links(monkeypatch, folder)
    ran = invoke("envs", "discover", "-q")
    line = one_line(ran)
    assert ran.returncode == 2 and "3000 coreai-torch releases the catalog lacks" in line
    assert f"a catalog holds at most {MAX_RELEASES}" in line
    assert not (cache / "discovered").exists() or not any((cache / "discovered").iterdir())


# ---- a re-pinned release under a run that uses the release's environment ---------------------


@pytest.fixture()
def own_cache(tmp_path, env, catalog) -> Path:
    """A cache of this test's own that borrows the shared torch (no 700 MB install)."""
    real_torch = environment.envs_dir() / f"torch-{catalog.torch}"
    env("0.4.2")  # the shared torch exists
    folder = tmp_path / "cache"
    (folder / "envs").mkdir(parents=True)
    (folder / "envs" / real_torch.name).symlink_to(real_torch)
    return folder


# A run using an environment: starts its python again and again until told to stop, and says
# how many starts failed.
_USER = """
import pathlib, subprocess, sys, time
python, stop = sys.argv[1], pathlib.Path(sys.argv[2])
failed = runs = 0
while not stop.exists():
    code = "import coreai_torch, coreai"
    failed += subprocess.run([python, "-c", code], capture_output=True).returncode != 0
    runs += 1
    time.sleep(0.1)
print(failed, runs)
"""


@pytest.mark.slow
def test_a_re_pinned_release_gets_its_own_folder_while_another_run_uses_the_release(
    own_cache, tmp_path
):
    """Two processes: one starts the 0.4.2 environment's python again and again while the
    other builds 0.4.2 re-pinned by a user's catalog with an extra that is a local package
    (consented: its setup.py runs, and that is said). The re-pinned build goes to a folder of
    its own; the one in use stays as built. And the build leaves nothing in TMPDIR."""
    cache = {"INVENTORY_CACHE": str(own_cache)}
    first = spawn("envs", "build", "0.4.2", **cache)
    assert first.returncode == 0, first.stderr
    plain = own_cache / "envs" / "coreai-torch-0.4.2"
    before = json.loads((plain / environment.MANIFEST).read_text())
    stop = tmp_path / "stop"
    user = subprocess.Popen(
        [sys.executable, "-c", _USER, str(plain / "bin" / "python"), str(stop)],
        stdout=subprocess.PIPE,
        text=True,
    )
    package = tmp_path / "localpkg"
    package.mkdir()
    marker = tmp_path / "setup-ran"
    (package / "setup.py").write_text(
        f"open({str(marker)!r}, 'a').write('setup\\n')\n"
        'from setuptools import setup\nsetup(name="localpkg", version="0.1", py_modules=[])\n'
    )
    repinned = tmp_path / "repinned.toml"
    repinned.write_text(f'[converters."0.4.2"]\ncore = "1.0.0b2"\nextra = ["{package}"]\n')
    system_tmp = tmp_path / "system-tmp"
    system_tmp.mkdir()
    try:
        refused = spawn("envs", "build", "0.4.2", "--catalog", str(repinned), **cache)
        assert refused.returncode == 2 and "refused without --allow-code" in refused.stderr
        assert not marker.exists()
        built = spawn(
            "envs",
            "build",
            "0.4.2",
            "--catalog",
            str(repinned),
            "--allow-code",
            TMPDIR=str(system_tmp),
            **cache,
        )
        assert built.returncode == 0, built.stderr
        time.sleep(1)  # the user starts its python a few more times after the build
    finally:
        stop.write_text("")
        said, _ = user.communicate(timeout=120)
    failed, runs = (int(n) for n in said.split())
    assert runs >= 2 and failed == 0, (
        f"{failed} of {runs} starts of the environment's python failed"
    )
    assert "its build code runs (--allow-code)" in built.stderr and marker.exists()
    assert json.loads((plain / environment.MANIFEST).read_text()) == before
    assert environment.files_changed(plain) == []
    [other] = [p for p in (own_cache / "envs").glob("coreai-torch-0.4.2-pins-*") if p.is_dir()]
    manifest = json.loads((other / environment.MANIFEST).read_text())
    assert manifest["extra"] == [str(package)] and "localpkg" in manifest["packages"]
    assert sorted(p.name for p in system_tmp.iterdir()) == []
    assert os.path.exists(plain / "bin" / "python")
