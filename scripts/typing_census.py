"""How much of a package is typed by string keys: per module, the string-key reads (`x["key"]`
and `x.get("key")`), the annotations that name `Any`, and the `dict[str, Any]` written in a
function's signature (its parameters and its return).

Usage: `scripts/typing-census [FOLDER ...]` (default: `inventory` and `oracle`). Prints one line
per module with any count, then each folder's totals (its own modules and those below it).
Counts what the source says, read with `ast` (a string key in a comment or a docstring is not a
read); asserts nothing: it is the measure the typed documents are held against.
"""

from __future__ import annotations

import argparse
import ast
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Census:
    key_reads: int
    any_annotations: int
    dict_any_in_signatures: int

    def __add__(self, other: Census) -> Census:
        return Census(
            self.key_reads + other.key_reads,
            self.any_annotations + other.any_annotations,
            self.dict_any_in_signatures + other.dict_any_in_signatures,
        )

    def __bool__(self) -> bool:
        return bool(self.key_reads or self.any_annotations or self.dict_any_in_signatures)


NONE = Census(0, 0, 0)


def _is_str(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _unquoted(annotation: ast.expr) -> ast.expr:
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            return ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return annotation
    return annotation


def _names_any(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    annotation = _unquoted(annotation)
    return any(
        (isinstance(n, ast.Name) and n.id == "Any")
        or (isinstance(n, ast.Attribute) and n.attr == "Any")
        for n in ast.walk(annotation)
    )


def _dict_str_any(annotation: ast.expr | None) -> int:
    if annotation is None:
        return 0
    return sum(
        1
        for n in ast.walk(_unquoted(annotation))
        if isinstance(n, ast.Subscript)
        and isinstance(n.value, ast.Name)
        and n.value.id == "dict"
        and isinstance(n.slice, ast.Tuple)
        and len(n.slice.elts) == 2
        and isinstance(n.slice.elts[0], ast.Name)
        and n.slice.elts[0].id == "str"
        and _names_any(n.slice.elts[1])
    )


def _annotations(tree: ast.AST) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.arg) and node.annotation is not None:
            found.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns:
            found.append(node.returns)
    return found


def _signatures(tree: ast.AST) -> list[ast.expr]:
    found: list[ast.expr] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            found += [a.annotation for a in every if a is not None and a.annotation is not None]
            if node.returns is not None:
                found.append(node.returns)
    return found


def census(source: str) -> Census:
    tree = ast.parse(source)
    reads = 0
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and _is_str(node.slice):
            # a read, or a write to a key: both are the same string-keyed record
            reads += 1
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and _is_str(node.args[0])
        ):
            reads += 1
    anys = sum(1 for a in _annotations(tree) if _names_any(a))
    dicts = sum(_dict_str_any(a) for a in _signatures(tree))
    return Census(reads, anys, dicts)


def _row(name: str, c: Census) -> str:
    return f"{name:<52} {c.key_reads:>6} {c.any_annotations:>6} {c.dict_any_in_signatures:>6}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("folders", nargs="*", default=["inventory", "oracle"])
    args = parser.parse_args(argv)
    print(f"{'module':<52} {'keys':>6} {'Any':>6} {'dict[str, Any] in signatures'}")
    totals: dict[str, Census] = {}
    for folder in args.folders:
        base = (ROOT / folder).resolve()
        if not base.is_dir():
            print(f"typing-census: {folder} is not a folder", file=sys.stderr)
            return 2
        for path in sorted(base.rglob("*.py")):
            c = census(path.read_text())
            # named from the checkout's root, or from the folder's parent for one outside it
            rel = path.relative_to(ROOT if base.is_relative_to(ROOT) else base.parent)
            if c:
                print(_row(str(rel), c))
            for parent in rel.parents:
                if parent != Path("."):
                    totals[str(parent)] = totals.get(str(parent), NONE) + c
    print()
    for folder, c in sorted(totals.items()):
        print(_row(folder + "/", c))
    return 0


if __name__ == "__main__":
    sys.exit(main())
