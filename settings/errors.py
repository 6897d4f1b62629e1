"""The two ways a process refuses to start, in a module of their own so that the settings
model, its reader and the option parsers can all raise them without importing each other."""

from __future__ import annotations


class SettingsError(ValueError):
    """A setting has a value that cannot be used; the message names the variable."""


class StartupError(RuntimeError):
    """A process cannot start (a server unreachable, ...); the message says which and why."""
