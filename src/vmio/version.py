"""vmio's own version: the one place it is written (pyproject.toml reads it from here), so that
``vmio --version`` imports nothing to tell it."""

from __future__ import annotations

VERSION = "0.1.0"


def vmio_version() -> str:
    """This vmio's version (the installed package's metadata says the same: it is built from ``VERSION``)."""
    return VERSION
