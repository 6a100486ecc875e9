"""Compiled self-play for data generation (``game``: one call plays a whole game and packs its positions).

Kept apart from the generator's Python driver (``engine.datagen``) so that editing the driver does not
drop this package's cached machine code.
"""
from pathlib import Path as _Path

from nnue.cachecheck import invalidate_if_changed as _invalidate_if_changed

_HERE = _Path(__file__).parent
# The compiled game inlines the search, the evaluation and the record packing: a change in any of them
# must also drop this package's cached machine code.
_invalidate_if_changed(_HERE, depends_on=[_HERE.parent, _HERE.parent.parent / "nnue",
                                          _HERE.parent.parent / "nnue" / "train"])
