"""How environments are built: the machine's pip configuration said to uv, the installer chosen,
a CUDA torch refused, and every installed file recorded and checked (no environment needed)."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from cli import invoke, one_line

from inventory.terminal import Phases
from oracle.catalog.releases import EnvError, load_catalog
from oracle.envs import files as env_files
from oracle.envs import installer, pip_config
from oracle.envs.environment import MANIFEST, _checked_build, files_changed

LISTING = """\
:env:.find-links='/srv/wheels'
:env:.default-timeout='180'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/pip/constraints.txt'
global.extra-index-url='file:///srv/a/simple file:///srv/b/simple'
global.find-links='/ignored/because/the/variable/wins'
install.index-url='https://mirror.example/simple'
global.index-url='https://ignored.example/simple'
global.prefer-binary='true'
global.only-binary=':all:'
global.some-future-option='x'
"""


def test_pip_config_list_is_read_with_pips_precedence():
    values = pip_config.parse(LISTING)
    assert values["find-links"] == "/srv/wheels"  # PIP_FIND_LINKS over pip.conf
    assert values["index-url"] == "https://mirror.example/simple"  # [install] over [global]
    assert values["extra-index-url"] == "file:///srv/a/simple file:///srv/b/simple"


def test_pip_options_become_uv_flags_and_variables():
    uv = pip_config.PipConfig(pip_config.parse(LISTING), "test").uv()
    args = list(uv.args)
    assert args[args.index("--index-url") + 1] == "https://mirror.example/simple"
    extra = [args[i + 1] for i, a in enumerate(args) if a == "--extra-index-url"]
    assert extra == ["file:///srv/a/simple", "file:///srv/b/simple"]
    assert args[args.index("--find-links") + 1] == "/srv/wheels"
    assert args[args.index("--constraint") + 1] == "/etc/pip/constraints.txt"
    assert args[args.index("--only-binary") + 1] == ":all:"
    assert uv.env == {
        "SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
        "UV_HTTP_TIMEOUT": "180",
    }
    # said in the build log, never silently dropped; cosmetic options are not listed
    assert uv.skipped == ("some-future-option",)
    assert "some-future-option" in uv.describe()


def test_the_machines_pip_configuration_is_read_from_pip_itself(tmp_path, monkeypatch):
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\nfind-links = /from/the/file\nconstraint = /c.txt\n[install]\nno-index = true\n"
    )
    monkeypatch.setenv("PIP_CONFIG_FILE", str(conf))
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///from/the/variable")
    monkeypatch.delenv("PIP_FIND_LINKS", raising=False)
    config = pip_config.read.__wrapped__()
    assert config.values["find-links"] == "/from/the/file"
    assert config.values["extra-index-url"] == "file:///from/the/variable"
    args = config.uv().args
    assert "--no-index" in args and "/c.txt" in args


def test_pip_is_chosen_when_asked_and_says_why(monkeypatch):
    monkeypatch.setenv("INVENTORY_INSTALLER", "pip")
    tool = installer.chosen.__wrapped__()
    assert tool.name == "pip" and "INVENTORY_INSTALLER=pip" in tool.note
    assert "INVENTORY_INSTALLER=pip" in tool.describe()


def test_uv_is_the_binary_of_the_uv_package_whatever_is_beside_the_interpreter(
    tmp_path, monkeypatch
):
    # an install made with pip (`pip install -e .`) has no uv beside its interpreter and maybe
    # none on PATH: the `uv` dependency's binary is found all the same
    import uv

    monkeypatch.setattr(installer.sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("INVENTORY_INSTALLER", raising=False)
    assert installer.find_uv() == Path(uv.find_uv_bin())
    tool = installer.chosen.__wrapped__()
    assert tool.name == "uv" and tool.uv == Path(uv.find_uv_bin()) and not tool.note


def test_without_any_uv_pip_builds_and_says_so_in_one_line(tmp_path, monkeypatch):
    import uv

    def absent() -> str:
        raise FileNotFoundError("no uv binary in this install")

    monkeypatch.setattr(uv, "find_uv_bin", absent)
    monkeypatch.setattr(installer.sys, "executable", str(tmp_path / "bin" / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("INVENTORY_INSTALLER", raising=False)
    tool = installer.chosen.__wrapped__()
    assert tool.name == "pip"
    assert "uv not found" in tool.note and "building with pip" in tool.note
    assert "\n" not in tool.note


def test_an_unknown_installer_is_one_line_and_exit_2():
    proc = invoke("envs", "list", INVENTORY_INSTALLER="conda")
    assert proc.returncode == 2
    assert "INVENTORY_INSTALLER='conda': uv or pip" in one_line(proc)


def _dist_info(site: Path, name: str, version: str, metadata: str = "") -> Path:
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n{metadata}\n"
    )
    return info


def test_a_cuda_torch_is_told_apart_from_the_cpu_wheel(tmp_path):
    _dist_info(tmp_path / "cpu", "torch", "2.13.0+cpu", "Requires-Dist: sympy>=1.13.3")
    _dist_info(tmp_path / "cu", "torch", "2.13.0", "Requires-Dist: nvidia-cublas==13.4.1.3")
    _dist_info(tmp_path / "label", "torch", "2.13.0+cu130")
    assert installer.cuda_torch(tmp_path / "cpu") is None
    assert "nvidia-cublas" in (installer.cuda_torch(tmp_path / "cu") or "")
    assert "CUDA build" in (installer.cuda_torch(tmp_path / "label") or "")


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _install(root: Path, body: bytes, recorded: bytes | None = None) -> Path:
    """A distribution as an installer leaves it: its files, and a RECORD of their sha256."""
    site = root / "lib" / "python3.11" / "site-packages"
    (site / "demo").mkdir(parents=True)
    (site / "demo" / "__init__.py").write_bytes(body)
    info = _dist_info(site, "demo", "1.0")
    (info / "RECORD").write_text(
        f"demo/__init__.py,{_record_hash(recorded or body)},"
        f"{len(body)}\ndemo-1.0.dist-info/METADATA,,\n"
        f"demo/__pycache__/__init__.cpython-311.pyc,,\n"
        f"demo-1.0.dist-info/RECORD,,\n"
    )
    return site


def test_an_environments_files_are_recorded_and_a_change_is_found(tmp_path):
    root = tmp_path / "env"
    site = _install(root, b"VALUE = 1\n")
    snap = env_files.snapshot(root, [site])
    assert not snap.damaged
    assert [(d.name, d.version) for d in snap.distributions] == [("demo", "1.0")]
    part = env_files.record(root, snap)
    (root / MANIFEST).write_text(json.dumps(part))
    assert files_changed(root) == []
    target = site / "demo" / "__init__.py"
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    assert files_changed(root) == []  # touched, same content: hashed again and intact
    target.write_bytes(b"VALUE = 2\n")
    assert files_changed(root) == ["lib/python3.11/site-packages/demo/__init__.py changed"]
    target.unlink()
    assert files_changed(root) == ["lib/python3.11/site-packages/demo/__init__.py is missing"]
    target.write_bytes(b"VALUE = 1\n")
    table = root / env_files.FILES
    table.write_text(table.read_text().replace('"lib/', '"x/lib/'))
    assert files_changed(root) == [f"{env_files.FILES} does not match the manifest"]


def test_a_build_rereads_no_file_an_earlier_build_hashed_and_still_finds_an_edited_one(
    tmp_path, monkeypatch
):
    known = tmp_path / "uv-cache" / "known.json"
    known.parent.mkdir()
    first = tmp_path / "first"
    assert not env_files.snapshot(first, [_install(first, b"VALUE = 1\n")], known=known).damaged
    # another build from uv's warm cache, in another process: the same files, hard-linked
    copy = tmp_path / "copy"
    shutil.copytree(first, copy, copy_function=os.link)
    site = copy / "lib" / "python3.11" / "site-packages"
    monkeypatch.setattr(env_files, "_HASHED", {})
    read: list[Path] = []
    hash_file = env_files.sha256_file

    def reading(path: Path, stat: os.stat_result | None = None) -> str:
        read.append(path)
        return hash_file(path, stat)

    monkeypatch.setattr(env_files, "sha256_file", reading)
    snap = env_files.snapshot(copy, [site], known=known)
    assert not snap.damaged and len(snap.files) == 3
    assert read == [site / "demo-1.0.dist-info" / "RECORD"]  # its own digest, not a check
    # one file of the copy edited (the same size): its stat changed, so it is read and found
    (site / "demo" / "__init__.py").write_bytes(b"VALUE = 2\n")
    read.clear()
    snap = env_files.snapshot(copy, [site], known=known)
    assert snap.damaged == {"demo": ("lib/python3.11/site-packages/demo/__init__.py",)}
    assert site / "demo" / "__init__.py" in read


def test_a_distribution_installed_damaged_is_installed_again_and_damaged_twice_is_an_error(
    tmp_path,
):
    root = tmp_path / "env"
    attempts: list[int] = []
    said: list[str] = []
    tool = installer.Installer("pip", "test")

    def build(fixed_after: int) -> list[Path]:
        attempts.append(1)
        good = len(attempts) > fixed_after
        shutil.rmtree(root, ignore_errors=True)  # a build starts from nothing
        return [_install(root, b"VALUE = 1\n", None if good else b"VALUE = 0\n")]

    part = _checked_build(root, lambda: build(1), tool, tmp_path / "log", said.append)
    assert len(attempts) == 2 and part["distributions"]["demo"]["files"] == 3
    assert any("demo installed damaged" in line for line in said)
    attempts.clear()
    with pytest.raises(EnvError, match="differ from their RECORD twice"):
        _checked_build(root, lambda: build(5), tool, tmp_path / "log", said.append)


def test_the_status_shows_the_latest_line_of_each_phase():
    phases = Phases(keep=3)
    phases.update("coreai-torch-0.4.0: creating (uv 0.13.9)")
    phases.update("sweep 0.4.1->0.4.2 [1/50]: pad/mimi")
    phases.update("coreai-torch-0.4.0: ready")
    shown = phases.update("sweep 0.4.1->0.4.2 [2/50]: arange/mimi").plain.splitlines()
    assert shown == ["coreai-torch-0.4.0: ready", "sweep 0.4.1->0.4.2 [2/50]: arange/mimi"]
    phases.update("mimi: checking")
    shown = phases.update("sam3: checking").plain.splitlines()
    assert shown == ["sweep 0.4.1->0.4.2 [2/50]: arange/mimi", "mimi: checking", "sam3: checking"]


def test_an_install_made_with_pip_builds_environments_with_uv(env, tmp_path):
    """The tool installed as a user who never runs the set-up script would (`pip install -e .`
    into a plain venv: no uv beside its interpreter, none on PATH), then a cold `affected --fix
    40`: the environment it builds is built by uv (its log's first line), through the `uv`
    dependency's binary. Only 0.4.2's is built: the shared torch and 0.4.1's are borrowed."""
    import subprocess
    import sys

    from cli import ROOT
    from registries import conv_transpose_registry

    from oracle.infra.paths import envs_dir

    old = env("0.4.1")
    venv = tmp_path / "venv"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(venv)], check=True, capture_output=True)
    assert not (venv / "bin" / "uv").exists()
    pip = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "-e", str(ROOT)],
        capture_output=True,
        text=True,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    cache = tmp_path / "cache"
    (cache / "envs").mkdir(parents=True)
    torch = envs_dir() / f"torch-{load_catalog().torch}"
    (cache / "envs" / torch.name).symlink_to(torch)
    (cache / "envs" / old.path.name).symlink_to(old.path)
    (cache / "uv").symlink_to(installer.uv_cache())
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("INVENTORY_", "VIRTUAL_ENV"))
    }
    # no uv on PATH: only the interpreter's own folder and the system's
    environ["PATH"] = f"{venv / 'bin'}:/usr/bin:/bin"
    assert shutil.which("uv", path="/usr/bin:/bin") is None
    ran = subprocess.run(
        [
            str(venv / "bin" / "inventory"),
            "affected",
            "--fix",
            "40",
            "--registry",
            str(conv_transpose_registry(tmp_path, 23)),
            "--json",
        ],
        capture_output=True,
        text=True,
        env={**environ, "INVENTORY_CACHE": str(cache)},
        cwd=tmp_path,
    )
    assert json.loads(ran.stdout)["error"] is None, ran.stderr
    assert "building environments with pip" not in ran.stderr
    log = (cache / "envs" / "coreai-torch-0.4.2.build.log").read_text()
    assert log.splitlines()[0].startswith("# installer: uv "), log[:500]
