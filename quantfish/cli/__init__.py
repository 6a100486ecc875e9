"""The ``quantfish`` command: UCI with no arguments, else the subcommands of ``quantfish.cli.main``."""
import sys


def entry():
    """The ``quantfish`` script. With no arguments (how GUIs and match runners start an engine) it speaks UCI
    at once, without importing the command-line library (about 40 ms before ``uciok``); otherwise it hands
    over to ``quantfish.cli.main``."""
    if len(sys.argv) == 1:
        from quantfish.uci.protocol import run_uci
        run_uci()
        sys.exit(0)
    from quantfish.cli.main import main
    main()
