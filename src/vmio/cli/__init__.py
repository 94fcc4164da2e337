"""The ``vmio`` command: every sub-command's arguments, and the helpers they share (store, units, progress)."""

from vmio.cli.main import build_parser, main

__all__ = ["build_parser", "main"]
