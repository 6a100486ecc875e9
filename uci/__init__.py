"""The UCI front end and the ``quantfish`` command line."""
import sys


def entry():
    """The ``quantfish`` script. With no arguments (how GUIs and match runners start an engine) it speaks UCI
    at once, without importing the command-line library (about 40 ms before ``uciok``); otherwise it hands
    over to ``uci.cli``."""
    if len(sys.argv) == 1:
        from uci.protocol import run_uci
        run_uci()
        sys.exit(0)
    from uci.cli import main
    main()
