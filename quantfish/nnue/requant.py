"""A quantisation scheme's integer arithmetic, compiled: the engine's side of Quantfish-format nets.

A Stockfish net's arithmetic is fixed (shifts by 7 and 6, clamps at 127, ``* 9600 / 8128``), so
``quantfish.nnue.layers`` states it as constants. A Quantfish-format net (``quantfish.nnue.io.quantfish``) carries a scheme
record (``quantfish.nnue.scheme``) instead: per layer a requantisation ``R(v * mul / (div * 2**shift))`` rounded
by floor, trunc or nearest, with one multiplier per output row, and per activation a clamp per row. This
module packs the record into one int64 array that compiled code reads, and computes those steps; the forward
pass that uses them is ``quantfish.nnue.layers.forward_scheme``. The definition it must equal integer for integer is
``quantfish.quant.simulator`` (tests/test_quant_engine.py).

Layout of the packed array ``qscheme``: int64[stacks, N_SITES, ROW]. Each (stack, site) row is
``(shift, div, rounding, wrap32, mul[32], hi[32])``; a site with a single multiplier or clamp has it
broadcast to all 32 places. The net-wide sites (FT clamp, fc_0's input, PSQT, final) are repeated in every
stack so one stack's slice holds all a bucket needs. ``S_SQR_LIMIT`` uses only ``hi``: the per-row cap on
|z0| before squaring (the same result, no overflow). A Stockfish net has no scheme: its ``qscheme`` is
``no_scheme()`` and is never read (``params[P_SCHEME]`` is 0).
"""

import numpy as np

from quantfish.nnue.architecture import (
    FC0_OUT, FC1_OUT, N_HIDDEN, SCHEME_Q_DIV, SCHEME_Q_HI, SCHEME_Q_MUL, SCHEME_Q_ROUND, SCHEME_Q_SHIFT,
    SCHEME_Q_WRAP, SCHEME_ROUNDINGS, SCHEME_ROW, SCHEME_SITES,
)
from quantfish.nnue.intmath import tdiv, wrap32
from quantfish.runtime.jit import njit

# Sites (second axis) and fields (third axis): the layout is quantfish.nnue.architecture's (the C kernel reads it too).
S_FT, S_X, S_PSQT, S_FINAL, S_SQR, S_SQR_LIMIT, S_AC0, S_AC1, S_SKIP, S_OUT = (
    SCHEME_SITES.index(n) for n in ("ft", "x", "psqt", "final", "sqr", "sqr_limit", "ac0", "ac1", "skip", "out"))
N_SITES = len(SCHEME_SITES)
Q_SHIFT, Q_DIV, Q_ROUND, Q_WRAP, Q_MUL, Q_HI = (SCHEME_Q_SHIFT, SCHEME_Q_DIV, SCHEME_Q_ROUND, SCHEME_Q_WRAP,
                                                SCHEME_Q_MUL, SCHEME_Q_HI)
ROW = SCHEME_ROW
ROUNDING_CODES = {name: code for code, name in enumerate(SCHEME_ROUNDINGS)}
R_FLOOR, R_TRUNC, R_NEAREST = (ROUNDING_CODES[n] for n in ("floor", "trunc", "nearest"))


def no_scheme() -> np.ndarray:
    """The placeholder ``qscheme`` of a Stockfish net (never read; writable, so every net has one Numba type)."""
    return np.zeros((1, N_SITES, ROW), np.int64)


def _put_requant(row: np.ndarray, rq) -> None:
    shift, div = int(rq.shift), int(rq.div)
    if div > 1 and div & (div - 1) == 0:
        # a power-of-two divisor is the same value as a longer shift for every rounding (floor, trunc,
        # nearest), and compiled code then shifts instead of dividing (Stockfish's PSQT halving, /16)
        shift, div = shift + div.bit_length() - 1, 1
    row[Q_SHIFT] = shift
    row[Q_DIV] = div
    row[Q_ROUND] = ROUNDING_CODES[rq.rounding]
    row[Q_WRAP] = int(rq.int32)
    row[Q_MUL:Q_MUL + FC1_OUT] = 0
    row[Q_MUL:Q_MUL + len(rq.mul)] = rq.mul
    if len(rq.mul) == 1:
        row[Q_MUL:Q_MUL + FC1_OUT] = rq.mul[0]


