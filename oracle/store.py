"""The result store: where a probe comparison's result and evidence live, keyed by everything
that can change them.

A result is keyed by the probe spec, both sides' exact package versions and the oracle's own
code; it is built in a temp folder and renamed into place, so a reader never sees half of one and
two processes can share the store. Every evidence file's sha256 is recorded in `result.json`, so
a damaged entry is detected and recomputed, never trusted.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from oracle.envs import Env
from oracle.paths import cache_root
from oracle.results import ProbeResult, from_json, to_json
from oracle.spec import ProbeSpec

# The oracle's code a result depends on, beside the construct modules (the probe builders).
_CODE_FILES = ("worker.py", "worker_io.py", "probes.py", "asset_probe.py", "normalise.py",
               "stats.py", "compare.py", "results.py", "store.py", "checkpoint.py")
RESULT_FILE = "result.json"


@functools.cache
def code_digest() -> str:
    """Results depend on the oracle's own code as much as on the converter: key on it too.
    Computed once per process (the files do not change under a running process)."""
    here = Path(__file__).parent
    h = hashlib.sha256()
    for path in [here / name for name in _CODE_FILES] + sorted((here / "constructs").glob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()[:12]


def results_root() -> Path:
    return cache_root() / "results"


def env_identity(env: Env) -> dict[str, str]:
    keep = ("coreai-torch", "coreai-core", "torch", "numpy")
    return {k: env.packages.get(k, "?") for k in keep}


def cache_key(spec: ProbeSpec, old_env: Env, new_env: Env) -> str:
    payload = {"spec": spec.key_json(), "old": env_identity(old_env),
               "new": env_identity(new_env), "code": code_digest()}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:20]


def result_dir(spec: ProbeSpec, old_env: Env, new_env: Env) -> Path:
    return (results_root() /
            f"{spec.construct}-{old_env.converter}-{new_env.converter}-"
            f"{cache_key(spec, old_env, new_env)}")


def manifest(folder: Path) -> dict[str, str]:
    """sha256 of every evidence file, so a damaged stored result is detected, not trusted."""
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.name != RESULT_FILE:
            out[str(path.relative_to(folder))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def load_result(path: Path) -> ProbeResult | None:
    """A stored result, or None if absent, unreadable or damaged (then it is recomputed)."""
    try:
        data = json.loads((path / RESULT_FILE).read_text())
        result = from_json(data)
        if manifest(path) != data["files_sha256"]:
            return None
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return replace(result, cached=True)


def stored_code(path: Path) -> str | None:
    """The oracle code digest a stored result was made with."""
    try:
        return json.loads((path / RESULT_FILE).read_text()).get("code")
    except (OSError, ValueError):
        return None


@contextmanager
def building(final: Path) -> Iterator[Path]:
    """A temp folder beside `final` to build a result in; removed if the build fails."""
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}."))
    try:
        yield work
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def relocated(result: ProbeResult, work: Path, final: Path) -> ProbeResult:
    """The result with its evidence files where they will live once `work` is renamed."""

    def moved(files: dict[str, str]) -> dict[str, str]:
        out = {}
        for key, value in files.items():
            path = Path(value) if value else None
            if path is not None and path.is_relative_to(work):
                value = str(final / path.relative_to(work))
            out[key] = value
        return out

    m = result.measurement
    return replace(
        result,
        old=replace(result.old, files=moved(result.old.files)),
        new=replace(result.new, files=moved(result.new.files)),
        measurement=replace(m, files=moved(m.files)) if m is not None else None,
        evidence=str(final),
    )


def publish(result: ProbeResult, work: Path, final: Path) -> ProbeResult:
    """Record the result with its manifest and move it into place; if another process got there
    first, keep theirs."""
    result = relocated(result, work, final)
    record = {**to_json(result), "key": final.name, "code": code_digest(),
              "files_sha256": manifest(work)}
    (work / RESULT_FILE).write_text(json.dumps(record, indent=2))
    try:
        work.rename(final)
        return result
    except OSError:
        pass
    theirs = load_result(final)
    if theirs is not None:
        shutil.rmtree(work, ignore_errors=True)
        return replace(theirs, cached=False)
    # A damaged entry is in the way: set it aside, then take its place.
    graveyard = final.with_name(f".{final.name}.damaged.{os.getpid()}")
    final.rename(graveyard)
    shutil.rmtree(graveyard, ignore_errors=True)
    work.rename(final)
    return result
