"""The `trace` extra on first use: the interpreter that builds a bundle's module.

Building a bundle's module (`inventory verify`, `plan --verify`, `affected --verify`, `trace` of
a project target or stand-in) imports its upstream packages (transformers, pocket-tts): the
project's `trace` extra (pyproject.toml). Where the project's own interpreter has every one of
them at its pinned version (`scripts/test` installs the extra), that interpreter builds. Where
it lacks them (the README's set-up installs no extra, nor does a plain install), an
environment of the store is built on first use, like a converter environment: progress lines,
a lock (a second process waits for the first, then reuses its environment), a manifest written
last (an interrupted build is rebuilt), and one line naming the build log when it cannot be
built (`oracle.envs.environment.ensure_venv`). It sees the store's shared torch, the torch the
project pins,
and nothing else: a requirement that would pull another torch or a CUDA package is refused
(`oracle.envs.held_torch`). So a module is built with the same torch either way: an interpreter
whose torch is another release than the shared one is not used to build, its extra
notwithstanding.

Why an environment of the store and not the project's interpreter: installing into the
interpreter the tool runs from changes packages under a running process (and a failed install
leaves it half-changed), where it may not be the project's to change (a system or CI Python);
the store's environment is built beside it and used only once complete, is shared by every
checkout that uses the same cache, and `cache du` counts it like the others.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import re
import sys
import tomllib
from pathlib import Path

from oracle.catalog import Catalog, EnvError, base_version
from oracle.envs import ensure_venv
from oracle.infra import Progress

EXTRA = "trace"
PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
_PIN = re.compile(r"([A-Za-z0-9][A-Za-z0-9_.-]*)\s*==\s*([A-Za-z0-9_.+!-]+)")
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([^"']+)["']""")
# An install that failed in this process is not tried again for the next bundle: one attempt
# per run, its line given to every bundle that needed it.
_FAILED: dict[str, str] = {}


def requirements() -> tuple[str, ...]:
    """The `trace` extra's requirements as the installed package declares them (pyproject.toml
    where the package is not installed, e.g. run from a source tree)."""
    try:
        declared = md.requires("inventory") or []
    except md.PackageNotFoundError:
        data = tomllib.loads(PYPROJECT.read_text())
        return tuple(data["project"]["optional-dependencies"][EXTRA])
    out = []
    for raw in declared:
        spec, _, marker = raw.partition(";")
        found = _EXTRA_MARKER.search(marker)
        if found and found.group(1) == EXTRA:
            out.append(spec.strip())
    return tuple(out)


def installed_here(reqs: tuple[str, ...]) -> bool:
    """Every requirement is an exact pin (`name==version`) this interpreter has installed. Any
    other form is not checked here: the store's environment installs it as written."""
    for req in reqs:
        pin = _PIN.fullmatch(req.replace(" ", ""))
        if pin is None:
            return False
        try:
            if md.version(pin.group(1)) != pin.group(2):
                return False
        except md.PackageNotFoundError:
            return False
    return True


def env_name(reqs: tuple[str, ...], torch: str) -> str:
    """The store environment for a set of requirements beside the shared torch `torch` (shared
    with a recipe trace that asks for the same ones: `[bundles.X.recipe.environment]
    requirements`). The torch is part of the name: an environment built beside another torch,
    or before every environment was held to the shared one, is never reused."""
    key = "\n".join([*sorted(reqs), f"shared torch=={torch}"])
    return "trace-" + hashlib.sha256(key.encode()).hexdigest()[:12]


def same_torch_here(catalog: Catalog) -> bool:
    """This interpreter's torch is the release the shared torch installs (local label aside)."""
    try:
        return base_version(md.version("torch")) == base_version(catalog.torch)
    except md.PackageNotFoundError:
        return False


def requirements_env(reqs: tuple[str, ...], catalog: Catalog, progress: Progress) -> str:
    """The python of the store environment holding `reqs` (built on first use)."""
    name = env_name(reqs, catalog.torch)
    if name in _FAILED:
        raise EnvError(_FAILED[name])
    try:
        return str(ensure_venv(name, reqs, catalog, progress))
    except EnvError as exc:
        _FAILED[name] = str(exc)
        raise


def module_python(catalog: Catalog, progress: Progress = lambda _: None) -> str:
    """The interpreter that builds bundle modules: this one if it has the `trace` extra, else
    the store's environment of it (installed now if need be; EnvError, one line, if it cannot
    be)."""
    reqs = requirements()
    here = installed_here(reqs)
    if here and same_torch_here(catalog):
        return sys.executable
    name = env_name(reqs, catalog.torch)
    why = (
        f"which this interpreter has beside another torch than the shared {catalog.torch}"
        if here
        else "which this interpreter lacks"
    )
    progress(
        f"the bundles' modules need the `{EXTRA}` extra ({', '.join(reqs)}), {why}: using "
        f"the store's environment {name} (built once)"
    )
    try:
        return requirements_env(reqs, catalog, progress)
    except EnvError as exc:
        raise EnvError(
            f"the `{EXTRA}` extra ({', '.join(reqs)}) could not be installed into the store: {exc}"
        ) from None
