"""Where two whole programs differ: the differing lines of the normalised shipped programs,
grouped by the graph they sit in and mapped back to aten nodes, modules and constructs.

A line of the normalised program and the same line of the program printed with debug locations
correspond one to one (normalisation drops only locations and the alias definitions, checked by
`Located.aligned`). An op's location names, in its metadata, the aten nodes it was lowered from
(`"sources": [{identifiers = ["native_batch_norm_3"]}]`); each side's `nodes.json` gives those
nodes' module paths and the construct kind a detector recognises in them. A differing line in a
composite's body (`@batch_norm_G1`) is mapped through the composite's call sites in `@main`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

_ALIAS = re.compile(r"^(#[\w.$-]+)\s*=\s*(.*)$")
_TRAILING_LOC = re.compile(r"loc\((#loc\d+)\)\s*$")
_REFS = re.compile(r"#(?:loc|metadata)\d+\b")
_IDENTIFIERS = re.compile(r"identifiers\s*=\s*\[([^\]]*)\]")
_GRAPH = re.compile(r"coreai\.graph\s+(?:\w+\s+)*@([A-Za-z_][\w.$]*)\(")
_INVOKE = re.compile(r"coreai\.invoke\s+@([A-Za-z_][\w.$]*)\(")
_COMPOSITE_STEM = re.compile(r"_G\d+(?:_spec_.*)?$")
MAIN = "main"
_VALUE = re.compile(r"%(arg)?\d+\b")
_COREAI_OP = re.compile(r"=\s*(coreai\.[\w.]+)")
MODULES_SHOWN = 6
MERGE = 3  # equal lines between two differing runs of @main that still make one region


class Located:
    """A program printed with debug locations: its body lines and its alias definitions."""

    def __init__(self, text: str) -> None:
        self.aliases: dict[str, str] = {}
        self.lines: list[str] = []
        for line in text.splitlines():
            m = _ALIAS.match(line)
            if m:
                self.aliases[m.group(1)] = m.group(2)
            elif line.strip():
                self.lines.append(line)

    def aligned(self, normalised: list[str]) -> bool:
        return len(self.lines) == len(normalised)

    def identifiers(self, index: int) -> list[str]:
        """The aten node names an op line was lowered from (none for a non-op line)."""
        m = _TRAILING_LOC.search(self.lines[index])
        if not m:
            return []
        out: list[str] = []
        seen: set[str] = set()
        todo = [m.group(1)]
        while todo:
            ref = todo.pop()
            if ref in seen:
                continue
            seen.add(ref)
            body = self.aliases.get(ref, "")
            # 0.4.1+: a debuginfo location whose metadata has "sources"; 0.4.0 (before
            # coreai-torch#28): a fused location carrying `identifiers = [...]` itself (its
            # STANDARD mode)
            if '"sources"' in body or body.startswith("loc(fused<{"):
                for group in _IDENTIFIERS.findall(body):
                    out += [s.strip().strip('"') for s in group.split(",") if s.strip()]
            todo += _REFS.findall(body)
        return out


def graphs_of(lines: list[str]) -> list[str]:
    """The graph each line sits in (the last graph declared above it)."""
    current, out = "", []
    for line in lines:
        m = _GRAPH.search(line)
        if m:
            current = m.group(1)
        out.append(current)
    return out


def composite(graph: str) -> str:
    """A composite's stem (`batch_norm_G1_spec_...` -> `batch_norm`); "" for @main."""
    return "" if graph == MAIN else _COMPOSITE_STEM.sub("", graph)


@dataclass
class Region:
    graph: str
    composite: str
    lines_old: list[int] = field(default_factory=list)  # changed line numbers (1-based)
    lines_new: list[int] = field(default_factory=list)
    calls: int = 0  # a composite's call sites in @main
    constructs: list[str] = field(default_factory=list)
    modules: list[str] = field(default_factory=list)
    ops: list[str] = field(default_factory=list)
    coreai_ops: list[str] = field(default_factory=list)  # the Core AI ops on the changed lines
    located: bool = True  # mapped through debug locations
    nodes: set[str] = field(default_factory=set)  # the aten nodes its lines were lowered from
    # a region with no located line (a hoisted or folded constant): the aten nodes of the ops
    # that use its values, where a cut of it can start (never used to attribute it)
    consumers: set[str] = field(default_factory=set)

    @property
    def changed(self) -> int:
        return len(self.lines_old) + len(self.lines_new)

    def to_json(self) -> dict[str, Any]:
        return {
            "graph": self.graph,
            "composite": self.composite or None,
            "changed_lines": self.changed,
            "lines_old": spans(self.lines_old),
            "lines_new": spans(self.lines_new),
            "calls": self.calls,
            "constructs": self.constructs,
            "modules": self.modules[:MODULES_SHOWN],
            "module_count": len(self.modules),
            "ops": self.ops,
            "coreai_ops": self.coreai_ops,
            "located": self.located,
            "aten_nodes": len(self.nodes),
            "consumer_nodes": len(self.consumers),
        }


