"""Names that say what they hold: no two modules of the packages share a basename, except by
one of the conventions below, each a family of modules named for what they serve. A second
`worker.py`, `loads.py` or `runtimes.py` beside the first is a name that no longer says which
one a reader has open."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _convention(path: Path) -> str | None:
    """Which naming convention lets `path` share its basename, or None."""
    rel = path.relative_to(ROOT).parts
    if rel[:2] == ("inventory", "commands"):
        return "a command's module, named for the command it implements"
    if rel[:2] == ("inventory", "trace") and len(rel) == 4 and rel[2] in ("recipes", "targets"):
        return "a shipped bundle's recipe adapter or stand-in target, named for the bundle"
    if rel[-1] == "service.py":
        return "a package's service, its entry point for the command line"
    if rel[-1] == "errors.py" and len(rel) == 2:
        return "a top package's error root"
    return None


def test_no_two_modules_share_a_basename_outside_a_convention():
    by_name: dict[str, list[Path]] = defaultdict(list)
    for package in ("inventory", "oracle"):
        for path in (ROOT / package).rglob("*.py"):
            if path.name != "__init__.py":
                by_name[path.name].append(path)
    # a shared name is admitted when at most one of its modules is outside every convention
    # (`inventory/plan.py` beside `inventory/commands/plan.py`)
    outside = {
        name: sorted(str(p.relative_to(ROOT)) for p in paths if _convention(p) is None)
        for name, paths in by_name.items()
        if len(paths) > 1
    }
    assert not {name: paths for name, paths in outside.items() if len(paths) > 1}


def test_the_check_sees_a_shared_basename(tmp_path):
    """The convention admits the command modules; a module of the same name elsewhere would not
    be admitted."""
    assert _convention(ROOT / "inventory" / "commands" / "plan.py") is not None
    assert _convention(ROOT / "inventory" / "verify" / "plan.py") is None
    assert _convention(ROOT / "oracle" / "catalog" / "errors.py") is None
