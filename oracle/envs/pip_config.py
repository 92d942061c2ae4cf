"""The machine's pip configuration, read once and said to uv in its own words.

uv reads none of pip's configuration (pip.conf, PIP_* variables), yet a machine that installs
with pip is set up for pip: a private index, a find-links folder holding the CPU torch wheel, a
constraints file. Whatever `pip config list` says for `pip install` is translated here, so that
uv sees the same indexes, links and constraints pip would; nothing of this machine is written in
code. Precedence is pip's: PIP_* variables over the `[install]` section over `[global]`, each
value whole (pip does not merge a list option across sections).

This module is standard library only: the set-up script runs it before the project is installed.
"""

from __future__ import annotations

import ast
import functools
import os
import subprocess
import sys
from dataclasses import dataclass, field

# pip option -> uv flag, for options that take one value or a whitespace-separated list
_LISTS = {
    "extra-index-url": "--extra-index-url",
    "find-links": "--find-links",
    "constraint": "--constraint",
    "trusted-host": "--allow-insecure-host",
    "only-binary": "--only-binary",
    "no-binary": "--no-binary",
}
_SINGLE = {"index-url": "--index-url"}
# pip option -> what uv reads from the environment instead
_ENVIRONMENT = {
    "cert": "SSL_CERT_FILE",
    "client-cert": "SSL_CLIENT_CERT",
    "timeout": "UV_HTTP_TIMEOUT",
    "default-timeout": "UV_HTTP_TIMEOUT",
}
_PROXY = ("HTTPS_PROXY", "HTTP_PROXY")
# Options that change what pip prints or asks, never what it installs: nothing to translate.
_COSMETIC = {
    "disable-pip-version-check",
    "no-input",
    "quiet",
    "verbose",
    "progress-bar",
    "no-color",
    "log",
    "retries",
    "no-cache-dir",
    "cache-dir",
    "root-user-action",
    "no-warn-script-location",
    "prefer-binary",
    "use-feature",
    "use-deprecated",
    "no-python-version-warning",
    "exists-action",
    "upgrade-strategy",
    "compile",
    "no-compile",
    "require-virtualenv",
    "isolated",
}
_TRUE = {"1", "true", "yes", "on"}
# pip's index when its configuration names none
DEFAULT_INDEX = "https://pypi.org/simple"


@dataclass(frozen=True)
class PipConfig:
    """The options `pip install` would use on this machine, by pip's name (`find-links`)."""

    values: dict[str, str]
    source: str  # how they were read, for the build log

    def uv(self) -> UvConfig:
        """The same options as uv's flags and environment variables."""
        args: list[str] = []
        env: dict[str, str] = {}
        skipped: list[str] = []
        for key, raw in sorted(self.values.items()):
            if key in _SINGLE:
                args += [_SINGLE[key], raw.strip()]
            elif key in _LISTS:
                for item in raw.split():
                    args += [_LISTS[key], item]
            elif key in _ENVIRONMENT:
                env.setdefault(_ENVIRONMENT[key], raw.strip())
            elif key == "proxy":
                env.update({name: raw.strip() for name in _PROXY})
            elif key == "no-index" and raw.strip().lower() in _TRUE:
                args.append("--no-index")
            elif key == "pre" and raw.strip().lower() in _TRUE:
                args += ["--prerelease", "allow"]
            elif key not in _COSMETIC:
                skipped.append(key)
        return UvConfig(tuple(args), env, tuple(skipped), self.source)

    def sources(self) -> Sources:
        """Where `pip install` looks for a distribution on this machine: its indexes (pip's
        default unless `index-url` names another; none with `no-index`), its find-links
        (folders or pages), and how it reaches them (certificate bundle, proxy, timeout)."""
        no_index = self.values.get("no-index", "").strip().lower() in _TRUE
        indexes: list[str] = []
        if not no_index:
            indexes.append(self.values.get("index-url", "").strip() or DEFAULT_INDEX)
            indexes += self.values.get("extra-index-url", "").split()
        timeout = self.values.get("timeout") or self.values.get("default-timeout") or "15"
        try:
            seconds = float(timeout)
        except ValueError:
            seconds = 15.0
        return Sources(
            tuple(indexes),
            tuple(self.values.get("find-links", "").split()),
            self.values.get("cert", "").strip() or None,
            self.values.get("proxy", "").strip() or None,
            seconds,
            self.source,
        )


@dataclass(frozen=True)
class UvConfig:
    args: tuple[str, ...]
    env: dict[str, str] = field(default_factory=dict)
    skipped: tuple[str, ...] = ()  # pip options uv has no counterpart for (said in the log)
    source: str = ""

    def describe(self) -> str:
        said = f"pip configuration ({self.source}) as uv options: {' '.join(self.args) or 'none'}"
        if self.env:
            said += "; environment: " + ", ".join(f"{k}={v}" for k, v in sorted(self.env.items()))
        if self.skipped:
            said += f"; not translated (uv has no counterpart): {', '.join(self.skipped)}"
        return said


@dataclass(frozen=True)
class Sources:
    """The package sources of pip's configuration (PipConfig.sources)."""

    indexes: tuple[str, ...]  # simple-API roots, in pip's order
    find_links: tuple[str, ...]  # folders, file:// URLs or pages listing distribution files
    cert: str | None = None  # a CA bundle to verify https with
    proxy: str | None = None
    timeout: float = 15.0
    source: str = ""  # how the configuration was read

    def describe(self) -> str:
        said = [f"index {i}" for i in self.indexes] + [f"find-links {f}" for f in self.find_links]
        return f"{'; '.join(said) or 'no package source'} (pip configuration: {self.source})"


def parse(listing: str) -> dict[str, str]:
    """`pip config list` output (`section.key='value'` per line) as the options `pip install`
    uses: the `:env:` section (PIP_* variables) over `install` over `global`."""
    by_section: dict[str, dict[str, str]] = {}
    for line in listing.splitlines():
        name, sep, value = line.partition("=")
        section, dot, key = name.rpartition(".")
        if not sep or not dot:
            continue
        try:
            text = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            text = value.strip()
        by_section.setdefault(section, {})[key] = str(text)
    out: dict[str, str] = {}
    for section in ("global", "install", ":env:"):
        out.update(by_section.get(section, {}))
    return out


def _pythons() -> list[str]:
    """Interpreters that may have pip: this one, then the one a virtualenv was made from (an
    environment built by uv has no pip of its own)."""
    found = [sys.executable]
    base = getattr(sys, "_base_executable", "")
    if base and base != sys.executable:
        found.append(base)
    return found


@functools.cache
def read() -> PipConfig:
    """The machine's pip configuration, from the first interpreter whose pip answers; none
    (said so) when no pip can be asked, and then only PIP_* variables are read."""
    for python in _pythons():
        try:
            proc = subprocess.run(
                [python, "-m", "pip", "config", "list"],
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"},
            )
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0:
            return PipConfig(parse(proc.stdout), f"`pip config list` of {python}")
    env = {
        name[4:].lower().replace("_", "-"): value
        for name, value in os.environ.items()
        if name.startswith("PIP_") and value
    }
    return PipConfig(env, "PIP_* variables only: no pip could be asked for its files")
