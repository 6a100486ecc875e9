"""Search scores: the window's ends, mates, known wins, and the value that means "none"."""
from quantfish.search.state import MAX_PLY

INF = 32001
MATE = 32000
MATE_IN_MAX = MATE - 2 * MAX_PLY     # a score at least this is a mate found by the search
VALUE_NONE = 32002
KNOWN_WIN = 10000                    # Stockfish's VALUE_KNOWN_WIN: beyond it a score is a win, not an evaluation