def _put_hi(row: np.ndarray, hi) -> None:
    hi = tuple(int(h) for h in hi)
    row[Q_HI:Q_HI + FC1_OUT] = hi[0] if len(hi) == 1 else 0
    row[Q_HI:Q_HI + len(hi)] = hi


def pack_scheme(scheme) -> np.ndarray:
    """The ``qscheme`` array of a ``quantfish.nnue.scheme.Scheme`` (read by attribute: no import of the toolkit).

    Refuses a record compiled code could not follow exactly: more rows than a layer has, a multiplier or
    clamp of the wrong count, an unknown rounding."""
    stacks = len(scheme.stacks)
    q = np.zeros((stacks, N_SITES, ROW), np.int64)
    widths = {"ac_sqr_0": N_HIDDEN, "ac_0": N_HIDDEN, "ac_1": FC1_OUT}
    for s, st in enumerate(scheme.stacks):
        _put_hi(q[s, S_FT], (scheme.ft_hi,))
        _put_requant(q[s, S_X], scheme.x.requant)
        _put_hi(q[s, S_X], scheme.x.hi[:1])
        _put_requant(q[s, S_PSQT], scheme.psqt)
        _put_requant(q[s, S_FINAL], scheme.final)
        for site, name in ((S_SQR, "ac_sqr_0"), (S_AC0, "ac_0"), (S_AC1, "ac_1")):
            act = getattr(st, name)
            for what, values in (("multipliers", act.requant.mul), ("clamps", act.hi)):
                if len(values) not in (1, widths[name]):
                    raise ValueError(f"stack {s} {name}: {len(values)} {what}, expected 1 or {widths[name]}")
            _put_requant(q[s, site], act.requant)
            _put_hi(q[s, site], act.hi)
        if len(st.ac_sqr_0.limit) not in (1, N_HIDDEN):
            raise ValueError(f"stack {s} ac_sqr_0: {len(st.ac_sqr_0.limit)} limits, expected {N_HIDDEN}")
        _put_hi(q[s, S_SQR_LIMIT], st.ac_sqr_0.limit)
        for site, rq, name in ((S_SKIP, st.skip, "skip"), (S_OUT, st.out, "out")):
            if len(rq.mul) != 1:
                raise ValueError(f"stack {s} {name}: {len(rq.mul)} multipliers, expected 1")
            _put_requant(q[s, site], rq)
    return q


@njit(cache=True, nogil=True, inline="always")
def requant(v, q, row):
    """``R(v * mul[row] / (div * 2**shift))`` of one site's packed row ``q`` (int64 throughout)."""
    p = np.int64(v) * q[Q_MUL + row]
    if q[Q_WRAP]:
        p = wrap32(p)
    s = q[Q_SHIFT]
    r = q[Q_ROUND]
    if q[Q_DIV] == 1:                   # a shift (every site but Stockfish-style divisions): no division
        if s == 0:
            return p
        if r == R_FLOOR:
            return p >> s
        if r == R_TRUNC:
            return -((-p) >> s) if p < 0 else p >> s
        return (p + (np.int64(1) << (s - 1))) >> s
    d = q[Q_DIV] << s
    if r == R_FLOOR:
        return p // d
    if r == R_TRUNC:
        return tdiv(p, d)
    return (p + (d >> 1)) // d


@njit(cache=True, nogil=True)
def shift_add(q):
    """The rounding addend when a site's requantisation is ``(v * mul + add) >> shift`` (a shift divisor, no
    wrap, floor or nearest), else -1. Decided once per site, it leaves a loop without branches on the record
    (``transform_half_scheme``, ``head_scheme``)."""
    if q[Q_DIV] != 1 or q[Q_WRAP] or q[Q_ROUND] == R_TRUNC:
        return np.int64(-1)
    if q[Q_ROUND] == R_NEAREST and q[Q_SHIFT] > 0:
        return np.int64(1) << (q[Q_SHIFT] - 1)
    return np.int64(0)


@njit(cache=True, nogil=True, inline="always")
def _x_shift_only(acc, dst, ft_hi, nearest, s):
    """dst[j] = (clamp(a[j]) * clamp(a[j + L1/2]) + half) >> s for a literal ``s`` and ``ft_hi`` <= 127 (half:
    2**(s-1) when rounding to nearest, else 0), when the record's clamp of x cannot bite and the result fits a
    byte (``transform_half_scheme`` checks). With
    the products' range known and the shift a constant, LLVM computes in 16-bit lanes as in the plain
    transform; a shift by a run-time amount keeps Numba's 64-bit lanes and made this loop ten times slower."""
    half = acc.shape[0] // 2
    hi = np.int16(min(ft_hi, 127))      # the caller's condition, stated so that LLVM knows the products' range
    zero = np.int16(0)
    r = np.int16((1 if nearest else 0) << (s - 1))
    for j in range(half):
        a = min(max(acc[j], zero), hi)
        b = min(max(acc[j + half], zero), hi)
        dst[j] = (a * b + r) >> s


