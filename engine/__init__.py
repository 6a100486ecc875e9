"""Chess core and search, compiled with Numba."""
from pathlib import Path as _Path

from nnue.cachecheck import invalidate_if_changed as _invalidate_if_changed

# The search inlines NNUE code: a change there must also drop this package's cached machine code.
_invalidate_if_changed(_Path(__file__).parent, depends_on=[_Path(__file__).parent.parent / "nnue"])
