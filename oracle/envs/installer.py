"""How every environment the tool builds is made and filled: with uv when it can be had, else with
pip, said so.

uv keeps one cache for every environment (under the cache root, `uv/`): a wheel is downloaded and
unpacked there once, and each environment's files are hard links to it, so the shared torch,
the project's `.venv` and every converter environment cost one unpacking of torch between them.
uv is the binary of the `uv` package, a dependency of the tool (so any install of it, however
made, has it), else one beside this interpreter, else one on PATH; INVENTORY_INSTALLER=pip
builds with pip whatever is found (how `scripts/bench --cold` times pip beside uv). uv is told
the machine's pip configuration (`oracle/envs/pip_config.py`) and resolves across indexes as pip
does (the best match over all of them), so it finds what pip finds: on a machine whose CPU torch
wheel lies in a find-links folder, that wheel.

A hard link shares the file with uv's cache: damage to one is damage to both. That is why a build
checks every installed file against its distribution's RECORD (`oracle/envs/files.py`) and, where
one differs, drops that distribution from uv's cache and installs it again (`forget`).

An installer leaves nothing outside the store: each of its runs gets a TMPDIR of its own in the
store's scratch (`oracle/infra/scratch_dirs.py`), removed when it ends. uv takes a lock file in
TMPDIR for each source distribution it builds (`uv-setuptools-<digest>.lock`), and left one in
the system's temp directory for every build that needed one.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from oracle.catalog.releases import EnvError
from oracle.envs import pip_config
from oracle.infra.paths import cache_root
from oracle.infra.scratch_dirs import scratch
from oracle.infra.settings import INSTALLER_VAR, installer_choice

# uv's flags that choose where packages come from (what `uv venv --seed` takes too)
_INDEX_FLAGS = (
    "--index-url",
    "--extra-index-url",
    "--find-links",
    "--no-index",
    "--allow-insecure-host",
)


def extra_command(extra: str) -> str:
    """The command that adds a project extra to the checkout's `.venv`, as the set-up made it:
    its own installer (uv from the cache, the versions `requirements.lock` pins; pip when uv
    cannot be had). A `.venv/bin/pip` is no such command: a venv uv makes has no pip."""
    return f"python3.11 scripts/setup_venv.py .venv {extra}"


def uv_cache() -> Path:
    return cache_root() / "uv"


def logged(
    cmd: list[str], log: Path, env: dict[str, str] | None = None, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run one step, appending its command and output to the build log."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, input=stdin)
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "a") as handle:
        handle.write(f"$ {' '.join(cmd)}\n{stdin or ''}{proc.stdout}{proc.stderr}\n")
    return proc


def run_step(cmd: list[str], log: Path, what: str, env: dict[str, str] | None = None) -> str:
    """Run one install step, appending its output to the build log; fail with one line."""
    proc = logged(cmd, log, env)
    if proc.returncode != 0:
        raise EnvError(install_failure(proc, log, what))
    return proc.stdout


def install_failure(proc: subprocess.CompletedProcess[str], log: Path, what: str) -> str:
    return (
        f"could not install {what}: {_failure(proc)} (log: {log}); where the "
        f"package registry is reachable, `inventory envs build` builds "
        f"environments ahead of time"
    )


def run_install(cmd: list[str], log: Path, what: str, env: dict[str, str] | None = None) -> str:
    """`run_step` for an installer's run, with a TMPDIR of its own in the store's scratch,
    removed when it ends (what uv or pip leave there is never left on the machine)."""
    with scratch("installer") as tmp:
        said = {**(env if env is not None else os.environ), "TMPDIR": str(tmp)}
        return run_step(cmd, log, what, said)


def _failure(proc: subprocess.CompletedProcess[str]) -> str:
    """The line that says why: uv's explanation (`╰─▶ ...`) or its `error:` line, else pip's
    last line that is not a warning."""
    lines = [ln.strip() for ln in proc.stderr.splitlines() if ln.strip()]
    for marker in ("╰─▶", "error:", "×"):
        said = [ln for ln in lines if ln.startswith(marker)]
        if said:
            return said[0].removeprefix(marker).strip()
    lines = [ln for ln in lines if "WARNING" not in ln]
    return lines[-1] if lines else f"exit code {proc.returncode}"


def _uv_version(uv: Path) -> str | None:
    try:
        proc = subprocess.run([str(uv), "--version"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    found = re.match(r"uv (\S+)", proc.stdout.strip())
    return found.group(1) if proc.returncode == 0 and found else None


def _packaged_uv() -> Path | None:
    """The binary of the `uv` package, a dependency of the tool: found wherever the tool was
    installed (a plain venv with pip, a user site, a system prefix), not only beside this
    interpreter, where the set-up script's venv has it."""
    try:
        from uv import find_uv_bin
    except ImportError:
        return None
    try:
        return Path(find_uv_bin())
    except (OSError, TypeError):  # not found; TypeError: sysconfig's EXE unset (see `chosen`)
        return None


