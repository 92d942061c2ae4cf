"""The layering holds: the oracle never imports the inventory, lower layers never import higher
ones, imports form no cycle (function-level imports included: an import inside a function is
still an edge, and a cycle hidden that way is still a cycle), and only in-environment code
imports coreai."""

from __future__ import annotations

import ast
from pathlib import Path

from layers import COREAI_ALLOWED

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("oracle", "inventory")


def _layer(module: str) -> int:
    """0 the oracle; 1 the inventory's services and data; 2 its renderers; 3 the command line."""
    if module.startswith("oracle"):
        return 0
    if module.startswith("inventory.report") or module in (
        "inventory.output",
        "inventory.output_file",
        "inventory.user_text",
    ):
        return 2
    if module.startswith(
        ("inventory.cli", "inventory.commands", "inventory.options", "inventory.terminal")
    ):
        return 3
    return 1


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _imports(path: Path, top_level_only: bool, annotations: bool = False) -> set[str]:
    return _imports_in(path.read_text(), top_level_only, annotations, _module_names())


def _imports_in(
    source: str, top_level_only: bool, annotations: bool = False, modules: set[str] | None = None
) -> set[str]:
    """What `source` imports: at module level only, or at any level; with `annotations`, the
    imports under `if TYPE_CHECKING:` too (never executed, but a dependency all the same: a
    cycle closed there is a design cycle). `from package import name` is the module
    `package.name` when `modules` holds it (a sub-module, reached through its package), else
    `package` and `package.name`."""
    tree = ast.parse(source)
    found: set[str] = set()

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if (
                isinstance(child, ast.If)
                and "TYPE_CHECKING" in ast.unparse(child.test)
                and not annotations
            ):
                continue
            inner = nested or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if inner and top_level_only:
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                for a in child.names:
                    full = f"{child.module}.{a.name}"
                    found.update(
                        (full,) if modules is not None and full in modules else (child.module, full)
                    )
            visit(child, inner)

    visit(tree, False)
    return found


MODULES = _modules()


def _module_names() -> set[str]:
    return set(MODULES)


def test_oracle_never_imports_inventory():
    bad = {
        m: sorted(i for i in _imports(p, False) if i.split(".")[0] == "inventory")
        for m, p in MODULES.items()
        if m.startswith("oracle")
    }
    assert not {m: v for m, v in bad.items() if v}


def test_no_import_from_a_lower_layer_to_a_higher_one():
    bad = []
    for module, path in MODULES.items():
        for imported in _imports(path, False):
            if imported in MODULES and _layer(imported) > _layer(module):
                bad.append(f"{module} -> {imported}")
    assert not bad


def test_only_in_environment_code_imports_coreai():
    users = {
        m
        for m, p in MODULES.items()
        if any(
            i.split(".")[0] in ("coreai", "coreai_torch", "coreai_core") for i in _imports(p, False)
        )
    }
    assert users <= set(COREAI_ALLOWED), users - set(COREAI_ALLOWED)
    assert {"oracle.workers.probe_worker", "oracle.workers.scan_worker"} <= users


