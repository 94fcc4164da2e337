"""Write the table of docs/fio-files.md from vmio's own tables of fio job-file options.

Run after changing ``spec.fiofile.KEPT``/``TUNING``/``REPLACED`` or ``spec.fio_refusals.REFUSED``
(tests/test_fio_option_classes.py fails while the page and the code differ):
    .venv/bin/python scripts/fio_options_doc.py docs/fio-files.md
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path

from vmio.spec import fio_refusals, fiofile

MARK = "| class | what vmio does | options |"
REFUSING = "refused: named with its file, line and this class in one error, exit 2"


def cell(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in sorted(names))


def table() -> str:
    rows = [
        ("run as given: the I/O pattern", "runs as written", fiofile.KEPT - fiofile.TUNING),
        ("run as given: tunes or bounds a block workload", "runs as written", fiofile.TUNING),
        ("replaced by vmio and named", "vmio gives its own value and lists the file's", fiofile.REPLACED),
    ]
    for reason in fio_refusals.REASONS:
        names = [k for k, v in fio_refusals.REFUSED.items() if v == reason]
        if names:
            rows.append((f"refused: {reason}", REFUSING, names))
    lines = [MARK, "| --- | --- | --- |"] + [f"| {c} | {what} | {cell(n)} |" for c, what, n in rows]
    return "\n".join(lines) + "\n"


def main(path: str) -> None:
    page = Path(path)
    text = page.read_text()
    head = text[: text.index(MARK)] if MARK in text else text + "\n"
    page.write_text(head + table())


if __name__ == "__main__":
    main(sys.argv[1])
