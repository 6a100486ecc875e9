"""``python -m quantfish``: the same as the ``quantfish`` command."""
from quantfish.cli import entry

entry()