def find_uv() -> Path | None:
    """uv of the `uv` package this tool depends on, else beside this interpreter, else on PATH."""
    beside = Path(sys.executable).parent / "uv"
    on_path = shutil.which("uv")
    for candidate in (_packaged_uv(), beside, Path(on_path) if on_path else None):
        if candidate is not None and candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    return None


def python_with_pip() -> str:
    """An interpreter whose pip can install into a folder (`--target`): this one, else the one
    its virtualenv was made from (an environment built by uv has no pip)."""
    for python in (sys.executable, getattr(sys, "_base_executable", "")):
        if (
            python
            and subprocess.run([python, "-c", "import pip"], capture_output=True).returncode == 0
        ):
            return python
    return sys.executable


@dataclass(frozen=True)
class Resolved:
    """One distribution of a resolution: what installs it exactly, and what asked for it."""

    name: str  # canonical (PEP 503)
    pin: str  # `name==version`, or `name @ url` for one given by its location
    via: tuple[str, ...]


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(req: str) -> str:
    return canonical(re.split(r"[<>=!~ ;\[(@]", req.strip(), maxsplit=1)[0])


# a line of `uv pip compile --annotation-style line`: the pin, then `# via a, b` when asked for
_COMPILED = re.compile(r"^(?P<pin>[^#\s][^#]*?)(?:\s+#\s+via\s+(?P<via>.*))?$")


def _compiled(text: str) -> list[Resolved]:
    out = []
    for line in text.splitlines():
        found = _COMPILED.match(line.strip())
        if found is None or line.startswith("-"):
            continue
        pin = found.group("pin").strip()
        via = [v.strip() for v in (found.group("via") or "").split(",")]
        out.append(
            Resolved(
                requirement_name(pin),
                pin,
                tuple(v for v in via if v and not v.startswith("-")),
            )
        )
    return out


def _reported(report: dict) -> list[Resolved]:
    """pip's `--report` of a dry run, with who requires each distribution read from the
    metadata of the others."""
    items = report.get("install", [])
    requires: dict[str, set[str]] = {}
    for item in items:
        name = canonical(item["metadata"]["name"])
        for raw in item["metadata"].get("requires_dist") or []:
            requires.setdefault(requirement_name(raw), set()).add(name)
    out = []
    for item in items:
        meta = item["metadata"]
        name = canonical(meta["name"])
        url = (item.get("download_info") or {}).get("url", "")
        pin = f"{name} @ {url}" if item.get("is_direct") and url else f"{name}=={meta['version']}"
        out.append(Resolved(name, pin, tuple(sorted(requires.get(name, ())))))
    return out


