"""The packages of ``quantfish`` as layers, lowest first: a package imports only itself and those before it.

Stated once here for the two places that need the order: the Numba cache, which keys each package's compiled
code on the sources of that package and of every one below it (``quantfish.runtime.jit``), and the layering
test. ``runtime`` to ``search`` are the engine; ``data`` to ``match`` the offline tools, which nothing below
imports; ``api``, ``uci`` and ``cli`` the faces.
"""
LAYERS = ("runtime", "core", "nnue", "tablebase", "search", "data", "datagen", "train", "quant", "match",
          "api", "uci", "cli")
