"""`python -m kdt COMMAND ...`: the same as the `kdt` command."""
from .cli.main import entry

entry()
