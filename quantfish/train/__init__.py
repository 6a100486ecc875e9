"""Training our own nets with PyTorch (an optional extra), and export to .nnue.

``model`` (the float net), ``loss``, ``trainer``, ``checkpoint``, ``quantize`` (to and from Stockfish's integer
format with its fixed scales, ``quantfish.nnue.scales``), ``data`` (the batch protocol) and ``features``
(HalfKAv2_hm indices of a batch, the same as ``quantfish.nnue.features`` gives the engine). The records read
here are ``quantfish.data``'s. Only the training modules import ``torch``, so data is read with numpy and
Numba alone.
"""
