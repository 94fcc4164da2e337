"""Sub-commands over campaigns: run, show, export, compare."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the campaign sub-commands to ``sub``."""