def spans(lines: list[int]) -> list[str]:
    out: list[str] = []
    for n in sorted(lines):
        if out and "-" in out[-1] and int(out[-1].split("-")[1]) == n - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{n}"
        elif out and "-" not in out[-1] and int(out[-1]) == n - 1:
            out[-1] = f"{out[-1]}-{n}"
        else:
            out.append(str(n))
    return out


@dataclass(frozen=True)
class Side:
    normalised: list[str]
    located: Located
    nodes: dict[str, dict[str, Any]]

    @property
    def aligned(self) -> bool:
        return self.located.aligned(self.normalised)


def _call_sites(side: Side, graph: str) -> list[int]:
    return [
        i
        for i, line in enumerate(side.normalised)
        if (m := _INVOKE.search(line)) and m.group(1) == graph
    ]


def _map(region: Region, side: Side, lines: list[int]) -> None:
    """Add what the given lines of one side were lowered from."""
    if not side.aligned:
        region.located = False
        return
    for i in lines:
        for name in side.located.identifiers(i):
            region.nodes.add(name)
            node = side.nodes.get(name)
            if node is None:
                continue
            if node.get("kind") and node["kind"] not in region.constructs:
                region.constructs.append(node["kind"])
            if node.get("module") and node["module"] not in region.modules:
                region.modules.append(node["module"])
            if node.get("target") and node["target"] not in region.ops:
                region.ops.append(node["target"])


_DEFINES = re.compile(r"^\s*(%\d+)(?::\d+)?\s*=")
CONSUMERS = 8  # users of an unlocated value followed, at most


def _consumers(region: Region, side: Side, lines: list[int]) -> None:
    """The aten nodes of the (located) ops that use the values the given lines define."""
    if not side.aligned:
        return
    for i in lines:
        m = _DEFINES.match(side.normalised[i])
        if not m:
            continue
        use = re.compile(re.escape(m.group(1)) + r"(?![\d])")
        users = [j for j in range(i + 1, len(side.normalised)) if use.search(side.normalised[j])]
        for j in users[:CONSUMERS]:
            region.consumers.update(side.located.identifiers(j))


def shape(line: str) -> str:
    """A line without its value numbers: one op inserted in @main renumbers every later value,
    which would make every later line differ; the ops and types that really changed do not."""
    return _VALUE.sub(lambda m: "%arg" if m.group(1) else "%", line)


def regions(old: Side, new: Side) -> list[Region]:
    """The differing regions of two normalised programs, in the old program's order: one per
    composite graph whose body differs, and in @main (or another graph that is not a composite)
    one per run of differing lines (runs at most MERGE equal lines apart are one region)."""
    graphs_old, graphs_new = graphs_of(old.normalised), graphs_of(new.normalised)
    found: dict[tuple[str, int], Region] = {}
    runs: dict[str, tuple[int, int]] = {}  # graph -> (its current run's number, where it ends)
    matcher = difflib.SequenceMatcher(
        None,
        [shape(ln) for ln in old.normalised],
        [shape(ln) for ln in new.normalised],
        autojunk=False,
    )
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        for side, lines, graphs in (
            ("old", range(i1, i2), graphs_old),
            ("new", range(j1, j2), graphs_new),
        ):
            for n in lines:
                g = graphs[n]
                if composite(g):
                    key = (g, 0)
                else:
                    number, end = runs.get(g, (0, -MERGE - 2))
                    if i1 - end > MERGE:  # a new run of this graph
                        number += 1
                    runs[g] = (number, max(end, i2))
                    key = (g, number)
                region = found.setdefault(key, Region(g, composite(g)))
                (region.lines_old if side == "old" else region.lines_new).append(n + 1)
    for region in found.values():
        for program, numbers in ((old, region.lines_old), (new, region.lines_new)):
            for n in numbers:
                m = _COREAI_OP.search(program.normalised[n - 1])
                if m and m.group(1) not in region.coreai_ops:
                    region.coreai_ops.append(m.group(1))
        if region.graph == MAIN:
            _map(region, old, [n - 1 for n in region.lines_old])
            _map(region, new, [n - 1 for n in region.lines_new])
            if not region.nodes:
                _consumers(region, old, [n - 1 for n in region.lines_old])
                _consumers(region, new, [n - 1 for n in region.lines_new])
        else:
            sites_old, sites_new = _call_sites(old, region.graph), _call_sites(new, region.graph)
            region.calls = max(len(sites_old), len(sites_new))
            _map(region, old, sites_old)
            _map(region, new, sites_new)
        region.constructs.sort()
    return list(found.values())
