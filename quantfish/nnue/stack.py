"""The search stack's lazy accumulators: one walk-back for every evaluation path.

Before a net evaluates at ply p, each perspective's accumulator there must be valid. ``ensure_accumulator``
walks back to the nearest computed ancestor and applies the recorded moves forward ply by ply, marking each
ply computed, so sibling nodes reuse the work (Stockfish's lazy update; the stack protocol is in
``quantfish.nnue.accumulator``'s docstring). If that perspective's king moved on the way, into ply q, it first refreshes
ply q (from the board with the later moves undone; ply p itself when the king moved into p), so that q's other
children update from it too; if nothing back to the root is computed it refreshes ply p.

One function serves the Numba path and the C kernel, with or without the refresh cache: the optional
arguments choose the steps. ``kf``/``cnet`` (``quantfish.nnue.kernel.loader.KernelFuncs`` and ``CNet``) select the C kernel,
``cache`` (``ckernel.make_refresh_cache``) the refresh cache; left out (None) they select the Numba step and
the plain refresh. Numba compiles one specialisation per combination and drops the branches of an argument
that is None at compile time, so the choice costs nothing at run time. ``net`` (``Net.arrays()``) is always
given: with ``kf`` given, the Numba branch is still compiled (only None arguments prune a branch).

``net_output`` is one net's raw ``(psqt, positional)`` of a bucket at a ply, accumulators included: what the
search and the two-net evaluation (``quantfish.nnue.formulas.evaluate_pair``) call per evaluation. A Quantfish-format
net (``params[P_SCHEME]``) takes ``net_output_scheme``: the same accumulators (int16 sums as for any net),
then its scheme's forward pass on either path (``inference.forward_scheme``, ``ckernel.forward_scheme_c``).
The search chooses between the two by a flag of its own; ``net_output_any`` chooses by the net.
"""

from quantfish.nnue.accumulator import NO_SQ, refresh, update
from quantfish.nnue.kernel.loader import forward_c, forward_scheme_c, refresh_c, refresh_cached, refresh_cached_c, update_c
from quantfish.nnue.features import king_square
from quantfish.nnue.layers import forward, forward_scheme
from quantfish.runtime.jit import njit
from quantfish.nnue.net import P_SCHEME


@njit(cache=True, nogil=True)
def _king_moved(dirty, ndirty, ply, persp):
    king = persp * 8 + 6
    for i in range(ndirty[ply]):
        if dirty[ply, i, 0] == king:
            return True
    return False


@njit(cache=True, nogil=True)
def nearest_computed(computed, dirty, ndirty, ply, persp):
    """Where ``acc[ply]`` of ``persp`` comes from: the nearest computed ancestor q (``computed[q, persp]``), or,
    when the perspective's king moved on the way, the ply q the king moved into (not computed), or 0 when
    nothing back to the root is computed (not computed either)."""
    q = ply
    while not computed[q, persp] and q > 0 and not _king_moved(dirty, ndirty, q, persp):
        q -= 1
    return q


@njit(cache=True, nogil=True, inline="always")
def _move_pieces(board, dirty, ndirty, p, vacated, filled):
    """The move record of ply p on ``board``: the squares in column ``vacated`` of its rows emptied, then those
    in column ``filled`` given the rows' pieces. Columns (1, 2) make the move; (2, 1) take it back (a captured
    piece's row has the capture square as origin, a promoted piece's none)."""
    for i in range(ndirty[p]):
        if dirty[p, i, vacated] != NO_SQ:
            board[dirty[p, i, vacated]] = 0
    for i in range(ndirty[p]):
        if dirty[p, i, filled] != NO_SQ:
            board[dirty[p, i, filled]] = dirty[p, i, 0]


@njit(cache=True, nogil=True)
def take_back(board, dirty, ndirty, ply, q):
    """Turn ``board``, the mailbox of ply ``ply``, into that of ply q < ply in place, the moves of plies
    ply..q + 1 taken back; ``replay`` turns it back. (The search compiles without allocation: no copy.)"""
    for p in range(ply, q, -1):
        _move_pieces(board, dirty, ndirty, p, 2, 1)


@njit(cache=True, nogil=True)
def replay(board, dirty, ndirty, q, ply):
    """Undo ``take_back``: the moves of plies q + 1..ply made again."""
    for p in range(q + 1, ply + 1):
        _move_pieces(board, dirty, ndirty, p, 1, 2)


@njit(cache=True, nogil=True)
def refresh_one(net, board, persp, ksq, acc_out, psqt_out, scratch=None, cache=None, kf=None, cnet=None):
    """One perspective's accumulator from ``board``, by the path the optional arguments choose."""
    if kf is None:
        if cache is None:
            refresh(net, board, persp, ksq, acc_out, psqt_out)
        else:
            refresh_cached(net, cache, board, persp, ksq, acc_out, psqt_out, scratch)
    else:
        if cache is None:
            refresh_c(kf, cnet, board, persp, ksq, acc_out, psqt_out, scratch)
        else:
            refresh_cached_c(kf, cnet, cache, board, persp, ksq, acc_out, psqt_out, scratch)


