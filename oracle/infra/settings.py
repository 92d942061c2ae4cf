"""The environment variables the tool reads, each validated in one place before any work.

`INVENTORY_VERIFY_RUN_TIMEOUT=abc` used to crash after a full build and two conversions, and
`=0` printed "timeout 0 s" but applied the worker's 300 s default. Now a timeout is a finite
number of seconds above 0 (the lock timeout may be 0: do not wait), read at the moment it is used
so that the limit an answer states is the limit applied, and every variable is checked by
`check_all()` when a command starts (`inventory.terminal.command`): one line, exit 2.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from oracle.errors import OracleUserError

# name -> (default seconds, whether 0 is allowed)
TIMEOUTS: dict[str, tuple[float, bool]] = {
    # one call to a worker (a probe's conversion or run)
    "INVENTORY_WORKER_TIMEOUT": (300.0, False),
    # a whole bundle's conversion, per side (verify)
    "INVENTORY_VERIFY_CONVERT_TIMEOUT": (3600.0, False),
    # a whole bundle's run on the runtime, per side (verify)
    "INVENTORY_VERIFY_RUN_TIMEOUT": (1800.0, False),
    # waiting for another process's build of an environment (0: give up at once)
    "INVENTORY_LOCK_TIMEOUT": (900.0, True),
    # --executor ray: a node's agent getting a release's environment ready (a build included)
    "INVENTORY_RAY_SETUP_TIMEOUT": (1800.0, False),
    # --executor ray: one job (a comparison) on a node, from when it can start
    "INVENTORY_RAY_JOB_TIMEOUT": (1200.0, False),
    # trace: a builder (a registry target or a recipe) exporting its module, per bundle
    "INVENTORY_TRACE_TIMEOUT": (1800.0, False),
}
# Which installer builds environments: uv (the default; pip when uv cannot be had) or pip.
INSTALLER_VAR = "INVENTORY_INSTALLER"
INSTALLERS = ("uv", "pip")
# A user's release catalog over the packaged one (`--catalog FILE` sets it for one command).
CATALOG_VAR = "INVENTORY_CATALOG"
# Pseudo file systems: a store there is never a folder the tool can keep results in.
_NOT_A_STORE = (Path("/proc"), Path("/sys"), Path("/dev"))


class SettingError(OracleUserError):
    """An environment variable holds a value the tool cannot use; one line naming it."""


def seconds(name: str) -> float:
    """The timeout `name` sets (its default when unset), validated."""
    default, zero = TIMEOUTS[name]
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(f"{name}={raw!r}: not a number of seconds") from None
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        bound = "0 or more" if zero else "above 0"
        raise SettingError(f"{name}={raw!r}: must be a finite number of seconds, {bound}")
    return value


def installer_choice() -> str:
    """INVENTORY_INSTALLER, validated: `uv` when unset."""
    raw = os.environ.get(INSTALLER_VAR, "").strip().lower() or "uv"
    if raw not in INSTALLERS:
        raise SettingError(
            f"{INSTALLER_VAR}={os.environ[INSTALLER_VAR]!r}: {' or '.join(INSTALLERS)}"
        )
    return raw


def user_catalog() -> Path | None:
    """INVENTORY_CATALOG: a user's release catalog (oracle/catalog/releases.py reads it), or
    None."""
    raw = os.environ.get(CATALOG_VAR, "").strip()
    return Path(raw).expanduser() if raw else None


def check_catalog() -> None:
    """INVENTORY_CATALOG names a regular file (its content is checked when it is read)."""
    path = user_catalog()
    if path is not None and not path.is_file():
        why = "no such file" if not path.exists() else "not a regular file"
        raise SettingError(
            f"{CATALOG_VAR}={os.environ[CATALOG_VAR]!r}: {why} (a release "
            f"catalog in converters.toml's format)"
        )


def check_cache(root: Path, name: str | None = None) -> None:
    """The store folder is a folder the tool can create and write: not a file, not under a
    pseudo file system such as /proc."""
    name = name or ("INVENTORY_CACHE" if os.environ.get("INVENTORY_CACHE") else "the store")
    for pseudo in _NOT_A_STORE:
        if root.is_relative_to(pseudo):
            raise SettingError(
                f"{name} {root}: under {pseudo}, not a folder results can be kept in"
            )
    existing = root
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        what = "is a file" if existing == root else f"is inside {existing}, which is a file"
        raise SettingError(f"{name} {root} {what}, not a folder")


def check_all() -> None:
    """Every setting, before a command does any work."""
    from oracle.infra.paths import cache_root, store_root
    from oracle.infra.store_setting import local_setting

    for name in TIMEOUTS:
        seconds(name)
    installer_choice()
    check_catalog()
    check_cache(cache_root())
    if local_setting():  # a URL is checked when the command connects to it (`--store`)
        check_cache(store_root(), "INVENTORY_STORE")
