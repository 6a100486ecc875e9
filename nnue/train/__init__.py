"""Training our own nets: the data records, the PyTorch trainer (torch is an optional extra), export to .nnue.

Data: ``records`` (the 32-byte record, files, validation), ``text`` (``FEN | score | result`` lines both ways),
``codec`` (compiled packing and unpacking of one record) and ``features`` (HalfKAv2_hm indices of a batch,
the same as ``nnue.features`` gives the engine). The generator lives in ``engine.datagen`` because it
needs the search. Training: ``model`` (the float net), ``loss``, ``trainer``, ``checkpoint``, ``quantize``
(to and from Stockfish's integer format with its fixed scales), ``data`` (the batch protocol). Nothing here
imports ``engine``, and only the training modules import ``torch``, so a trainer reads data with numpy and
Numba alone.
"""
from pathlib import Path as _Path

from nnue.cachecheck import invalidate_if_changed as _invalidate_if_changed

# The compiled code here inlines nnue.features: a change there must also drop this package's cache.
_invalidate_if_changed(_Path(__file__).parent, depends_on=[_Path(__file__).parent.parent])