@njit(cache=True, nogil=True)
def _x_int32(acc, dst, hi32, m32, s32, up, xh):
    """``transform_half_scheme`` when every product a * b * mul fits int32 (most calibrated records on
    Stockfish's net), 1 <= s <= 31: each step truncated to int32 so that LLVM keeps 32-bit lanes (Numba widens
    int32 arithmetic to int64; the truncations undo it), the shift counts masked to 0..31 (which they are) so
    that it shifts in 32 bits too. Nearest (``up`` 1) adds bit s - 1 of the product after the shift instead of
    half before it: nothing can overflow. A function of its own: inlined in the caller, LLVM left this loop 1.6
    times as slow (Stockfish's net's `range-row` nearest 255: 148 -> 93 ns a perspective)."""
    half = acc.shape[0] // 2
    s = np.int32(s32 & np.int32(31))
    r = np.int32((s32 - np.int32(1)) & np.int32(31))
    for j in range(half):
        a = min(max(np.int32(acc[j]), np.int32(0)), hi32)
        b = min(max(np.int32(acc[j + half]), np.int32(0)), hi32)
        t = np.int32(np.int32(a * b) * m32)
        dst[j] = min(np.int32(np.int32(t >> s) + np.int32(np.int32(t >> r) & up)), xh)


@njit(cache=True, nogil=True)
def _x_split15(acc, dst, hi32, m32, k32, al, ah, xh):
    """``transform_half_scheme`` for products a * b past int32 (our net's calibrated records clamp the FT at
    5,000) times a multiplier below 2**16, with s = k + 15 >= 15: with a * b = h * 2**15 + l (l < 2**15) and
    the rounding addend ah * 2**15 + al, ``(a * b * mul + add) >> s == (h * mul + ah + ((l * mul + al) >> 15))
    >> k``; the caller has checked that every step stays within int32, so the loop keeps 32-bit lanes instead
    of 64-bit ones."""
    half = acc.shape[0] // 2
    k = np.int32(k32 & np.int32(31))
    low = np.int32(0x7FFF)
    fifteen = np.int32(15)
    for j in range(half):
        a = min(max(np.int32(acc[j]), np.int32(0)), hi32)
        b = min(max(np.int32(acc[j + half]), np.int32(0)), hi32)
        p = np.int32(a * b)
        t = np.int32(np.int32(np.int32(p & low) * m32) + al)
        u = np.int32(np.int32(np.int32(p >> fifteen) * m32) + np.int32(np.int32(t >> fifteen) + ah))
        dst[j] = min(np.int32(u >> k), xh)


@njit(cache=True, nogil=True)
def transform_half_scheme(acc, dst, qs):
    """dst[j] = clamp(R_x(clamp(a[j], 0, ft_hi) * clamp(a[j + L1/2], 0, ft_hi)), 0, x_hi) for one
    perspective; ``qs`` is one stack's packed slice."""
    half = acc.shape[0] // 2
    ft_hi = qs[S_FT, Q_HI]
    qx = qs[S_X]
    x_hi = qx[Q_HI]
    mul = qx[Q_MUL]
    s = qx[Q_SHIFT]
    add = shift_add(qx)
    if add >= 0 and mul == 1 and 5 <= s <= 8 and 0 <= ft_hi <= 127 and (ft_hi * ft_hi + add) >> s <= min(x_hi, 255):
        # Stockfish's arithmetic and its 0..255 variant (shifts 7 and 6), power-of-two records: no multiplier,
        # a clamp that the largest product never reaches. One literal shift each.
        nearest = add > 0
        if s == 7:
            _x_shift_only(acc, dst, ft_hi, nearest, 7)
        elif s == 6:
            _x_shift_only(acc, dst, ft_hi, nearest, 6)
        elif s == 8:
            _x_shift_only(acc, dst, ft_hi, nearest, 8)
        else:
            _x_shift_only(acc, dst, ft_hi, nearest, 5)
        return
    if add >= 0 and mul >= 0 and 1 <= s <= 31 and ft_hi * ft_hi * mul < 2**31:
        _x_int32(acc, dst, np.int32(ft_hi), np.int32(mul), np.int32(s), np.int32(add > 0), np.int32(x_hi))
        return
    if add >= 0 and 0 <= mul < 2**16 and 15 <= s <= 46 and ft_hi <= 32767 \
            and ((ft_hi * ft_hi) >> 15) * mul + (add >> 15) + 2**16 < 2**31:
        _x_split15(acc, dst, np.int32(ft_hi), np.int32(mul), np.int32(s - 15), np.int32(add & 0x7FFF),
                   np.int32(add >> 15), np.int32(x_hi))
        return
    if add >= 0 and mul >= 0:
        # a loop without branches on the record, which LLVM vectorises (the products are >= 0)
        for j in range(half):
            a = min(max(np.int64(acc[j]), 0), ft_hi)
            b = min(max(np.int64(acc[j + half]), 0), ft_hi)
            dst[j] = min((a * b * mul + add) >> s, x_hi)
        return
    for j in range(half):
        a = min(max(np.int64(acc[j]), 0), ft_hi)
        b = min(max(np.int64(acc[j + half]), 0), ft_hi)
        dst[j] = min(max(requant(a * b, qx, 0), 0), x_hi)


