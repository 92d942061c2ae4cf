"""The one torch every environment holds: the shared CPU install (`environment.shared_torch`), seen
through a `.pth` file, never a torch of the environment's own.

An environment's requirements (a converter's dependencies, a recipe's transformers and
pocket-tts) are resolved first with torch pinned to the shared install's exact version, then
installed without dependency resolution and without torch. So a requirement that would pull
another torch is refused before anything is downloaded, in one line naming the package that asks
for it; so is one that would pull a CUDA package (nvidia-*, triton: gigabytes a CPU-only
measurement never uses), with the package that pulled it. Left to itself, an installer sees no
torch in the new environment (the `.pth` is not a place it looks) and resolves the newest, CUDA
build included, which the environment's own site-packages would then put before the shared one.

After the install, the environment is checked from inside: `import torch` must find the shared
install, and no CUDA distribution may be visible.

One exception: an environment a measurement builds beside a torch that is itself a CUDA build
(`scripts/torch-sensitivity --torch-dir`, the PyPI wheel of another release; never used to
answer) holds that torch's CUDA libraries. The shared torch never is one (`torch_install` refuses
it).
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from pathlib import Path

from oracle.catalog.releases import EnvError
from oracle.envs.installer import (
    Installer,
    canonical,
    cuda_torch,
    install_failure,
    requirement_name,
    run_step,
)

# distributions that exist only for a CUDA build of torch
_CUDA = re.compile(r"^(nvidia-.+|triton)$")
# `pkg depends on torch==X` (uv: `all versions of pkg depend on`; pip: `pkg 1.0 depends on`)
_ASKS_TORCH = re.compile(
    r"([A-Za-z0-9][A-Za-z0-9_.-]*)(?:==\S+| \d\S*)? depends? on (torch(?![\w-])[^\s,;]*)"
)


def shared_version(torch_site: Path) -> str:
    """The exact version of the torch installed at `torch_site` (`2.13.0+cpu`)."""
    for meta in sorted(torch_site.glob("torch-*.dist-info/METADATA")):
        found = re.search(r"^Version: (\S+)", meta.read_text(errors="replace"), re.MULTILINE)
        if found:
            return found.group(1)
    raise EnvError(f"no torch is installed at {torch_site}: rebuild it (`inventory envs build`)")


def resolved_beside(
    tool: Installer,
    python: Path,
    requirements: list[str],
    torch_site: Path,
    log: Path,
    what: str,
) -> list[str]:
    """`requirements` resolved with torch pinned to the one at `torch_site`: what to install
    with `--no-deps` (torch left out, its own requirements kept). EnvError, one line naming the
    package, when they need another torch or a CUDA package."""
    version = shared_version(torch_site)
    with tempfile.TemporaryDirectory(dir=log.parent, prefix=f".{log.name}.") as tmp:
        constraints = Path(tmp) / "shared-torch.txt"
        constraints.write_text(f"torch=={version}\n")
        # torch's own requirements come with it; torch itself joins the resolution only where
        # a requirement asks for it (a measurement's torch need not be on the package sources)
        asked = [*requirements, *_torch_requires(python, log)]
        proc, resolution = tool.resolve(python, asked, constraints, log)
    if proc.returncode != 0:
        raise EnvError(_refusal(proc, requirements, version, what, log))
    cuda = [r for r in resolution if _CUDA.match(r.name)]
    if cuda and cuda_torch(torch_site) is None:
        pulled = ", ".join(f"{r.name} (via {', '.join(r.via) or 'a requirement'})" for r in cuda)
        raise EnvError(
            f"{what}: refused: it would install the CUDA package(s) {pulled}; every "
            f"environment holds the shared CPU torch {version} (log: {log})"
        )
    return [r.pin for r in resolution if r.name != "torch"]


# Run inside the new environment (it sees the held torch through its `.pth`): torch's own
# requirements, with environment markers evaluated there.
_TORCH_REQUIRES = """
import importlib.metadata as md, json
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
out = []
for raw in md.requires("torch") or []:
    req = Requirement(raw)
    if req.marker is None or req.marker.evaluate({"extra": ""}):
        out.append(str(req))
print(json.dumps(out))
"""


def _torch_requires(python: Path, log: Path) -> list[str]:
    found = run_step([str(python), "-I", "-c", _TORCH_REQUIRES], log, "torch's requirement list")
    return list(json.loads(found))


def _refusal(
    proc: subprocess.CompletedProcess[str],
    requirements: list[str],
    version: str,
    what: str,
    log: Path,
) -> str:
    """One line for a resolution that failed: the package that asks for another torch, when
    that is why, else the installer's own explanation."""
    text = " ".join(ln.strip() for ln in (proc.stdout + proc.stderr).splitlines())
    asks = [(p, s) for p, s in _ASKS_TORCH.findall(text) if canonical(p) != "torch"]
    if asks:
        package, spec = asks[0]
        return (
            f"{what}: refused: {package} depends on {spec}, but every environment holds the "
            f"shared torch {version} (log: {log})"
        )
    own = [r for r in requirements if requirement_name(r) == "torch"]
    if own:
        return (
            f"{what}: refused: the requirement {own[0]} is not the shared torch {version}, "
            f"which every environment holds (log: {log})"
        )
    return install_failure(proc, log, what)


# Run inside the environment: where `import torch` would load it from (found without importing
# it), and every CUDA distribution it sees with the distributions that require each.
_HELD_SCRIPT = """
import importlib.metadata as md, importlib.util, json, re, sys
spec = importlib.util.find_spec("torch")
cuda = re.compile(r"^(nvidia-.+|triton)$")
def canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()
found = {}
requires = {}
for dist in md.distributions():
    name = canonical(dist.metadata["Name"] or "")
    if cuda.match(name):
        found[name] = []
    for raw in dist.requires or []:
        requires.setdefault(canonical(re.split(r"[<>=!~ ;\\[(@]", raw, 1)[0]), set()).add(name)
for name in found:
    found[name] = sorted(requires.get(name, ()))
print(json.dumps({"origin": spec.origin if spec else None, "cuda": found}))
"""


def check_held(python: Path, torch_site: Path, log: Path, name: str) -> str:
    """The version of the shared torch the environment of `python` imports; EnvError, one line,
    when it would import another torch or sees a CUDA distribution (and who requires it)."""
    seen = json.loads(run_step([str(python), "-c", _HELD_SCRIPT], log, f"the torch {name} imports"))
    version = shared_version(torch_site)
    origin = seen.get("origin")
    if not origin or not Path(origin).resolve().is_relative_to(torch_site.resolve()):
        raise EnvError(
            f"{name}: imports torch from {origin or 'nowhere'}, not the shared torch "
            f"{version} ({torch_site}): rebuild it (log: {log})"
        )
    if seen["cuda"] and cuda_torch(torch_site) is None:
        held = ", ".join(
            f"{n} (required by {', '.join(by) or 'nothing installed'})"
            for n, by in sorted(seen["cuda"].items())
        )
        raise EnvError(f"{name}: holds the CUDA package(s) {held}; rebuild it (log: {log})")
    return version