@njit(cache=True, nogil=True)
def ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, ply, board, king_sq_white, king_sq_black,
                       scratch=None, cache=None, kf=None, cnet=None):
    """Make ``acc[ply]``/``psqt[ply]`` valid for both perspectives; ``board`` and the king squares are the
    position's at ``ply`` (``board`` is changed during the call and restored). ``net`` is ``Net.arrays()``; see
    the module docstring for the optional arguments."""
    for persp in range(2):
        if computed[ply, persp]:
            continue
        ksq = king_sq_white if persp == 0 else king_sq_black
        q = nearest_computed(computed, dirty, ndirty, ply, persp)
        if not computed[q, persp]:
            if q == ply or q == 0:
                refresh_one(net, board, persp, ksq, acc[ply, persp], psqt[ply, persp], scratch, cache, kf, cnet)
                computed[ply, persp] = 1
                continue
            # The king moved into ply q, whose accumulator was never needed: refresh q rather than ply, so that
            # the plies between and q's other children update from it instead of each refreshing.
            take_back(board, dirty, ndirty, ply, q)
            refresh_one(net, board, persp, ksq, acc[q, persp], psqt[q, persp], scratch, cache, kf, cnet)
            replay(board, dirty, ndirty, q, ply)
            computed[q, persp] = 1
        for p in range(q + 1, ply + 1):
            if kf is None:
                update(net, persp, ksq, dirty[p], ndirty[p], acc[p - 1, persp], acc[p, persp],
                       psqt[p - 1, persp], psqt[p, persp])
            else:
                update_c(kf, cnet, persp, ksq, dirty[p], ndirty[p], acc[p - 1, persp], acc[p, persp],
                         psqt[p - 1, persp], psqt[p, persp], scratch)
            computed[p, persp] = 1


@njit(cache=True, nogil=True)
def refresh_ply(net, acc, psqt, computed, ply, board, scratch=None, kf=None, cnet=None):
    """Refresh both perspectives of ``ply`` from ``board`` (finds the kings itself); for a root."""
    for persp in range(2):
        refresh_one(net, board, persp, king_square(board, persp), acc[ply, persp], psqt[ply, persp], scratch,
                    None, kf, cnet)
        computed[ply, persp] = 1


@njit(cache=True, nogil=True)
def net_output(net, nn, ply, board, king_sq_white, king_sq_black, side, bucket, scratch, cache=None, kf=None,
               cnet=None):
    """One net's raw ``(psqt, positional)`` of ``bucket`` at ``ply`` for the side to move ``side``, its stack
    ``nn = (acc, psqt, computed, dirty, ndirty)`` brought up to date lazily first."""
    acc, psqt, computed, dirty, ndirty = nn
    ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, ply, board, king_sq_white, king_sq_black,
                       scratch, cache, kf, cnet)
    if kf is None:
        return forward(net, acc, psqt, ply, side, bucket, scratch)
    return forward_c(kf, cnet, acc, psqt, ply, side, bucket, scratch)


@njit(cache=True, nogil=True)
def net_output_scheme(net, nn, ply, board, king_sq_white, king_sq_black, side, bucket, scratch, cache=None,
                      kf=None, cnet=None):
    """``net_output`` of a Quantfish-format net: the same accumulators, its scheme's forward pass."""
    acc, psqt, computed, dirty, ndirty = nn
    ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, ply, board, king_sq_white, king_sq_black,
                       scratch, cache, kf, cnet)
    if kf is None:
        # Two call sites on purpose: LLVM inlines a function called from one place whatever its size, and
        # this pass inlined into the search's evaluation slows the search with Stockfish's nets by 12%
        # (measured: `quantfish bench --kernel numba`, side by side). With two, its size keeps it a call.
        if side == 0:
            return forward_scheme(net, acc, psqt, ply, 0, bucket, scratch)
        return forward_scheme(net, acc, psqt, ply, 1, bucket, scratch)
    return forward_scheme_c(kf, cnet, net, acc, psqt, ply, side, bucket, scratch)


@njit(cache=True, nogil=True)
def net_output_any(net, nn, ply, board, king_sq_white, king_sq_black, side, bucket, scratch, cache=None, kf=None,
                   cnet=None):
    """``net_output`` or ``net_output_scheme`` as the net says (for callers other than the search, which
    chooses itself: see ``inference.forward_any``)."""
    if net.params[P_SCHEME]:
        return net_output_scheme(net, nn, ply, board, king_sq_white, king_sq_black, side, bucket, scratch, cache,
                                 kf, cnet)
    return net_output(net, nn, ply, board, king_sq_white, king_sq_black, side, bucket, scratch, cache, kf, cnet)
