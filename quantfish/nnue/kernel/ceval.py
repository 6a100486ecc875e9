"""The search's evaluation of one net in a single call into the C kernel: its context and its wrapper.

``quantfish.nnue.stack.net_output`` on the C path brings the accumulators up to date in compiled Python (a call into the
kernel per perspective and ply) and then calls ``forward``; measured in the search, that glue cost about as
much as the kernel's own work. The kernel's ``evaluate`` does the same walk-back, refresh cache and forward pass
in C, on the arrays an *evaluation context* lists: ``context`` builds it once per search stack, an int64 array
of addresses and sizes in the order of ``architecture.EVAL_CONTEXT_FIELDS`` (the kernel reads the same order
from ``qfarch.h``). The arrays must stay alive, unmoved and C-contiguous while the context is used.

It serves one net: a Stockfish-format net (15.1, or a 17.1 net alone) or a Quantfish-format net, whose scheme
record the context lists; a 17.1 pair takes ``quantfish.nnue.stack`` as before. The results are ``net_output``'s and
``net_output_scheme``'s integers exactly (tests/test_ceval.py).
"""
from __future__ import annotations

import numpy as np

from quantfish.nnue.architecture import CX_PLAN_WORDS, EVAL_CONTEXT_FIELDS, SCHEME_ROW, SCHEME_SITES
from quantfish.runtime.jit import njit

CX_SIZE = len(EVAL_CONTEXT_FIELDS)


def context(cnet, stack, cache, scratch, qscheme=None) -> np.ndarray:
    """The evaluation context of ``cnet`` (``ckernel.make_cnet``) with a search ``stack`` (acc, psqt, computed,
    dirty, ndirty; ``ckernel.make_cstack``), its refresh ``cache`` (``ckernel.make_refresh_cache``) and
    ``scratch`` (``ckernel.make_cscratch``); for a Quantfish-format net, ``qscheme`` is its packed scheme record
    (``NetArrays.qscheme``), and the context ends in a slot per layer stack where the kernel keeps the plan it
    decides from that stack's record on its first evaluation. Keep them alive while the context is used; a
    context serves one search thread (the kernel writes its plan slots)."""
    acc, psqt, computed, dirty, ndirty = stack
    cacc, cpsqt, cboards = cache
    x, nnz, work = scratch
    arrays = {"ft_weights": cnet.ft_weights, "ft_psqt": cnet.ft_psqt, "acc": acc, "psqt": psqt,
              "computed": computed, "dirty": dirty, "ndirty": ndirty, "cache_acc": cacc, "cache_psqt": cpsqt,
              "cache_boards": cboards, "w0g": cnet.w0g, "fc0_sat": cnet.fc0_sat, "b0": cnet.b0, "w1g": cnet.w1g,
              "b1": cnet.b1, "w2": cnet.w2, "b2": cnet.b2, "x": x, "nnz": nnz, "work": work, "qscheme": qscheme}
    l1 = acc.shape[2]
    sizes = {"l1": l1, "nb": psqt.shape[2], "ft_shift": int(cnet.params[0]),     # CNet.params: (ft_shift,)
             "plan_slots": 0 if qscheme is None else cnet.b0.shape[0]}
    if cnet.ft_weights.shape[1] != l1 or cacc.shape[2] != l1 or cpsqt.shape[2] != psqt.shape[2]:
        raise ValueError("ceval.context: the stack, the cache and the net have different widths")
    if qscheme is not None and (qscheme.dtype != np.int64 or qscheme.shape[0] != cnet.b0.shape[0]
                                or qscheme.shape[1:] != (len(SCHEME_SITES), SCHEME_ROW)):
        raise ValueError(f"ceval.context: a scheme record of shape {qscheme.shape}, expected "
                         f"({cnet.b0.shape[0]}, {len(SCHEME_SITES)}, {SCHEME_ROW}) int64")
    cx = np.zeros(CX_SIZE + sizes["plan_slots"] * CX_PLAN_WORDS, np.int64)
    for i, name in enumerate(EVAL_CONTEXT_FIELDS):
        if name in sizes:
            cx[i] = sizes[name]
            continue
        a = arrays[name]
        if a is None:           # no scheme record: a Stockfish-format net
            continue
        if not a.flags.c_contiguous:
            raise ValueError(f"ceval.context: {name} is not C-contiguous")
        cx[i] = a.ctypes.data
    return cx


@njit(cache=True, nogil=True, inline="always")
def evaluate_c(kf, cx, ply, board, ksq_white, ksq_black, side, bucket):
    """One net's raw ``(psqt, positional)`` of ``bucket`` at ``ply`` (side to move ``side``), its accumulators
    brought up to date first: ``quantfish.nnue.stack.net_output`` in one kernel call."""
    r = kf.evaluate(cx.ctypes, ply, board.ctypes, ksq_white, ksq_black, side, bucket)
    return r >> 32, np.int64(np.int32(r & 0xFFFFFFFF))
