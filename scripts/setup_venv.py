"""The set-up script's Python side (`scripts/_venv.sh`): the project into `.venv`, from the lock.

Run by the interpreter the scripts chose (CPython 3.11), before anything of the project is
installed: standard library only, plus `oracle/envs/pip_config.py`. uv is installed from the package
index by pip (this interpreter's, so the machine's pip configuration applies) into the cache's
`tools/uv-<version>/`, once per cache; it then makes `.venv` and installs the project's pinned
dependencies (`requirements.lock`) and uv itself, from the cache the converter environments
share, so torch is unpacked once for both. When uv cannot be had (or INVENTORY_INSTALLER=pip),
pip installs the same lock, and this says so.

The project itself is not built: `.venv` imports `inventory` and `oracle` from this checkout (a
finder on its path, as an editable install's), carries the project's metadata (`inventory
--version` reads it; its requirements and extras, which `inventory.trace.extra` reads) and its
`inventory` command. So a change in the checkout is what runs, and
no build backend is installed and run (an editable build was a third of the set-up with uv's
cache warm). No module is imported to write bytecode either: the scripts that use `.venv`
(`_venv.sh`) let Python write the bytecode of what a command imports when it first imports it.

    python3.11 scripts/setup_venv.py VENV [EXTRAS]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle.envs import pip_config  # noqa: E402
from oracle.envs.installer import cuda_torch, uv_cache  # noqa: E402
from oracle.infra.paths import cache_root  # noqa: E402
from oracle.infra.settings import INSTALLER_VAR  # noqa: E402

LOCK = ROOT / "requirements.lock"
PACKAGES = ("inventory", "oracle")
# the finder `.venv` imports the checkout's packages with (a `.pth` line imports it at start)
_FINDER = "_inventory_checkout"


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def uv_pin() -> str:
    found = re.search(r"^uv==(\S+)", LOCK.read_text(), re.MULTILINE)
    if found is None:
        raise SystemExit(f"error: {LOCK.name} pins no uv (scripts/lock writes it)")
    return found.group(1)


def bootstrap_uv(version: str) -> tuple[Path | None, str]:
    """uv `version` in the cache's tools folder, installed by pip when it is not there yet;
    (None, why) when it cannot be had."""
    home = cache_root() / "tools" / f"uv-{version}"
    uv = home / "bin" / "uv"
    if uv.is_file() and os.access(uv, os.X_OK):
        return uv, ""
    partial = home.with_name(f".{home.name}.{os.getpid()}")
    shutil.rmtree(partial, ignore_errors=True)
    say(f"installing uv {version} from the package index into {home}")
    # one wheel, no dependencies, no Python to compile: a third less of pip's time
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "-q",
            "--no-input",
            "--disable-pip-version-check",
            "--no-deps",
            "--no-compile",
            "--only-binary",
            ":all:",
            "--target",
            str(partial),
            f"uv=={version}",
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0 or not (partial / "bin" / "uv").is_file():
        shutil.rmtree(partial, ignore_errors=True)
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and "WARNING" not in ln]
        return None, lines[-1].strip() if lines else f"pip exited with {proc.returncode}"
    home.parent.mkdir(parents=True, exist_ok=True)
    try:
        partial.rename(home)
    except OSError:  # another set-up got there first: use theirs
        shutil.rmtree(partial, ignore_errors=True)
    return uv, ""


def run(cmd: list[str], env: dict[str, str] | None = None) -> None:
    proc = subprocess.run(cmd, env=env, stdout=sys.stderr)
    if proc.returncode != 0:
        raise SystemExit(proc.returncode)


def with_uv(uv: Path, venv: Path, requirements: list[str], version: str) -> None:
    config = pip_config.read().uv()
    env = dict(os.environ)
    for key, value in config.env.items():
        env.setdefault(key, value)
    common = ["--no-config", "--cache-dir", str(uv_cache()), "--no-progress"]
    if not (venv / "bin" / "python").is_file():
        run([str(uv), "venv", "--clear", "--python", sys.executable, *common, str(venv)], env)
    run(
        [
            str(uv),
            "pip",
            "install",
            "--python",
            str(venv / "bin" / "python"),
            *common,
            "--index-strategy",
            "unsafe-best-match",
            *config.args,
            "--constraint",
            str(LOCK),
            *requirements,
            f"uv=={version}",
        ],
        env,
    )


def with_pip(venv: Path, requirements: list[str]) -> None:
    if not (venv / "bin" / "python").is_file():
        run([sys.executable, "-m", "venv", str(venv)])
    # this interpreter's pip, aimed at the venv: a venv made by uv has no pip of its own
    run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "-q",
            "--disable-pip-version-check",
            "--constraint",
            str(LOCK),
            *requirements,
        ]
    )


def project() -> dict:
    return dict(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"])


def requirements(meta: dict, extras: list[str]) -> list[str]:
    """The project's own requirements and those of `extras` (one line each, markers kept)."""
    optional = meta.get("optional-dependencies", {})
    unknown = [e for e in extras if e not in optional]
    if unknown:
        raise SystemExit(f"error: no extra {', '.join(unknown)} in pyproject.toml")
    return [*meta["dependencies"], *(r for e in extras for r in optional[e])]


