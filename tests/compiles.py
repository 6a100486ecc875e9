"""Numba's compiles counted as they happen (its ``numba:compile`` event, which a load from the cache does not
fire), for the tests that the warm-up leaves nothing to compile."""
from contextlib import contextmanager

from numba.core import event


@contextmanager
def counting_compiles():
    """Yields a list that collects the qualified name of each function Numba compiles while the block runs."""
    compiled = []

    class Count(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__qualname__)

        def on_end(self, ev):
            pass

    listener = Count()
    event.register("numba:compile", listener)
    try:
        yield compiled
    finally:
        event.unregister("numba:compile", listener)