@dataclass(frozen=True)
class Installer:
    """uv (with its cache and the machine's pip configuration) or pip."""

    name: str  # "uv" or "pip"
    version: str
    uv: Path | None = None
    note: str = ""  # why pip builds, when uv was asked for

    def label(self) -> str:
        return f"{self.name} {self.version}"

    def _uv(self, *args: str) -> tuple[list[str], dict[str, str]]:
        config = pip_config.read().uv()
        env = dict(os.environ)
        for key, value in config.env.items():
            env.setdefault(key, value)  # the caller's own setting wins
        cmd = [str(self.uv), *args, "--no-config", "--cache-dir", str(uv_cache()), "--no-progress"]
        return cmd, env

    def _index(self) -> list[str]:
        config = pip_config.read().uv()
        out: list[str] = []
        args = list(config.args)
        for i, arg in enumerate(args):
            if arg in _INDEX_FLAGS:
                out.append(arg)
                if arg != "--no-index":
                    out.append(args[i + 1])
        return out + ["--index-strategy", "unsafe-best-match"]

    def describe(self) -> str:
        """What the build log says first: the installer and, for uv, the pip configuration it
        was told."""
        if self.name == "pip":
            return f"installer: {self.label()}" + (f" ({self.note})" if self.note else "")
        return f"installer: {self.label()}; {pip_config.read().uv().describe()}"

    def venv(self, path: Path, log: Path, seed: bool = True) -> Path:
        """A new virtualenv at `path` on this interpreter; its python. `seed`: with pip and
        setuptools in it (what the requirement readers and a source build use)."""
        if self.name == "uv":
            cmd, env = self._uv("venv", "--python", sys.executable, *self._index())
            run_install(
                cmd + (["--seed"] if seed else []) + [str(path)],
                log,
                f"a virtualenv at {path}",
                env,
            )
        else:
            run_install(
                [sys.executable, "-m", "venv", *([] if seed else ["--without-pip"]), str(path)],
                log,
                f"a virtualenv at {path}",
            )
        return path / "bin" / "python"

    def install(
        self, python: Path | str, args: list[str], log: Path, what: str, target: Path | None = None
    ) -> None:
        """`pip install ARGS` into `python`'s environment, or into the folder `target` (with
        `python`'s tags). The one call every environment's packages go through."""
        where = ["--target", str(target)] if target is not None else []
        if self.name == "uv":
            cmd, env = self._uv("pip", "install", "--python", str(python))
            config = pip_config.read().uv()
            run_install(
                cmd + ["--index-strategy", "unsafe-best-match", *config.args, *where, *args],
                log,
                what,
                env,
            )
        else:
            if target is not None and python == sys.executable:
                python = python_with_pip()
            run_install(
                [
                    str(python),
                    "-m",
                    "pip",
                    "--disable-pip-version-check",
                    "--no-input",
                    "install",
                    "-q",
                    *where,
                    *args,
                ],
                log,
                what,
            )

    def resolve(
        self, python: Path | str, requirements: list[str], constraints: Path, log: Path
    ) -> tuple[subprocess.CompletedProcess[str], list[Resolved]]:
        """What installing `requirements` into `python`'s environment would install, under the
        `constraints` file, found without installing anything (uv's `pip compile`, pip's dry run);
        the process too, for the caller to explain its failure."""
        # a resolution may build a source distribution: its temp files (uv's setuptools lock)
        # stay in the store's scratch, as an install's do (`run_install`)
        if self.name == "uv":
            cmd, env = self._uv("pip", "compile", "-", "--python", str(python))
            config = pip_config.read().uv()
            with scratch("installer") as tmp:
                proc = logged(
                    cmd
                    + ["--index-strategy", "unsafe-best-match", *config.args]
                    + ["--constraint", str(constraints), "--no-header"]
                    + ["--annotation-style", "line"],
                    log,
                    {**env, "TMPDIR": str(tmp)},
                    stdin="\n".join(requirements) + "\n",
                )
            return proc, _compiled(proc.stdout) if proc.returncode == 0 else []
        report = constraints.parent / "report.json"
        with scratch("installer") as tmp:
            proc = logged(
                [str(python), "-m", "pip", "--disable-pip-version-check", "--no-input", "install"]
                + ["--dry-run", "--ignore-installed", "--report", str(report)]
                + ["--constraint", str(constraints), *requirements],
                log,
                {**os.environ, "TMPDIR": str(tmp)},
            )
        if proc.returncode != 0:
            return proc, []
        return proc, _reported(json.loads(report.read_text()))

    def forget(self, names: list[str], log: Path) -> None:
        """Drop distributions from uv's cache (one whose unpacked files were found damaged), so
        the next install takes them from the registry again."""
        if self.name == "uv" and names:
            cmd, env = self._uv("cache", "clean")
            run_install(cmd + names, log, f"uv's cache of {', '.join(names)}", env)


# Environments are built side by side: the installer is chosen by one thread at a time, since
# `uv.find_uv_bin` reads sysconfig, whose first read is not thread-safe (a second thread saw
# its EXE unset and failed)
_CHOOSING = threading.Lock()


@functools.cache
def chosen() -> Installer:
    """The installer of this process: uv unless pip is asked for or uv cannot be had."""
    with _CHOOSING:
        return _choose()


def _choose() -> Installer:
    pip_version = _pip_version()
    if installer_choice() == "pip":
        return Installer("pip", pip_version, note=f"{INSTALLER_VAR}=pip")
    uv = find_uv()
    version = _uv_version(uv) if uv is not None else None
    if uv is None or version is None:
        why = (
            "uv not found (its package, beside this interpreter, on PATH)"
            if uv is None
            else f"{uv} does not run"
        )
        return Installer(
            "pip",
            pip_version,
            note=f"{why}; `pip install uv` into the tool's environment gives it; building with pip",
        )
    return Installer("uv", version, uv)


def package_sources() -> pip_config.Sources:
    """Where the installers look for packages on this machine: pip's configuration, the one
    every environment is built from (release discovery reads the same indexes and links)."""
    return pip_config.read().sources()


def _pip_version() -> str:
    try:
        from importlib.metadata import version

        return version("pip")
    except Exception:  # noqa: BLE001 - no pip here: the environments' own pip is used
        return "(the environment's)"


def cuda_torch(site: Path) -> str | None:
    """Why the torch installed in `site` is a CUDA build (a `+cu` version, or nvidia packages
    among its requirements), or None for a CPU build. A CUDA torch is never used: it is GBs,
    and the measurements are of the CPU build the catalog pins."""
    for meta in sorted(site.glob("torch-*.dist-info/METADATA")):
        text = meta.read_text(errors="replace")
        version = re.search(r"^Version: (\S+)", text, re.MULTILINE)
        if version and "+cu" in version.group(1):
            return f"torch {version.group(1)} is a CUDA build"
        nvidia = re.findall(r"^Requires-Dist: (nvidia-[A-Za-z0-9_.-]+)", text, re.MULTILINE)
        if nvidia:
            label = version.group(1) if version else "?"
            return f"torch {label} requires {', '.join(nvidia[:3])}: a CUDA build"
    return None