def declared(meta: dict) -> str:
    """The metadata lines of the requirements and extras pyproject.toml declares, as a built
    package's METADATA has them: what reads them (`inventory.trace.extra` asks for the `trace`
    extra's pins) must find them here as in any install, not an empty list."""
    lines = [f"Requires-Dist: {req}\n" for req in meta.get("dependencies", [])]
    for extra, reqs in meta.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}\n")
        for req in reqs:
            spec, _, marker = req.partition(";")
            only = f'extra == "{extra}"'
            when = f"({marker.strip()}) and {only}" if marker.strip() else only
            lines.append(f"Requires-Dist: {spec.strip()}; {when}\n")
    return "".join(lines)


_FINDER_SOURCE = """\
# Written by scripts/setup_venv.py: `inventory` and `oracle` imported from the checkout below
# (a change there is what runs), nothing else of it.
import importlib.machinery
import sys

ROOT = {root!r}
PACKAGES = {packages!r}


class CheckoutFinder:
    @staticmethod
    def find_spec(name, path=None, target=None):
        if name in PACKAGES:
            return importlib.machinery.PathFinder.find_spec(name, [ROOT])
        return None


def install():
    if not any(isinstance(f, CheckoutFinder) for f in sys.meta_path):
        sys.meta_path.append(CheckoutFinder())
"""

_LAUNCHER = """\
#!{python}
import sys
from {module} import {attr}
if __name__ == "__main__":
    sys.exit({attr}())
"""


def link_checkout(venv: Path, meta: dict) -> None:
    """`.venv` imports the checkout's packages, knows the project's version and has its
    `inventory` command, without building the project: the finder, its `.pth` line, the
    project's metadata (with a RECORD, so an installer can remove it) and the command."""
    site = next((venv / "lib").glob("python*/site-packages"))
    name, version = meta["name"], meta["version"]
    for old in [*site.glob(f"{name}-*.dist-info"), *site.glob(f"__editable__*{name}*")]:
        # an editable install an earlier set-up made: replaced
        if old.is_dir():
            shutil.rmtree(old)
        else:
            old.unlink()
    files: dict[str, str] = {
        f"{_FINDER}.py": _FINDER_SOURCE.format(root=str(ROOT), packages=PACKAGES),
        f"{_FINDER}.pth": f"import {_FINDER}; {_FINDER}.install()\n",
    }
    info = f"{name.replace('-', '_')}-{version}.dist-info"
    files[f"{info}/METADATA"] = (
        f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
        f"Summary: {meta.get('description', '')}\n" + declared(meta)
    )
    files[f"{info}/INSTALLER"] = "scripts/setup_venv.py\n"
    scripts = meta.get("scripts", {})
    files[f"{info}/entry_points.txt"] = "[console_scripts]\n" + "".join(
        f"{k} = {v}\n" for k, v in scripts.items()
    )
    launchers = []
    for command, target in scripts.items():
        module, _, attr = target.partition(":")
        launcher = venv / "bin" / command
        python = venv / "bin" / "python"
        launcher.write_text(_LAUNCHER.format(python=python, module=module, attr=attr))
        launcher.chmod(0o755)
        launchers.append(os.path.relpath(launcher, site))
    for rel, text in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text(text)
    record = [f"{rel},," for rel in [*files, f"{info}/RECORD", *launchers]]
    (site / info / "RECORD").write_text("\n".join(record) + "\n")


def main(argv: list[str]) -> int:
    venv = Path(argv[0]).resolve()
    extras = argv[1] if len(argv) > 1 else ""
    meta = project()
    wanted = requirements(meta, [e for e in extras.split(",") if e])
    started = time.monotonic()
    uv, why = None, f"{INSTALLER_VAR}=pip"
    version = uv_pin()
    if os.environ.get(INSTALLER_VAR, "").strip().lower() != "pip":
        uv, why = bootstrap_uv(version)
    if uv is not None:
        say(f"installing inventory into {venv} with uv {version} ({extras or 'no extras'})")
        with_uv(uv, venv, wanted, version)
    else:
        say(
            f"installing inventory into {venv} with pip ({extras or 'no extras'}): uv cannot "
            f"be had ({why})"
        )
        with_pip(venv, wanted)
    site = next((venv / "lib").glob("python*/site-packages"))
    cuda = cuda_torch(site)
    if cuda is not None:
        say(
            f"error: {cuda}, not the CPU wheel the project pins; point pip's configuration "
            f"(find-links or index-url) at the CPU wheel and remove {venv}"
        )
        return 2
    link_checkout(venv, meta)
    say(f"installed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
