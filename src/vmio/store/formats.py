"""The formats ``vmio export`` writes (``vmio.store.export``), named apart so that the command's --help
lists them without loading the store."""

FORMATS = ("csv", "json", "parquet", "ndjson", "prometheus")
