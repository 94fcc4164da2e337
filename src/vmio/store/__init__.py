"""The SQLite store of every run: schema and migrations, the records written, the row views read back, exports.

The names below are imported on first use (PEP 562), so that a light module of the package
(``vmio.store.formats`` for ``vmio export --help``) comes without SQLite and the spec model.
"""

import importlib as _importlib
import typing as _typing

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


def __getattr__(name: str) -> _typing.Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'vmio.store' has no attribute {name!r}")
    value = getattr(_importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))


__all__ = ["MIGRATIONS", "PCT_COLUMNS", "SCHEMA_VERSION", "RunRecord", "Store"]
