"""The engine as a Python library, in python-chess's types: ``Engine`` and ``perft``."""
from quantfish.api.engine import Engine, perft

__all__ = ["Engine", "perft"]
