"""Converter environments: exact versions, recorded deviations, half-built and failed builds."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from bundles import export
from cli import invoke

from oracle.catalog.releases import Catalog, EnvError, Release, load_catalog
from oracle.clients.worker_pool import Pool
from oracle.envs import bytecode
from oracle.envs import environment as envs_mod
from oracle.envs.environment import ensure_env, ready_env
from oracle.infra.paths import cache_root
from oracle.infra.progress import Notice


def test_unknown_release_is_one_clear_error():
    with pytest.raises(EnvError, match=r"coreai-torch 9\.9\.9 is not a supported release"):
        load_catalog().release("9.9.9")


@pytest.mark.slow
def test_each_release_has_its_pinned_core_and_the_shared_torch(env, catalog, tmp_path):
    for version, release in catalog.releases.items():
        e = env(version)
        assert e.packages["coreai-torch"] == version
        assert e.packages["coreai-core"] == release.core
        assert e.packages["torch"].startswith(catalog.torch)
        with Pool(tmp_path) as pool:
            hello = pool.worker(e).call({"op": "hello"})
        assert hello["versions"]["coreai-core"] == release.core
        # One torch for all: the environment imports it from the shared install.
        assert "torch" not in os.listdir(envs_mod.site_packages(e.python))


@pytest.mark.slow
def test_declared_torch_bounds_that_are_not_met_are_recorded(env):
    deviations = {v: env(v).deviations for v in ("0.4.0", "0.4.1", "0.4.2")}
    assert any("torch<=2.11" in d for d in deviations["0.4.1"]), deviations
    assert deviations["0.4.2"] == ()


@pytest.mark.slow
def test_a_torch_deviation_cites_the_measurement_that_justifies_it(env, catalog):
    """converters.toml [torch.checked] (written by scripts/torch-sensitivity) is cited beside the
    deviation it justifies, and nowhere else."""
    checks = {c.torch: c for c in catalog.checked}
    assert set(checks) >= {"2.9.0", "2.11.0"}
    assert all(c.identical == c.probes > 0 and c.against == catalog.torch for c in checks.values())
    cited = envs_mod.deviations_with_evidence(env("0.4.1"), catalog)
    assert any("torch<=2.11" in d for d in cited)
    assert checks["2.9.0"].cited() in cited and checks["2.11.0"].cited() in cited
    assert "give the same program for" in checks["2.9.0"].cited()
    assert envs_mod.deviations_with_evidence(env("0.4.2"), catalog) == []


@pytest.mark.slow
def test_a_half_built_environment_is_never_used_and_a_failed_install_is_one_line(scratch_cache):
    bogus = Catalog("2.13.0", {"0.4.2": Release("0.4.2", "9.9.9", ())})
    # pins other than the packaged catalog's: a folder of their own
    leftover = envs_mod.env_path("0.4.2", bogus)
    assert leftover.name.startswith("coreai-torch-0.4.2-pins-")
    (leftover / "bin").mkdir(parents=True)
    (leftover / "junk").write_text("interrupted build")
    assert ready_env("0.4.2", bogus) is None
    with pytest.raises(EnvError) as info:
        ensure_env("0.4.2", bogus)
    message = str(info.value)
    assert "coreai-core==9.9.9" in message and "\n" not in message
    # it names the build log, which holds pip's own output, and says how to build ahead of time
    log = scratch_cache / "envs" / f"{leftover.name}.build.log"
    assert f"(log: {log})" in message and "coreai-core==9.9.9" in log.read_text()
    assert "`inventory envs build` builds environments ahead of time" in message
    assert not (leftover / "junk").exists(), "the leftover must have been removed, not reused"
    assert ready_env("0.4.2", bogus) is None  # and the failed build is not marked ready


def test_a_manifest_is_what_makes_an_environment_ready(tmp_path, monkeypatch):
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path))
    path = tmp_path / "envs" / "coreai-torch-0.4.2"
    path.mkdir(parents=True)
    assert ready_env("0.4.2") is None
    (path / "inventory-env.json").write_text(
        json.dumps(
            {
                "converter": "0.4.2",
                "core": "1.0.0b2",
                "packages": {"coreai-core": "1.0.0b2"},
                "deviations": [],
            }
        )
    )
    ready = ready_env("0.4.2")
    assert ready is not None and ready.runtime == "linux-cpu, coreai-core 1.0.0b2"


def test_an_environment_that_cannot_be_built_fails_under_ci_and_skips_elsewhere(monkeypatch):
    import suite_envs

    def cannot(version, catalog=None, progress=None):
        raise EnvError(f"could not install coreai-torch=={version}: no network")

    monkeypatch.setattr(suite_envs, "ensure_env", cannot)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI: coreai-torch 0.4.2 environment cannot"):
        suite_envs.need_env("0.4.2", load_catalog())
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="cannot be built here: could not install"):
        suite_envs.need_env("0.4.2", load_catalog())


@pytest.mark.slow
def test_an_environment_whose_file_changed_is_rebuilt_before_a_worker_runs_in_it(
    env, catalog, tmp_path
):
    """Its manifest records every installed file's sha256; a worker never starts in it while a
    file differs: the environment is rebuilt first, and the run says so (a Notice, which the
    terminal keeps on screen)."""
    shared = json.loads((env("0.4.2").path / "inventory-env.json").read_text())["shared_torch"]
    name = f"damage-test-{os.getpid()}"
    e = envs_mod.ensure_env_on_torch("0.4.2", name, Path(shared), catalog)
    try:
        target = envs_mod.site_packages(e.python) / "coreai_torch" / "__init__.py"
        original = target.read_bytes()
        # written as an editor writes a file (a new one renamed over it), so the copy in uv's
        # cache and in the other environments, which share it by hard link, stay as they are
        changed = target.with_name("__init__.py.new")
        changed.write_bytes(original + b"\nraise SystemExit('damaged')\n")
        os.replace(changed, target)
        assert envs_mod.files_changed(e.path) == [str(target.relative_to(e.path)) + " changed"]
        said: list[str] = []
        with Pool(tmp_path, progress=said.append) as pool:
            hello = pool.worker(e).call({"op": "hello"})
        assert hello["versions"]["coreai-torch"] == "0.4.2"
        assert target.read_bytes() == original
        notices = [s for s in said if isinstance(s, Notice)]
        assert (
            len(notices) == 1
            and notices[0].startswith(f"{name}: ")
            and "coreai_torch/__init__.py changed since it was built; rebuilding it" in notices[0]
        )
        assert envs_mod.files_changed(e.path) == []
    finally:
        shutil.rmtree(e.path, ignore_errors=True)


# A probe other than the warm-up's own tiny module, exported and converted with bytecode writing
# off (as a worker runs): prints the modules of torch, sympy, mpmath and the converter that it
# imported without their bytecode on disk.
_UNCOMPILED = """
import os, sys, torch, torch.export
from coreai_torch import TorchConverter
m = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Softmax(dim=-1)).eval()
ep = torch.export.export(m, (torch.randn(2, 3),)).run_decompositions()
str(TorchConverter().add_exported_program(ep).to_coreai())
roots = ("torch", "sympy", "mpmath", "coreai_torch")
print(sorted(n for n, mod in list(sys.modules.items())
             if n.split(".")[0] in roots and isinstance(getattr(mod, "__cached__", None), str)
             and not os.path.exists(mod.__cached__)))
