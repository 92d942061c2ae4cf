"""A terminal table that fits the width it is printed at: the columns that must stay whole (a
bundle's name, a level) never wrap, no column is narrower than its longest word (a word is never
split), and when the table cannot fit, the least important columns are left out first, saying
which (the JSON and markdown hold them all)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from rich.console import Console, ConsoleOptions, RenderResult
from rich.table import Table
from rich.text import Text

Cell = str | Text


@dataclass(frozen=True)
class Column:
    name: str
    priority: int  # 0: always shown; higher numbers are left out first when the width is short
    no_wrap: bool = False


def _text(cell: Cell) -> str:
    return cell.plain if isinstance(cell, Text) else cell


def _least(column: Column, cells: Sequence[Cell]) -> int:
    """The narrowest the column can be without splitting a word (or, no_wrap, a line)."""
    texts = [column.name, *(_text(c) for c in cells)]
    if column.no_wrap:
        return _most(column, cells)
    return max((len(word) for t in texts for word in t.split()), default=1)


def _most(column: Column, cells: Sequence[Cell]) -> int:
    """The widest the column needs: its longest line."""
    texts = [column.name, *(_text(c) for c in cells)]
    return max(len(line) for t in texts for line in t.splitlines() or [""])


# a heavy-edged box: one rule per column and one more, one space either side of a cell
_EDGES = 3


@dataclass(frozen=True)
class FittedTable:
    columns: tuple[Column, ...]
    rows: tuple[Mapping[str, Cell], ...]
    title: str | None = None
    lines: bool = False  # a rule between rows (rows of several lines each)

    def _cells(self, column: Column) -> list[Cell]:
        return [r[column.name] for r in self.rows]

    def widths(self, kept: Sequence[Column], width: int) -> list[int]:
        """Each kept column's width at this table width: as wide as its longest line where the
        width allows, else the widest columns narrowed first, none below its longest word
        (rich's own shrinking narrows columns evenly, splitting a word of a narrow one while a
        wide one has room)."""
        least = [_least(c, self._cells(c)) for c in kept]
        shown = [max(lo, _most(c, self._cells(c))) for c, lo in zip(kept, least, strict=True)]
        excess = sum(shown) + _EDGES * len(kept) + 1 - width
        while excess > 0:
            narrower = [i for i, w in enumerate(shown) if w > least[i]]
            if not narrower:
                break
            widest = max(narrower, key=lambda i: shown[i])
            # down to the next widest column's width at most: many characters in one step
            others = [shown[i] for i in narrower if i != widest]
            step = max(1, min(excess, shown[widest] - max([least[widest], *others])))
            shown[widest] -= step
            excess -= step
        return shown

    def shown(self, width: int) -> tuple[list[Column], list[Column]]:
        """The columns kept at this width, and those left out (least important first)."""
        kept = list(self.columns)
        dropped: list[Column] = []

        def need(cols: list[Column]) -> int:
            return sum(_least(c, self._cells(c)) + _EDGES for c in cols) + 1

        while need(kept) > width and any(c.priority > 0 for c in kept):
            drop = max((c for c in kept if c.priority > 0), key=lambda c: c.priority)
            kept.remove(drop)
            dropped.append(drop)
        return kept, dropped

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        kept, dropped = self.shown(options.max_width)
        table = Table(title=self.title, title_justify="left", show_lines=self.lines)
        for c, w in zip(kept, self.widths(kept, options.max_width), strict=True):
            table.add_column(c.name, no_wrap=c.no_wrap, overflow="fold", width=w)
        for r in self.rows:
            table.add_row(*(r[c.name] for c in kept))
        yield table
        if dropped:
            yield Text(
                f"(left out at {options.max_width} columns: "
                f"{', '.join(c.name for c in dropped)}; a wider terminal, COLUMNS=N or "
                "--format json/markdown shows them)",
                style="dim",
            )


def fitted_table(
    columns: Sequence[Column],
    rows: Sequence[Mapping[str, Cell]],
    title: str | None = None,
    lines: bool = False,
) -> FittedTable:
    return FittedTable(tuple(columns), tuple(rows), title, lines)


def names(table: FittedTable, width: int) -> Iterator[str]:
    """The column names shown at a width (for tests and help)."""
    yield from (c.name for c in table.shown(width)[0])
