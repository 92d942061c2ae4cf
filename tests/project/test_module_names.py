"""Names that say what they hold: no two modules of the packages share a basename, except by
one of the conventions below, each a family of modules named for what they serve. A second
`worker.py`, `loads.py` or `runtimes.py` beside the first is a name that no longer says which
one a reader has open."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


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


# The folders of tests/ beside the mirror of the packages: what the tests share, the golden
# answers, and the tests of the whole tool rather than of one package (its refusals and faults,
# its docs, the project's own rules).
_BESIDE_THE_MIRROR = ("helpers", "golden", "reliability", "docs", "project")


def _misplaced(tests: Path, root: Path) -> list[str]:
    """Test files whose folder is neither a package's mirror (tests/oracle/store/ for
    oracle/store/) nor one of the folders beside it."""
    out = []
    for path in sorted(tests.rglob("test_*.py")):
        folder = path.parent.relative_to(tests)
        if folder.parts and folder.parts[0] in _BESIDE_THE_MIRROR and len(folder.parts) == 1:
            continue
        package = root / folder
        if (
            not folder.parts
            or folder.parts[0] not in ("inventory", "oracle")
            or not (package / "__init__.py").is_file()
        ):
            out.append(str(path.relative_to(tests)))
    return out


def test_the_tests_mirror_the_packages():
    """A package's tests are found where the package is: tests/oracle/<part>/ beside
    oracle/<part>/, tests/inventory/<package>/ beside inventory/<package>/."""
    assert _misplaced(ROOT / "tests", ROOT) == []
    tests = {
        p.parent.relative_to(ROOT / "tests").parts[:2] for p in (ROOT / "tests").rglob("test_*.py")
    }
    assert {("oracle", "catalog"), ("oracle", "store"), ("inventory", "verify")} <= tests


def test_the_mirror_check_sees_a_misplaced_test(tmp_path):
    """The check itself, on a tree of its own: a test at the top of tests/, or under a folder no
    package has, is misplaced; one beside its package, or in a folder beside the mirror, is not."""
    (tmp_path / "oracle" / "store").mkdir(parents=True)
    (tmp_path / "oracle" / "store" / "__init__.py").write_text("")
    tests = tmp_path / "tests"
    for rel in (
        "test_top.py",
        "oracle/nowhere/test_a.py",
        "oracle/store/test_b.py",
        "reliability/test_c.py",
    ):
        (tests / rel).parent.mkdir(parents=True, exist_ok=True)
        (tests / rel).write_text("")
    assert _misplaced(tests, tmp_path) == ["oracle/nowhere/test_a.py", "test_top.py"]
