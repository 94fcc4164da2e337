"""The SQLite store of every run: schema and migrations, the records written, the row views read back, exports.

The names below are imported on first use (PEP 562), so that a light module of the package
(``vmio.store.formats`` for ``vmio export --help``) comes without SQLite and the spec model.
"""

import typing as _typing

from vmio.lazy import exports as _exports

if _typing.TYPE_CHECKING:
    from vmio.store.database import Store
    from vmio.store.records import RunRecord
    from vmio.store.schema import MIGRATIONS, PCT_COLUMNS, SCHEMA_VERSION

_LAZY = {
    "MIGRATIONS": "vmio.store.schema",
    "PCT_COLUMNS": "vmio.store.schema",
    "RunRecord": "vmio.store.records",
    "SCHEMA_VERSION": "vmio.store.schema",
    "Store": "vmio.store.database",
}


__getattr__, __dir__ = _exports(__name__, _LAZY, globals())


__all__ = ["MIGRATIONS", "PCT_COLUMNS", "SCHEMA_VERSION", "RunRecord", "Store"]