def _graph(
    top_level_only: bool, annotations: bool = False, modules: dict[str, Path] | None = None
) -> dict[str, set[str]]:
    """Module -> the modules of `inventory/` and `oracle/` it imports. `from package import
    name` names a module or an attribute; a package's __init__ is its own node, so only edges
    to real modules count."""
    modules = MODULES if modules is None else modules
    return {
        m: {i for i in _imports(p, top_level_only, annotations) if i in modules and i != m}
        for m, p in modules.items()
    }


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph, as the modules around it (first = last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := walk(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for module in sorted(graph):
        if module not in state and (cycle := walk(module)):
            return cycle
    return None


def test_module_level_imports_form_no_cycle():
    cycle = _cycle(_graph(top_level_only=True))
    assert cycle is None, "module-level import cycle: " + " -> ".join(cycle or [])


def test_imports_at_any_level_form_no_cycle():
    """An import inside a function defers the cycle to a call; it does not remove it."""
    cycle = _cycle(_graph(top_level_only=False))
    assert cycle is None, "import cycle (function-level imports included): " + " -> ".join(
        cycle or []
    )


def test_imports_for_annotations_form_no_cycle():
    """An import under `if TYPE_CHECKING:` is never executed, but it is a dependency: a cycle
    closed there (a service handing itself down to a helper that names its class) is a design
    cycle, broken by design (a protocol the lower module owns), not hidden from the check."""
    cycle = _cycle(_graph(top_level_only=False, annotations=True))
    assert cycle is None, "import cycle (annotation imports included): " + " -> ".join(cycle or [])


def test_the_cycle_check_sees_annotation_imports(tmp_path):
    """The check itself, on a tree of its own: two modules that import each other, one of them
    only under TYPE_CHECKING, are a cycle when annotations count, and only then."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "high.py").write_text("from pkg.low import helper\n")
    (package / "low.py").write_text(
        "from typing import TYPE_CHECKING\n\n"
        "if TYPE_CHECKING:\n    from pkg.high import Service\n\n"
        "def helper(service: 'Service') -> None: ...\n"
    )
    tree = {f"pkg.{p.stem}": p for p in package.glob("*.py") if p.stem != "__init__"}
    assert _cycle(_graph(top_level_only=False, modules=tree)) is None
    assert _cycle(_graph(top_level_only=False, annotations=True, modules=tree)) in (
        ["pkg.high", "pkg.low", "pkg.high"],
        ["pkg.low", "pkg.high", "pkg.low"],
    )


# The oracle's parts and which of them each may import (its own modules always), bottom up: the
# table of docs/architecture.md ("The oracle's parts"). Imports at any level count, annotation
# imports included. The in-environment scripts (workers) reach nothing of the main process.
ORACLE_PARTS: dict[str, set[str]] = {
    "oracle.errors": set(),
    "oracle.infra": {"oracle.errors"},
    "oracle.constructs": {"oracle.errors", "oracle.infra"},
    "oracle.compare": {"oracle.constructs"},
    "oracle.workers": {"oracle.errors", "oracle.infra", "oracle.constructs", "oracle.compare"},
    "oracle.catalog": {"oracle.errors", "oracle.infra", "oracle.constructs", "oracle.compare"},
    "oracle.envs": {"oracle.errors", "oracle.infra", "oracle.catalog"},
    "oracle.clients": {"oracle.errors", "oracle.infra", "oracle.catalog", "oracle.envs"},
    "oracle.store": {
        "oracle.errors",
        "oracle.infra",
        "oracle.compare",
        "oracle.catalog",
        "oracle.envs",
        "oracle.clients",
    },
    "oracle.executors": {
        "oracle.errors",
        "oracle.infra",
        "oracle.compare",
        "oracle.catalog",
        "oracle.envs",
        "oracle.clients",
        "oracle.store",
    },
    "oracle.session": {
        "oracle.errors",
        "oracle.infra",
        "oracle.compare",
        "oracle.catalog",
        "oracle.envs",
        "oracle.clients",
        "oracle.store",
        "oracle.executors",
    },
    "oracle.load_check": {
        "oracle.errors",
        "oracle.infra",
        "oracle.compare",
        "oracle.catalog",
        "oracle.envs",
        "oracle.clients",
        "oracle.store",
        "oracle.executors",
        "oracle.session",
    },
}


def _part(module: str) -> str | None:
    """The oracle part a module belongs to: its sub-package, or the top-level module itself (a
    name of the oracle package's own `__init__`, such as `lazy_exports`, belongs to no part)."""
    parts = module.split(".")
    if parts[0] != "oracle" or len(parts) < 2:
        return None
    part = ".".join(parts[:2])
    return part if part in MODULES else None


def test_each_oracle_part_imports_only_the_parts_beneath_it():
    assert set(ORACLE_PARTS) == {_part(m) for m in MODULES if _part(m)}, (
        "a part of the oracle missing from the table (and from docs/architecture.md)"
    )
    bad = sorted(
        f"{m} -> {i}"
        for m, p in MODULES.items()
        if (own := _part(m))
        for i in _imports(p, False, annotations=True)
        if (other := _part(i)) and other != own and other not in ORACLE_PARTS[own]
    )
    assert not bad


def test_the_table_of_parts_is_layered():
    """The table itself has no cycle: a part never reaches back to one that imports it."""
    assert _cycle({k: set(v) for k, v in ORACLE_PARTS.items()}) is None


def _named_in_import_statements(path: Path) -> set[str]:
    """The module each import statement of `path` names (`from X import ...`: X; `import X`:
    X), at any level, annotation imports included."""
    named: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            named.add(node.module)
        elif isinstance(node, ast.Import):
            named.update(a.name for a in node.names)
    return named


def test_the_oracle_is_its_parts():
    """At most 8 modules beside the sub-packages (today: the error root, the session and the
    load check); the inventory reaches the oracle through at most 12 of its parts, each by its
    package or top-level module (`from oracle.store import LoadCheck`), never by naming a module
    inside a sub-package (`from oracle.store.load_records import ...`; constructs, which
    predates the parts, aside)."""
    top = sorted(p.stem for p in (ROOT / "oracle").glob("*.py") if p.stem != "__init__")
    assert len(top) <= 8, top
    used: set[str] = set()
    deep: list[str] = []
    for module, path in MODULES.items():
        if not module.startswith("inventory"):
            continue
        for named in _named_in_import_statements(path):
            if (part := _part(named)) is None:
                continue
            used.add(part)
            if named != part and part != "oracle.constructs":
                deep.append(f"{module} -> {named}")
    assert len(used) <= 12, sorted(used)
    assert not deep


def test_the_cycle_check_sees_function_level_imports():
    """The check itself: a cycle closed by an import inside a function is found and named."""
    graph = {"a": {"b"}, "b": set(), "c": set()}
    assert _cycle(graph) is None
    graph["b"].add("a")
    assert _cycle(graph) == ["a", "b", "a"]
    source = (
        "class A:\n    def f(self):\n        from inventory.affected import Analyzer\n"
        "        import oracle.store.result_store\n"
    )
    assert not _imports_in(source, top_level_only=True)
    found = _imports_in(source, top_level_only=False)
    assert {"inventory.affected", "oracle.store.result_store"} <= found


def test_no_module_imports_click():
    """typer 0.29 vendors click, so a plain install of the project (the README's main job, no
    extras) has no `click`: importing it broke `scripts/inventory` on a clean clone while the
    test environment, where another package brings click, passed."""
    users = sorted(
        m for m, p in MODULES.items() if any(i.split(".")[0] == "click" for i in _imports(p, False))
    )
    assert not users


def test_no_shipped_module_reads_a_fault_injection_variable():
    """Faults no real input provokes are injected by test doubles (tests/helpers/doubles/), never by
    a variable the product reads."""
    readers = sorted(
        m
        for m, p in MODULES.items()
        if any(v in p.read_text() for v in ("INVENTORY_FAULT", "INVENTORY_WORKER_FAULT"))
    )
    assert not readers
