"""What vmio draws on a terminal, through ``rich``: the progress bar of ``vmio run`` and the tables of
``show`` and ``compare``. Off a terminal (a pipe, a file, a test) the callers print plain text exactly as
before; nothing here is used then.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from rich import box
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text


def console_for(stream: TextIO) -> Console | None:
    """A rich console for ``stream`` when it is a terminal, else None (plain text)."""
    return Console(file=stream) if stream.isatty() else None


def print_table(
    console: Console,
    lines: Sequence[Sequence[str]],
    *,
    right: frozenset[int] = frozenset(),
    title: str = "",
    tail: str = "",
    empty: str = "",
) -> None:
    """``lines`` (the head first) as a rich table, with the plain title above and the tail below."""
    if title:
        console.print(Text(title.rstrip("\n")))
    if not lines:
        if empty:
            console.print(Text(empty.rstrip("\n")))
    else:
        table = Table(box=box.SIMPLE_HEAD, header_style="bold", pad_edge=False)
        for i, head in enumerate(lines[0]):
            table.add_column(head, justify="right" if i in right else "left", no_wrap=i == 0)
        for line in lines[1:]:
            table.add_row(*(Text(cell) for cell in line))
        console.print(table)
    if tail:
        console.print(Text(tail.rstrip("\n")))


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


__all__ = ["Console", "RichBar", "console_for", "hms", "print_table"]
