"""Write `requirements.lock`: the exact versions of the project's dependencies, every extra
included, and of uv, which the set-up script installs (`scripts/_venv.sh` installs the project
with this file as constraints, so a fresh clone and CI get the same versions).

torch is written without its local label (`torch==2.13.0`, not `+cpu`): which build of 2.13.0 a
machine gets is its pip configuration's business (here a find-links folder holding the CPU
wheel), and the set-up refuses a CUDA one. A lock whose resolution pulled in a CUDA torch (nvidia
packages) is refused here.

    scripts/lock [--check]     (--check: exit 1 if the committed lock is not what this writes)
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from oracle.envs import pip_config  # noqa: E402
from oracle.envs.installer import find_uv  # noqa: E402

LOCK = ROOT / "requirements.lock"
HEADER = (
    "# The project's dependencies, every extra, and uv: written by scripts/lock from\n"
    "# pyproject.toml (uv pip compile), read by scripts/_venv.sh as constraints.\n"
)


def compile_lock(uv: Path) -> str:
    uv_version = subprocess.run(
        [str(uv), "--version"], capture_output=True, text=True, check=True
    ).stdout.split()[1]
    config = pip_config.read().uv()
    with tempfile.TemporaryDirectory() as tmp:
        tools = Path(tmp) / "tools.in"
        tools.write_text(f"uv=={uv_version}\n")
        out = Path(tmp) / "lock.txt"
        proc = subprocess.run(
            [
                str(uv),
                "pip",
                "compile",
                "--no-config",
                "--quiet",
                "--no-header",
                "--python-version",
                "3.11",
                "--python-platform",
                "x86_64-unknown-linux-gnu",
                "--all-extras",
                "--index-strategy",
                "unsafe-best-match",
                # the machine's own constraints file caps versions it does not hold: not the
                # project's pins
                *[a for a in _without_constraints(config.args)],
                "--no-annotate",
                "-o",
                str(out),
                str(ROOT / "pyproject.toml"),
                str(tools),
            ],
            capture_output=True,
            text=True,
        )
        if proc.returncode != 0:
            raise SystemExit(f"error: uv pip compile failed: {proc.stderr.strip()}")
        text = out.read_text()
    if re.search(r"^nvidia-", text, re.MULTILINE):
        raise SystemExit(
            "error: the resolution pulled in a CUDA torch (nvidia packages); "
            "point pip's configuration at the CPU wheel"
        )
    text = re.sub(r"^torch==([^+\s]+)\+\S+", r"torch==\1", text, flags=re.MULTILINE)
    return HEADER + text


def _without_constraints(args: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == "--constraint":
            skip = True
            continue
        out.append(arg)
    return out


def main(argv: list[str]) -> int:
    uv = find_uv()
    if uv is None:
        raise SystemExit(
            "error: no uv (its package, beside this interpreter, on PATH): "
            "scripts/_venv.sh installs it"
        )
    text = compile_lock(uv)
    if argv[:1] == ["--check"]:
        if LOCK.read_text() != text:
            print(f"{LOCK.name} is not what scripts/lock writes now: run scripts/lock")
            return 1
        print(f"{LOCK.name} is current")
        return 0
    LOCK.write_text(text)
    print(f"wrote {LOCK.name} ({sum(1 for ln in text.splitlines() if '==' in ln)} pins)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
