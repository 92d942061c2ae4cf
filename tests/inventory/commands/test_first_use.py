"""Every command works after the README's set-up: on a fresh clone whose `.venv` has no extra
(`scripts/inventory` installs none), the whole-program check of `plan --verify` installs what
building a bundle's module needs (the `trace` extra) into an environment of the store on first
use, and checks the bundle whole instead of answering "No module named 'transformers'".

Slow and costly: it builds the clone's `.venv` for real, as a user's first run does, and the
extra's environment where the session's cache does not hold it yet (CI's fresh cache: every
run); measured on the 2-core machine, see the report of the change that added it. The clone's
cache reaches the session's environments (so no converter is built twice, and the extra's
environment, once built, is the session's) and has a results store of its own (so the module is
built, not read back).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from inventory.trace import extra
from oracle.catalog import load_catalog
from oracle.envs.environment import MANIFEST
from oracle.infra.paths import envs_dir

ROOT = Path(__file__).resolve().parents[3]


def _fresh_clone(dest: Path) -> Path:
    """The checkout's files as a clone has them: tracked ones and new ones not ignored (so the
    change under test is in it), no `.venv`, no store."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    )
    for name in listed.stdout.decode().split("\0"):
        source = ROOT / name
        if name and source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def _cache_with_the_sessions_environments(cache: Path) -> Path:
    """An empty cache whose environments are the session's (a symbolic link to its `envs`)."""
    cache.mkdir()
    (cache / "envs").symlink_to(envs_dir())
    return cache


def test_plan_verify_checks_mimi_whole_from_a_fresh_clone(tmp_path, converter_envs):
    clone = _fresh_clone(tmp_path / "clone")
    assert converter_envs  # built in the session's cache, before the clone's first run
    cache = _cache_with_the_sessions_environments(tmp_path / "cache")
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("INVENTORY_STORE", "VIRTUAL_ENV", "PYTHONPATH")
    }
    proc = subprocess.run(
        [
            str(clone / "scripts" / "inventory"),
            "plan",
            "--to",
            "0.4.2",
            "--verify",
            "--bundle",
            "mimi",
            "--json",
        ],
        cwd=clone,
        capture_output=True,
        text=True,
        env={**environ, "INVENTORY_CACHE": str(cache)},
    )

    # the set-up installed no extra into the clone's interpreter ...
    venv_python = clone / ".venv" / "bin" / "python"
    assert (
        subprocess.run(
            [str(venv_python), "-c", "import transformers"], capture_output=True
        ).returncode
        != 0
    )
    # ... and the check built the module with the store's environment of it, saying so
    reqs = extra.requirements()
    name = extra.env_name(reqs, load_catalog().torch)
    assert (envs_dir() / name / MANIFEST).is_file(), proc.stderr[-3000:]
    said = " ".join(proc.stderr.split())  # progress lines wrap at the console's width
    assert (
        f"need the `trace` extra ({', '.join(reqs)}), which this interpreter lacks: using "
        f"the store's environment {name}"
    ) in said
    assert "No module named" not in proc.stdout + said

    assert proc.returncode == 0, proc.stderr[-3000:]
    (mimi,) = json.loads(proc.stdout)["result"]["bundles"]
    whole = mimi["verify"]
    assert whole is not None and not whole.get("error"), whole
    assert whole["status"] != "inconclusive" and whole["consistent"], whole
