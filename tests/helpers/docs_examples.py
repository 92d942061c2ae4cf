"""The usage examples of the docs and the README, and how their shown output is checked.

An example is a fenced block introduced by a marker that says what is run:

    <!-- example: affected --fix 54 --bundle sortformer -->
    ```
    $ inventory affected --fix 54 --bundle sortformer
    sortformer: values-move
    ...
    ```

`<!-- example: plan --to 0.4.3 | exit 1 -->` also states the exit code (default 0). The block's
first line is the command as a reader types it; the others are its output, abridged by hand:
a line `...` stands for lines left out, and a line ending in ` ...` for the rest of that line.
Every other shown line must be a line of the real output, in the order shown. Lines are compared
with runs of whitespace made one space, and with two kinds of token masked on both sides:
decimal numbers (measured floats: their last digits come from the runtime's CPU kernels, and
what they decide, the verdict, is compared as text; a dotted version such as 0.4.2 is not one)
and hex digests of 7 or more characters (store keys and commit ids, which differ from one store
or repository to the next). A table cell's `(stored)` is left out too: it says whether this run
read a result or made it. Counts, shapes, verdicts, release names and every other word are
compared as shown.

Placeholders in a marker (`{asset_040}`, `{out}`, `{repo}`) name files the test makes; the
output is compared with their folder left out, as a reader running in that folder sees it.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_BLOCK = re.compile(r"<!-- example: (?P<marker>.+?) -->\n```[^\n]*\n(?P<body>.*?)\n```", re.S)
# a decimal number, not a part of a dotted version (0.4.2, 1.0.0b3, 2.13.0+cpu)
_NUMBER = re.compile(r"(?<![\w.])[-+]?(\d+\.\d+(e[-+]?\d+)?|\d+e[-+]?\d+)(?![\d.]*\d)")
_HEX = re.compile(r"\b(?=[0-9a-f]*[a-f])[0-9a-f]{7,64}\b")
ELIDED = "..."


@dataclass(frozen=True)
class Example:
    page: str  # the page's path relative to the repository root
    args: tuple[str, ...]  # what is run: `inventory ARGS`
    exit: int  # the exit code the page states (0 unless it says `| exit N`)
    command: str  # the block's first line, as shown
    shown: tuple[str, ...]  # the output lines shown

    @property
    def id(self) -> str:
        return f"{self.page}:{' '.join(self.args)}"


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def examples(paths: list[Path] | None = None, root: Path = ROOT) -> list[Example]:
    found = []
    for path in paths if paths is not None else pages():
        for m in _BLOCK.finditer(path.read_text()):
            marker, _, code = m["marker"].partition(" | exit ")
            first, *shown = m["body"].splitlines()
            found.append(
                Example(
                    str(path.relative_to(root)),
                    tuple(shlex.split(marker)),
                    int(code) if code else 0,
                    first,
                    tuple(shown),
                )
            )
    return found


def normalise(line: str) -> str:
    # hashes first: a short hash such as 3e15cdf would otherwise read as the number 3e15
    line = _NUMBER.sub("<n>", _HEX.sub("<hex>", line.replace(" (stored)", "")))
    return " ".join(line.split())


def missing(shown: tuple[str, ...], output: str) -> list[str]:
    """The shown lines not found in `output` in the order shown (empty: the page is current)."""
    real = [normalise(ln) for ln in output.splitlines()]
    at, lost = 0, []
    for line in shown:
        want = normalise(line)
        if want in ("", ELIDED):
            continue
        prefix = want.endswith(" " + ELIDED)
        want = want[: -len(ELIDED)].rstrip() if prefix else want
        hit = next(
            (
                i
                for i in range(at, len(real))
                if real[i] == want or (prefix and real[i].startswith(want))
            ),
            None,
        )
        if hit is None:
            lost.append(line)
        else:
            at = hit + 1
    return lost
