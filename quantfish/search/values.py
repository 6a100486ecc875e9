"""Search scores: the window's ends, mates, and the value that means "none"."""
from quantfish.search.state import MAX_PLY

INF = 32001
MATE = 32000
MATE_IN_MAX = MATE - 2 * MAX_PLY     # a score at least this is a mate found by the search
VALUE_NONE = 32002