"""


@pytest.mark.slow
def test_a_worker_leaves_the_bytecode_its_first_export_compiled_for_the_next(
    env, catalog, tmp_path
):
    # without it every worker start compiled ~1,200 modules from source (2.7 s of CPU each start)
    for version in sorted(catalog.releases):
        export(env, version, tmp_path / version)  # a worker converts the asset probe
        proc = subprocess.run(
            [str(env(version).python), "-c", _UNCOMPILED],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        )
        assert proc.returncode == 0, (version, proc.stderr[-800:])
        assert proc.stdout.splitlines()[-1] == "[]", (version, proc.stdout[-800:])


@pytest.mark.slow
def test_envs_build_returns_once_the_environment_s_warm_up_has_written_its_bytecode(
    scratch_cache,
):
    # built ahead of time, whole: at a command's exit a warm-up still running is stopped
    ran = invoke("envs", "build", "0.4.2")
    assert ran.returncode == 0, ran.stderr
    log = (scratch_cache / "envs" / "coreai-torch-0.4.2.build.log").read_text()
    # written when the warm-up has finished: it takes seconds after the environment is ready
    assert any(
        ln.startswith("# bytecode of a worker's imports written (exit 0)")
        for ln in log.splitlines()
    ), log[-600:]


_COMPILED = re.compile(r"\(exit 0\) (\d+) modules(?: compiled, (\d+) of the held torch)?")


@pytest.mark.slow
def test_the_held_torch_is_warmed_up_once_for_the_environments_built_side_by_side_on_it(
    env, catalog, tmp_path, monkeypatch
):
    # each environment's warm-up, begun as it was ready, compiled the held torch's files again
    # beside the others': three environments built side by side compiled torch three times. In
    # a run an environment has no warm-up of its own (its first worker compiles what is its
    # own); built ahead of time (`envs build`), its warm-up runs after the held torch's.
    real = cache_root()
    env("0.4.2")  # uv's cache holds every wheel: the builds below download nothing
    monkeypatch.setenv("INVENTORY_CACHE", str(tmp_path))
    for kept in ("uv", "tools"):
        (tmp_path / kept).symlink_to(real / kept)
    versions = sorted(catalog.releases)[:2]
    with ThreadPoolExecutor(max_workers=2) as builders:
        built = list(builders.map(lambda v: ensure_env(v, catalog), versions))
    held_site = envs_mod.held_site(built[0])
    assert held_site is not None
    bytecode.wait(built[0].python, held=held_site)  # what `envs build` waits for before it ends
    logs = [each.path.parent / f"{each.name}.build.log" for each in built]
    assert not any("# bytecode of" in log.read_text() for log in logs)  # none of their own
    for each in built:
        envs_mod.warmed_up(each)  # built ahead of time: warmed up, after the held torch's
    torch_log = (tmp_path / "envs" / f"torch-{catalog.torch}.build.log").read_text()
    held = [m for ln in torch_log.splitlines() if (m := _COMPILED.search(ln))]
    # a fresh install: the held torch's warm-up wrote the bytecode of what a worker imports
    assert len(held) == 1 and int(held[0].group(1)) > 500, torch_log[-600:]
    for each in built:
        log = (each.path.parent / f"{each.name}.build.log").read_text()
        own = [m for ln in log.splitlines() if (m := _COMPILED.search(ln))]
        assert len(own) == 1 and own[0].group(2) is not None, log[-600:]
        # the environment's own modules (the converter, coreai-core, sympy) were compiled,
        # none of the held torch's
        assert int(own[0].group(1)) > 0 and int(own[0].group(2)) == 0, log[-600:]
