"""A terminal table that fits the width it is printed at: the columns that must stay whole (a
bundle's name, a level) never wrap, and when the table cannot fit, the least important columns
are left out first, saying which (the JSON and markdown hold them all)."""

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
        return max(len(line) for t in texts for line in t.splitlines() or [""])
    return max((len(word) for t in texts for word in t.split()), default=1)


@dataclass(frozen=True)
class FittedTable:
    columns: tuple[Column, ...]
    rows: tuple[Mapping[str, Cell], ...]
    title: str | None = None

    def shown(self, width: int) -> tuple[list[Column], list[Column]]:
        """The columns kept at this width, and those left out (least important first)."""
        kept = list(self.columns)
        dropped: list[Column] = []

        def need(cols: list[Column]) -> int:
            # a heavy-edged box: one rule per column and one more, one space either side
            return sum(_least(c, [r[c.name] for r in self.rows]) + 3 for c in cols) + 1

        while need(kept) > width and any(c.priority > 0 for c in kept):
            drop = max((c for c in kept if c.priority > 0), key=lambda c: c.priority)
            kept.remove(drop)
            dropped.append(drop)
        return kept, dropped

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        kept, dropped = self.shown(options.max_width)
        table = Table(title=self.title, title_justify="left")
        for c in kept:
            table.add_column(c.name, no_wrap=c.no_wrap, overflow="fold")
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
    columns: Sequence[Column], rows: Sequence[Mapping[str, Cell]], title: str | None = None
) -> FittedTable:
    return FittedTable(tuple(columns), tuple(rows), title)


def names(table: FittedTable, width: int) -> Iterator[str]:
    """The column names shown at a width (for tests and help)."""
    yield from (c.name for c in table.shown(width)[0])
