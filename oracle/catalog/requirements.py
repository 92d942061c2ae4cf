"""What a version or a requirement from data may be before it reaches a path or the installer.

A catalog's `[torch] version` and `core` become folder names and `==` pins, its `extra` entries
and a discovered wheel's `Requires-Dist` lines become installer arguments: each is checked here
first. A version is a PEP 440 version; a requirement of a registry package is a name a package
can have with version specifiers (and an environment marker). Anything else an installer takes
(a local path, a URL, a VCS reference, an option starting with `-`) installs or runs code from
anywhere, so it is named for what it is and installed only with consent (`--allow-code`).
"""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement
from packaging.version import InvalidVersion, Version

# What a requirement that is not a registry package's is, in the words of a refusal.
OPTION, VCS, URL, PATH = "an installer option", "a VCS reference", "a URL", "a local path"


def is_version(text: str) -> bool:
    """`text` is a PEP 440 version as written (no blank around it)."""
    if text != text.strip() or not text:
        return False
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def registry_problem(text: str) -> str | None:
    """Why `text` is not a requirement of a registry package (None: it is one): not a name and
    version specifiers, or a `==` pin of something that is not a PEP 440 version."""
    try:
        req = Requirement(text)
    except InvalidRequirement:
        return "not a package name with version specifiers"
    if req.url:
        return f"{URL} ({req.url!r})"
    for spec in req.specifier:
        pinned = spec.version.removesuffix(".*") if spec.operator == "==" else spec.version
        if spec.operator in ("==", "===") and not is_version(pinned):
            return f"'{spec.operator}{spec.version}' pins no PEP 440 version"
    return None


def code_kind(text: str) -> str | None:
    """What a requirement that installs code from anywhere is (an option, a VCS reference, a
    URL, a local path); None for anything else (a registry package's, or no requirement)."""
    stripped = text.strip()
    if stripped.startswith("-"):
        return OPTION
    if re.match(r"^(\S+\s*@\s*)?(git|hg|svn|bzr)\+", stripped):
        return VCS
    if "://" in stripped:
        return URL
    if stripped.startswith((".", "/", "~")) or "/" in stripped or "\\" in stripped:
        return PATH
    return None
