"""What vmio draws on a terminal, through ``rich``: the progress bar of ``vmio run`` and the tables of
``show`` and ``compare``. Off a terminal (a pipe, a file, a test) the callers print plain text exactly as
before; nothing here is used then.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from rich import box
from rich.cells import cell_len
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text


def console_for(stream: TextIO) -> Console | None:
    """A rich console for ``stream`` when it is a terminal, else None (plain text)."""
    return Console(file=stream) if stream.isatty() else None


GAP = 3  # columns between two cells of a table (rich's SIMPLE_HEAD box: a padded separator, no edges)
NAME_SHARE = 0.4  # of the terminal's width the first column (a point's or campaign's name) keeps at least


def print_table(
    console: Console,
    lines: Sequence[Sequence[str]],
    *,
    right: frozenset[int] = frozenset(),
    title: str = "",
    tail: str = "",
    empty: str = "",
    drop: Sequence[int] = (),
    wide: bool = False,
    fold: frozenset[int] = frozenset({0}),
) -> None:
    """``lines`` (the head first) as a rich table, with the plain title above and the tail below.

    No cell is ever cut: when the table is wider than the terminal, the columns in ``drop`` go, in that
    order, until the rest fit (the columns in ``fold``, names, may wrap onto more lines but keep every
    character), and a line under the table names them and the flag that shows them all (``--wide``). With
    ``wide`` every column is shown and lines longer than the terminal are left for it to wrap.
    """
    if title:
        console.print(Text(title.rstrip("\n")))
    if not lines:
        if empty:
            console.print(Text(empty.rstrip("\n")))
    else:
        kept = list(range(len(lines[0]))) if wide else fitting(lines, console.width, drop, fold)
        table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False, show_edge=False)
        for i in kept:
            table.add_column(
                lines[0][i],
                justify="right" if i in right else "left",
                no_wrap=i not in fold,
                overflow="fold" if i in fold else "ellipsis",
            )
        for line in lines[1:]:
            table.add_row(*(Text(line[i]) for i in kept))
        if wide and natural_width(lines, kept) > console.width:
            was = console.width  # rich's Console.print keeps within the console's width: widen it
            console.width = natural_width(lines, kept)
            try:
                console.print(table, crop=False)
            finally:
                console.width = was
        else:
            console.print(table)
        hidden = [lines[0][i] for i in range(len(lines[0])) if i not in kept]
        if hidden:
            console.print(
                Text(f"not shown for want of width: {', '.join(hidden)}; --wide shows every column")
            )
    if tail:
        console.print(Text(tail.rstrip("\n")))


def by_name(head: Sequence[str], names: Sequence[str]) -> list[int]:
    """The indices of the columns headed ``names`` (in that order; names not in ``head`` skipped)."""
    return [head.index(n) for n in names if n in head]


def widths(lines: Sequence[Sequence[str]]) -> list[int]:
    """Each column's width: its widest cell or head."""
    return [max(cell_len(line[i]) for line in lines) for i in range(len(lines[0]))]


def natural_width(lines: Sequence[Sequence[str]], kept: Sequence[int]) -> int:
    """The columns a table of the ``kept`` columns takes with no cell wrapped."""
    every = widths(lines)
    return sum(every[i] for i in kept) + GAP * (len(kept) - 1)


def fitting(
    lines: Sequence[Sequence[str]], width: int, drop: Sequence[int], fold: frozenset[int] = frozenset({0})
) -> list[int]:
    """The columns shown on a terminal ``width`` wide: all but the first of ``drop`` (in its order) that
    must go for the others to fit whole, the columns in ``fold`` (names, which may wrap) counted at no more
    than their share of the width (``NAME_SHARE`` between them)."""
    every = widths(lines)
    kept = list(range(len(every)))

    def need() -> int:
        folding = [i for i in kept if i in fold]
        share = max(int(width * NAME_SHARE / max(len(folding), 1)), 12)
        cells = sum(min(every[i], share) if i in fold else every[i] for i in kept)
        return cells + GAP * (len(kept) - 1)

    for i in drop:
        if need() <= width:
            break
        if i in kept and i not in fold:
            kept.remove(i)
    return kept


class RichBar:
    """``vmio run``'s progress on a terminal: points done/total, the current point and the seconds it has
    left, elapsed, the ETA (counting down within a point) and the IOPS: the device's, live, while a point
    runs; the point's measured IOPS once it is done."""

    def __init__(self, console: Console) -> None:
        self.progress = Progress(
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]:7} {task.fields[point]} {task.fields[left]}"),
            TimeElapsedColumn(),
            TextColumn("ETA {task.fields[eta]}"),
            TextColumn("{task.fields[iops]}"),
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task(
            "points", total=None, status="", point="", left="", eta="-", iops="-"
        )
        self.started = False

    def update(
        self,
        done: int,
        total: int,
        point: str,
        status: str,
        eta_s: float | None,
        iops: float | None,
        left_s: float | None = None,
        *,
        live: bool = False,
    ) -> None:
        if not self.started:
            self.progress.start()
            self.started = True
        fields: dict[str, str] = {"status": status, "point": point}
        fields["left"] = f"({hms(left_s)} left)" if left_s is not None and status == "running" else ""
        if eta_s is not None:
            fields["eta"] = hms(eta_s)
        if iops is not None:
            fields["iops"] = f"{'device now' if live else 'last'} {iops:,.0f} IOPS"
        self.progress.update(self.task, completed=done, total=total)
        self.progress.tasks[self.task].fields.update(fields)
        self.progress.refresh()

    def close(self) -> None:
        if self.started:
            self.progress.stop()


def hms(seconds: float) -> str:
    s = int(seconds)
    return f"{s // 3600}:{s // 60 % 60:02d}:{s % 60:02d}"


__all__ = [
    "Console",
    "RichBar",
    "by_name",
    "console_for",
    "fitting",
    "hms",
    "natural_width",
    "print_table",
    "widths",
]
