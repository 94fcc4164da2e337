"""The SQLite store of every run: schema and migrations, the records written, the row views read back, exports."""

from vmio.store.database import Store
from vmio.store.records import RunRecord
from vmio.store.schema import MIGRATIONS, PCT_COLUMNS, SCHEMA_VERSION

__all__ = ["MIGRATIONS", "PCT_COLUMNS", "SCHEMA_VERSION", "RunRecord", "Store"]
