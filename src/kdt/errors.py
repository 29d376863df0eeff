"""Errors that end a command with exit code 2 and one clear line, never a traceback."""


class UsageError(Exception):
    """Bad arguments or unreadable input: exit 2."""


# What reading an object of the wrong shape raises (a list where a mapping goes, a number where a list
# goes): the stages that read objects (expand, lint rules, summary) catch these and skip that object,
# whose schema findings say what is wrong; never a traceback.
MALFORMED = (AttributeError, TypeError, KeyError, IndexError, ValueError)
