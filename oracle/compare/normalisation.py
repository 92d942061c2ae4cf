"""Normalise Core AI IR text so that two conversions of the same program compare equal.

What varies between two conversions of one program, and is erased here:
- composite graph names carry 8 random lowercase letters per call (`@batch_norm_hxmvlxqs`,
  `@batch_norm_hxmvlxqs_spec_tensor...` after specialisation): renamed by first appearance;
- weight blobs get a random `resource_<N>` handle per process: renamed by first appearance;
- source locations (`loc(...)`, `#loc` aliases) name files and lines of the converting process;
- SSA value numbers: renumbered per graph by first appearance.
What is kept, as a digest where it is long: every weight and constant value, so a program whose
weights differ never compares equal.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from dataclasses import dataclass

_LONG_LITERAL = 96  # constant literals longer than this are replaced by their digest

_GRAPH_DECL = re.compile(r"coreai\.graph\s+(?:\w+\s+)*@([A-Za-z_][\w.$]*)\(")
_RANDOM_SUFFIX = re.compile(r"^(?P<stem>.+?)_(?P<rand>[a-z]{8})(?P<rest>_spec_.*)?$")
_RESOURCE = re.compile(r"\bresource_\d+\b")
_LOC_ALIAS_LINE = re.compile(r"^#loc\d*\s*=.*$", re.MULTILINE)
_SSA = re.compile(r"%(?:arg)?\d+\b")
_HEX_BLOB = re.compile(r'"0x([0-9A-Fa-f]+)"')
_DENSE_LIST = re.compile(r"dense<(\[[^<>]*\])>")


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _strip_locations(text: str) -> str:
    """Drop `loc(...)` annotations (balanced parentheses) and `#loc` alias definitions."""
    text = _LOC_ALIAS_LINE.sub("", text)
    out: list[str] = []
    i = 0
    while True:
        j = text.find("loc(", i)
        if j < 0 or (j > 0 and (text[j - 1].isalnum() or text[j - 1] == "_")):
            if j < 0:
                out.append(text[i:])
                break
            out.append(text[i : j + 4])
            i = j + 4
            continue
        out.append(text[i:j].rstrip(" "))
        depth, k = 0, j + 3
        while k < len(text):
            if text[k] == "(":
                depth += 1
            elif text[k] == ")":
                depth -= 1
                if depth == 0:
                    break
            elif text[k] == '"':  # skip quoted strings, which may hold parentheses
                k = text.index('"', k + 1)
            k += 1
        i = k + 1
    return "".join(out)


def _rename_composites(text: str) -> str:
    mapping: dict[str, str] = {}
    for name in _GRAPH_DECL.findall(text):
        match = _RANDOM_SUFFIX.match(name)
        if not match:
            continue
        rand = match["rand"]
        if rand not in mapping:
            mapping[rand] = f"G{len(mapping) + 1}"
    if not mapping:
        return text
    pattern = re.compile(
        r"_("
        + "|".join(map(re.escape, mapping))
        + r")\b|_("
        + "|".join(map(re.escape, mapping))
        + r")(?=_spec_)"
    )
    return pattern.sub(lambda m: "_" + mapping[m.group(1) or m.group(2)], text)


def _rename_resources(text: str) -> str:
    mapping: dict[str, str] = {}

    def repl(m: re.Match[str]) -> str:
        return mapping.setdefault(m.group(0), f"resource_R{len(mapping) + 1}")

    return _RESOURCE.sub(repl, text)


def _digest_literals(text: str) -> str:
    def hex_repl(m: re.Match[str]) -> str:
        body = m.group(1)
        return m.group(0) if len(body) <= _LONG_LITERAL else f'"sha256:{_digest(body.upper())}"'

    def list_repl(m: re.Match[str]) -> str:
        body = m.group(1)
        return m.group(0) if len(body) <= _LONG_LITERAL else f"dense<sha256:{_digest(body)}>"

    return _DENSE_LIST.sub(list_repl, _HEX_BLOB.sub(hex_repl, text))


def _renumber_ssa(text: str) -> str:
    """Renumber values per graph (a graph starts at each `coreai.graph` line)."""
    out: list[str] = []
    mapping: dict[str, str] = {}
    counts = {"%arg": 0, "%": 0}

    def repl(m: re.Match[str]) -> str:
        token = m.group(0)
        if token not in mapping:
            prefix = "%arg" if token.startswith("%arg") else "%"
            mapping[token] = f"{prefix}{counts[prefix]}"
            counts[prefix] += 1
        return mapping[token]

    for line in text.splitlines():
        if "coreai.graph" in line:
            mapping.clear()
            counts.update({"%arg": 0, "%": 0})
        out.append(_SSA.sub(repl, line))
    return "\n".join(out)


def normalise(text: str) -> str:
    # Long literals (weights as hex) first: they are most of a program's text, and hold nothing
    # the later passes change, which then read a text a fraction of the size.
    text = _digest_literals(text)
    text = _strip_locations(text)
    text = _rename_composites(text)
    text = _rename_resources(text)
    text = _renumber_ssa(text)
    lines = [line.rstrip() for line in text.splitlines()]
    return "\n".join(line for line in lines if line.strip()) + "\n"


@dataclass(frozen=True)
class Identity:
    identical: bool
    diff: str  # unified diff of the normalised texts; empty when identical
    changed_lines: int


def compare_texts(old: str, new: str, old_label: str = "old", new_label: str = "new") -> Identity:
    return compare_normalised(normalise(old), normalise(new), old_label, new_label)


def compare_normalised(a: str, b: str, old_label: str = "old", new_label: str = "new") -> Identity:
    """`compare_texts` of two texts already normalised."""
    if a == b:
        return Identity(True, "", 0)
    diff = list(
        difflib.unified_diff(a.splitlines(), b.splitlines(), old_label, new_label, lineterm="", n=2)
    )
    changed = sum(1 for ln in diff if ln[:1] in "+-" and not ln.startswith(("+++", "---")))
    return Identity(False, "\n".join(diff) + "\n", changed)
