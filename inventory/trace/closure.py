"""The source closure of a recipe's builder: the files of the recipe repository its module
imports, transitively, with their contents' digest. A stored whole-program check of a recipe's
module is keyed by it (`inventory.verify.parts.build_folder`), not by the repository's HEAD: a
commit that touches no file of the closure leaves the check as it was, one that changes an
imported file does not.

The closure is found by reading the sources (`ast`), never by importing them: a stored check is
looked up by `plan` and `affected`, which must not run the user's code to read a store (nor
pay torch's import for it). Reading is an over-approximation where it matters: an import under
an `if`, in a `try` or inside a function counts whether or not it runs. What reading cannot
see is a module named at run time (`importlib.import_module(name)`, `__import__`, `exec`,
`runpy`, a spec from a file): a file of the closure that does so widens the closure to every
Python file of the repository (`widened` says which file did). A data file the builder reads
(a config) is not part of it; its recipe file is, so a builder that reads one states it there.
"""

from __future__ import annotations

import ast
import hashlib
from dataclasses import dataclass
from pathlib import Path

from inventory.trace import recipes

# calls that name a module at run time: what the sources cannot show
_DYNAMIC = frozenset(
    {"__import__", "import_module", "exec", "run_path", "run_module", "spec_from_file_location"}
)
# far above any recipe repository's Python, far below harm
MAX_FILES = 20_000


@dataclass(frozen=True)
class Closure:
    files: tuple[str, ...]  # relative to the root, POSIX, sorted
    digest: str  # of each file's path and content
    widened: str = ""  # the file whose run-time import widened it to the whole repository

    def to_json(self) -> dict[str, object]:
        return {"files": list(self.files), "digest": self.digest, "widened": self.widened}


def closure(root: Path, builder: recipes.Builder) -> Closure:
    """The builder's closure in the checkout `root` (the folders its module is imported with:
    the file's own folder, or the root for a module, then the registry's `search_path`)."""
    root = root.resolve()
    start = recipes.inside(root, builder.file, "recipe.builder")
    if not start.is_file() and builder.module:
        start = recipes.inside(
            root, builder.module.replace(".", "/") + "/__init__.py", "recipe.builder.module"
        )
    folders = [start.parent, root] + [
        recipes.inside(root, p, "search_path entry") for p in builder.search_path
    ]
    seen: set[Path] = set()
    todo = [start]
    widened = ""
    while todo:
        path = todo.pop()
        if path in seen or not path.is_file():
            continue
        seen.add(path)
        if len(seen) > MAX_FILES:
            raise recipes.RecipeError(
                f"{builder.file} imports more than {MAX_FILES} files of {root}"
            )
        tree = _parsed(path)
        if tree is None:
            continue
        if not widened and _names_modules_at_run_time(tree):
            widened = path.relative_to(root).as_posix()
        todo += [f for f in _imported(tree, path, folders, root) if f not in seen]
    if widened:
        seen |= {
            p
            for p in root.rglob("*.py")
            if not any(part.startswith(".") for part in p.relative_to(root).parts)
        }
        if len(seen) > MAX_FILES:
            raise recipes.RecipeError(
                f"{widened} imports a module named at run time, and {root} holds more than "
                f"{MAX_FILES} Python files to key its check by"
            )
    return _digested(root, seen, widened)


def _parsed(path: Path) -> ast.Module | None:
    try:
        return ast.parse(path.read_bytes(), filename=str(path))
    except (SyntaxError, ValueError):
        return None  # its content is digested; the build says what is wrong with it


def _names_modules_at_run_time(tree: ast.Module) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = (
                func.id
                if isinstance(func, ast.Name)
                else func.attr
                if isinstance(func, ast.Attribute)
                else ""
            )
            if name in _DYNAMIC:
                return True
    return False


def _imported(tree: ast.Module, path: Path, folders: list[Path], root: Path) -> list[Path]:
    """The files of the root an `import` or `from ... import` of the module names: each
    package's `__init__.py` on the way, the module, and a submodule a `from` import names."""
    out: list[Path] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                out += _resolved(alias.name.split("."), folders, root)
        elif isinstance(node, ast.ImportFrom):
            parts = (node.module or "").split(".") if node.module else []
            if node.level:
                base = path.parent
                for _ in range(node.level - 1):
                    base = base.parent
                bases = [base]
            else:
                bases = folders
            out += _resolved(parts, bases, root)
            for alias in node.names:
                out += _resolved([*parts, alias.name], bases, root)
    return out


def _resolved(parts: list[str], folders: list[Path], root: Path) -> list[Path]:
    out: list[Path] = []
    for folder in folders:
        here = folder
        for i, part in enumerate(parts):
            here = here / part
            last = i == len(parts) - 1
            candidates = [here / "__init__.py"] + ([here.with_suffix(".py")] if last else [])
            out += [c for c in candidates if _inside(c, root)]
        if not parts:  # `from . import x`: the package itself
            out += [c for c in [folder / "__init__.py"] if _inside(c, root)]
    return out


def _inside(path: Path, root: Path) -> bool:
    if not path.is_file():
        return False
    return path.resolve().is_relative_to(root)


def _digested(root: Path, files: set[Path], widened: str) -> Closure:
    names = sorted(p.relative_to(root).as_posix() for p in files)
    h = hashlib.sha256()
    for name in names:
        h.update(name.encode() + b"\0")
        h.update(hashlib.sha256((root / name).read_bytes()).digest())
    return Closure(tuple(names), h.hexdigest()[:20], widened)
