"""The quantisation toolkit: one float net, many ways to turn it into integers, and a ruler to compare them.

* ``floatnet``: the net as float64 numpy arrays and its forward pass (the trainer's function, no rounding);
  from a Stockfish ``.nnue`` (dequantised with the fixed scales) or a training checkpoint (needs torch).
* ``build``: float net + choices -> integer tensors + scheme record, refusing any integer overflow.
* ``calibrate``: activation statistics on calibration positions, and the clip rules (range, KL, MSE, DFP).
* ``schemes``: the named schemes (``sf``, ``range``, ``range-row``, ``dfp``, ``kl``, ``mse``).
* ``simulator``: the integer forward pass of any scheme, plain numpy; for ``sf`` it is Stockfish 15.1.
* ``report``: the simulator against the float net (centipawn errors, per-layer ranges, saturation, SQNR).
* ``positions``: FEN/EPD lines as the feature indices of both perspectives.

The scheme record itself and the Quantfish net file are part of the engine (``quantfish.nnue.scheme``,
``quantfish.nnue.io.quantfish``): the engine runs such nets without importing this toolkit. Numpy only: torch is imported by ``floatnet.from_checkpoint`` alone, when a checkpoint is read.
"""
