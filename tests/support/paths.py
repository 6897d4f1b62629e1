"""Where the repository, the test folders and their data are."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
"""`tests/`: the tiers (`unit/`, `stack/`, `fleet/`), `support/`, `domains/`, `histories/`."""
ROOT = TESTS.parent
"""The repository root."""
DOMAINS = TESTS / "domains"
"""Domain packages of the tests' own (importable once this folder is on `sys.path`)."""
HISTORIES = TESTS / "histories"
"""Recorded workflow histories that must replay with the current code."""
