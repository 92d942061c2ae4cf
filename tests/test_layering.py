"""The layering holds: the oracle never imports the inventory, lower layers never import higher
ones, imports form no cycle (function-level imports included: an import inside a function is
still an edge, and a cycle hidden that way is still a cycle), and only in-environment code
imports coreai."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("oracle", "inventory")
# Code that runs inside a converter environment (or, for the trace worker, a subprocess that
# borrows the converter's get_decomp_table()): the only places coreai may be imported.
COREAI_ALLOWED = {
    "oracle.worker": "the in-environment probe worker",
    "oracle.scan_worker": "the in-environment bundle reader",
    "oracle.asset_worker": "the in-environment asset loader and location rewriter",
    "oracle.program_worker": "the in-environment whole-program converter (inventory verify)",
    "oracle.location_worker": "the in-environment debug-location reader (scripts/conformance)",
    "oracle.constructs.quantize": "the probe of coreai-torch's own quantize ops (built in env)",
    "inventory.trace.trace_worker": "the trace subprocess: get_decomp_table() only",
}


def _layer(module: str) -> int:
    """0 the oracle; 1 the inventory's services and data; 2 its renderers; 3 the command line."""
    if module.startswith("oracle"):
        return 0
    if module.startswith("inventory.report") or module == "inventory.output":
        return 2
    if module.startswith(("inventory.cli", "inventory.commands", "inventory.options",
                          "inventory.terminal")):
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


def _imports(path: Path, top_level_only: bool, type_checking: bool = False) -> set[str]:
    return _imports_in(path.read_text(), top_level_only, type_checking)


def _imports_in(source: str, top_level_only: bool, type_checking: bool = False) -> set[str]:
    """The modules a source imports; `type_checking`: those imported for annotations only
    (under `if TYPE_CHECKING:`) too."""
    tree = ast.parse(source)
    found: set[str] = set()

    def visit(node: ast.AST, nested: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test) \
                    and not type_checking:
                continue  # annotations only, never executed
            inner = nested or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if inner and top_level_only:
                continue
            if isinstance(child, ast.Import):
                found.update(a.name for a in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                found.add(child.module)
                found.update(f"{child.module}.{a.name}" for a in child.names)
            visit(child, inner)

    visit(tree, False)
    return found


MODULES = _modules()


def test_oracle_never_imports_inventory():
    bad = {m: sorted(i for i in _imports(p, False) if i.split(".")[0] == "inventory")
           for m, p in MODULES.items() if m.startswith("oracle")}
    assert not {m: v for m, v in bad.items() if v}


def test_no_import_from_a_lower_layer_to_a_higher_one():
    bad = []
    for module, path in MODULES.items():
        for imported in _imports(path, False):
            if imported in MODULES and _layer(imported) > _layer(module):
                bad.append(f"{module} -> {imported}")
    assert not bad


def test_only_in_environment_code_imports_coreai():
    users = {m for m, p in MODULES.items()
             if any(i.split(".")[0] in ("coreai", "coreai_torch", "coreai_core")
                    for i in _imports(p, False))}
    assert users <= set(COREAI_ALLOWED), users - set(COREAI_ALLOWED)
    assert {"oracle.worker", "oracle.scan_worker"} <= users


def _graph(top_level_only: bool, type_checking: bool = False) -> dict[str, set[str]]:
    """Module -> the modules of `inventory/` and `oracle/` it imports. `from package import
    name` names a module or an attribute; a package's __init__ is its own node, so only edges
    to real modules count."""
    return {m: {i for i in _imports(p, top_level_only, type_checking) if i in MODULES and i != m}
            for m, p in MODULES.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of the graph, as the modules around it (first = last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
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
    assert cycle is None, "import cycle (function-level imports included): " + \
        " -> ".join(cycle or [])


def test_no_annotation_import_closes_a_cycle_within_the_inventory():
    """An import under `if TYPE_CHECKING:` never runs, but it still says a lower module knows a
    higher one (an `Analyzer` handed down instead of the protocol it uses): counted here. Only
    cycles all of whose modules are in `inventory/` are asserted; the oracle's own are left to
    its layering."""
    graph = {m: {i for i in edges if i.startswith("inventory")}
             for m, edges in _graph(top_level_only=False, type_checking=True).items()
             if m.startswith("inventory")}
    cycle = _cycle(graph)
    assert cycle is None, "import cycle (annotation imports included): " + " -> ".join(cycle or [])


def test_the_cycle_check_sees_annotation_imports_when_asked():
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
              "    from inventory.affected import Analyzer\n")
    assert "inventory.affected" not in _imports_in(source, top_level_only=False)
    assert "inventory.affected" in _imports_in(source, top_level_only=False, type_checking=True)


def test_the_cycle_check_sees_function_level_imports():
    """The check itself: a cycle closed by an import inside a function is found and named."""
    graph = {"a": {"b"}, "b": set(), "c": set()}
    assert _cycle(graph) is None
    graph["b"].add("a")
    assert _cycle(graph) == ["a", "b", "a"]
    source = ("class A:\n    def f(self):\n        from inventory.affected import Analyzer\n"
              "        import oracle.store\n")
    assert not _imports_in(source, top_level_only=True)
    assert {"inventory.affected", "oracle.store"} <= _imports_in(source, top_level_only=False)


def test_no_module_imports_click():
    """typer 0.29 vendors click, so a plain install of the project (the README's main job, no
    extras) has no `click`: importing it broke `scripts/inventory` on a clean clone while the
    test environment, where another package brings click, passed."""
    users = sorted(m for m, p in MODULES.items()
                   if any(i.split(".")[0] == "click" for i in _imports(p, False)))
    assert not users


def test_no_shipped_module_reads_a_fault_injection_variable():
    """Faults no real input provokes are injected by test doubles (tests/doubles/), never by a
    variable the product reads."""
    readers = sorted(m for m, p in MODULES.items()
                     if any(v in p.read_text() for v in ("INVENTORY_FAULT",
                                                         "INVENTORY_WORKER_FAULT")))
    assert not readers