@njit(cache=True, nogil=True)
def psqt_scheme(us, them, qs):
    """The PSQT output: ``R_psqt(us - them)``."""
    return requant(np.int64(us) - np.int64(them), qs[S_PSQT], 0)


@njit(cache=True, nogil=True)
def raw_scheme(psqt, positional, qs):
    """``nnue_raw``: ``R_final(psqt + positional)`` in internal units."""
    return requant(np.int64(psqt) + np.int64(positional), qs[S_FINAL], 0)


@njit(cache=True, nogil=True)
def head_scheme(fc0, b1, w1, b2, w2, l1in, cr1, qs):
    """Layers after fc_0 for one stack under its scheme slice ``qs``: SqrClippedReLU and ClippedReLU of
    z0[0..14], fc_1, ClippedReLU, fc_2, plus the skip of z0[15]; returns positional (output scale)."""
    qsq = qs[S_SQR]
    lim = qs[S_SQR_LIMIT]
    q0 = qs[S_AC0]
    q1 = qs[S_AC1]
    add_sq = shift_add(qsq)
    add_0 = shift_add(q0)
    add_1 = shift_add(q1)
    if add_sq >= 0 and add_0 >= 0:
        # shifts only (every record of the toolkit's schemes): no branch on the record per row (the head of
        # `sf` nearest 255 in a compiled loop: about 360 -> 260 ns a call)
        s_sq = qsq[Q_SHIFT]
        s_0 = q0[Q_SHIFT]
        for o in range(N_HIDDEN):
            v = np.int64(fc0[o])
            c = min(abs(v), lim[Q_HI + o])
            l1in[o] = min((c * c * qsq[Q_MUL + o] + add_sq) >> s_sq, qsq[Q_HI + o])
            l1in[N_HIDDEN + o] = min(max((v * q0[Q_MUL + o] + add_0) >> s_0, 0), q0[Q_HI + o])
    else:
        for o in range(N_HIDDEN):
            v = np.int64(fc0[o])
            c = min(abs(v), lim[Q_HI + o])
            l1in[o] = min(requant(c * c, qsq, o), qsq[Q_HI + o])
            l1in[N_HIDDEN + o] = min(max(requant(v, q0, o), 0), q0[Q_HI + o])
    for i in range(2 * N_HIDDEN, w1.shape[1]):
        l1in[i] = 0
    n_in = w1.shape[1]
    for o in range(FC1_OUT):
        s = np.int64(b1[o])
        for i in range(n_in):
            s += np.int64(w1[o, i]) * np.int64(l1in[i])
        if add_1 >= 0:
            r = (s * q1[Q_MUL + o] + add_1) >> q1[Q_SHIFT]
        else:
            r = requant(s, q1, o)
        cr1[o] = min(max(r, 0), q1[Q_HI + o])
    z2 = np.int64(b2)
    for i in range(FC1_OUT):
        z2 += np.int64(w2[i]) * np.int64(cr1[i])
    return requant(z2, qs[S_OUT], 0) + requant(fc0[FC0_OUT - 1], qs[S_SKIP], 0)
