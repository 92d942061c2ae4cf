"""The set-up script's Python side (`scripts/_venv.sh`): the project into `.venv`, from the lock.

Run by the interpreter the scripts chose (CPython 3.11), before anything of the project is
installed: standard library only, plus `oracle/envs/pip_config.py`. uv is installed from the package
index by pip (this interpreter's, so the machine's pip configuration applies) into the cache's
`tools/uv-<version>/`, once per cache; it then makes `.venv` and installs the project with its
pinned dependencies (`requirements.lock`) and uv itself, from the cache the converter
environments share, so torch is unpacked once for both. When uv cannot be had (or
INVENTORY_INSTALLER=pip), pip installs the same lock, and this says so.

    python3.11 scripts/setup_venv.py VENV [EXTRAS]
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle.envs import pip_config  # noqa: E402
from oracle.envs.installer import cuda_torch, uv_cache  # noqa: E402
from oracle.infra.paths import cache_root  # noqa: E402
from oracle.infra.settings import INSTALLER_VAR  # noqa: E402

LOCK = ROOT / "requirements.lock"


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


def with_uv(uv: Path, venv: Path, spec: str, version: str) -> None:
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
            "-e",
            spec,
            f"uv=={version}",
        ],
        env,
    )


def with_pip(venv: Path, spec: str) -> None:
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
            "-e",
            spec,
        ]
    )


# Run in the new .venv: import what the command line may import in its own process (every module
# of the project, with what runs in environments or a trace refused), then write the bytecode of
# every module so loaded. uv installs no bytecode, and where
# PYTHONDONTWRITEBYTECODE is set nothing writes it later: every start would compile ~300
# modules again (about a second). Compiling all of .venv instead costs ~10 s of CPU (torch).
_COMPILE = """
import importlib, importlib.abc, pkgutil, py_compile, sys
from importlib.util import cache_from_source
class Refuse(importlib.abc.MetaPathFinder):
    # what runs in converter environments or a trace subprocess, never in the command line's
    heavy = {"torch", "sympy", "coreai", "coreai_torch", "ray", "transformers", "pocket_tts"}
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.heavy:
            raise ImportError(name)
        return None
sys.meta_path.insert(0, Refuse())
for package in ("inventory", "oracle"):
    root = importlib.import_module(package)
    for info in pkgutil.walk_packages(root.__path__, package + "."):
        try:
            importlib.import_module(info.name)
        except Exception:
            pass
count = 0
for module in list(sys.modules.values()):
    path = getattr(module, "__file__", None) or ""
    if path.endswith(".py"):
        try:
            py_compile.compile(path, cfile=cache_from_source(path), doraise=True)
            count += 1
        except (OSError, py_compile.PyCompileError):
            pass
print(count)
"""


def compile_cli(venv: Path) -> None:
    proc = subprocess.run(
        [str(venv / "bin" / "python"), "-c", _COMPILE], capture_output=True, text=True, cwd=ROOT
    )
    if proc.returncode == 0:
        say(f"bytecode written for the {proc.stdout.strip()} modules the command line imports")


def main(argv: list[str]) -> int:
    venv = Path(argv[0]).resolve()
    extras = argv[1] if len(argv) > 1 else ""
    spec = f"{ROOT}[{extras}]" if extras else str(ROOT)
    started = time.monotonic()
    uv, why = None, f"{INSTALLER_VAR}=pip"
    version = uv_pin()
    if os.environ.get(INSTALLER_VAR, "").strip().lower() != "pip":
        uv, why = bootstrap_uv(version)
    if uv is not None:
        say(f"installing inventory into {venv} with uv {version} ({extras or 'no extras'})")
        with_uv(uv, venv, spec, version)
    else:
        say(
            f"installing inventory into {venv} with pip ({extras or 'no extras'}): uv cannot "
            f"be had ({why})"
        )
        with_pip(venv, spec)
    site = next((venv / "lib").glob("python*/site-packages"))
    cuda = cuda_torch(site)
    if cuda is not None:
        say(
            f"error: {cuda}, not the CPU wheel the project pins; point pip's configuration "
            f"(find-links or index-url) at the CPU wheel and remove {venv}"
        )
        return 2
    compile_cli(venv)
    say(f"installed in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
