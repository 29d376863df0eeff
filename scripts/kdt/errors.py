"""Errors that end a command with exit code 2 and one clear line, never a traceback."""


class UsageError(Exception):
    """Bad arguments or unreadable input: exit 2."""
