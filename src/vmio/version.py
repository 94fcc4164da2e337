"""vmio's own version, from its package metadata (importing nothing else, for ``vmio --version``)."""

from __future__ import annotations

from importlib import metadata


def vmio_version() -> str:
    """The installed vmio's version (its package metadata)."""
    try:
        return metadata.version("vmio")
    except metadata.PackageNotFoundError:
        return "0+unknown"
