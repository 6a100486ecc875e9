"""The C NNUE kernel: loading, CPU detection, net layout, and Numba-compiled wrappers that call it.

The kernel (``qfkernel.c`` in this folder, built by ``quantfish kernel`` or on first use into the user cache
folder, ``quantfish.nnue.kernel.files``) holds the hot loops in plain C with AVX2 / AVX-512 / AVX-512 VNNI
variants and a scalar fallback. It gives exactly the integers of the Numba path.

Choosing the path
-----------------
``load_kernel(mode)`` with mode ``"auto"`` (default; ``$QUANTFISH_KERNEL`` overrides), ``"c"`` or ``"numba"``
returns a ``Kernel``: ``status`` is ``"c-avx512vnni"``, ``"c-avx512"``, ``"c-avx2"``, ``"c-scalar"`` or
``"numba"``, ``reason`` says why (for an ``info string``), ``funcs`` is the ``KernelFuncs`` tuple of ctypes
functions (None on the Numba path). ``auto`` takes the best variant the CPU supports and the Numba path when
the library is missing or stale or the CPU lacks AVX2; ``c`` also accepts the scalar C variant.
``$QUANTFISH_KERNEL_VARIANT`` (or ``variant=``) forces one variant.

Calling it from compiled code (caching)
---------------------------------------
The ctypes functions are passed INTO ``@njit(cache=True)`` functions as an argument (the ``KernelFuncs``
named tuple): Numba types each as ``ExternalFunctionPointer(signature)`` and reads the address when the
argument is unboxed, so the compiled code does not depend on where the library was loaded, and it is cached
(a second process loads it: NUMBA_DEBUG_CACHE=1 prints "data loaded", see tests/test_ckernel.py). Referring
to a ctypes function as a global would freeze its address into the code and disable caching. One call
through the pointer costs about 1-2 ns. Array arguments are passed as ``arr.ctypes`` (a void pointer to the
first element), so every array handed to the kernel must be C-contiguous.

Wrappers (same semantics as the Numba path, plus the kernel tuple and a scratch tuple)
------------------------------------------------------------------------------------
* ``forward_c(kf, cnet, acc, psqt, ply, side, bucket, scratch) -> (psqt, positional)`` = ``inference.forward``
* ``refresh_c(kf, cnet, board, persp, ksq, acc_out, psqt_out, scratch)`` = ``accumulator.refresh``
* ``update_c(kf, cnet, persp, ksq, dirty_row, nd, acc_src, acc_dst, psqt_src, psqt_dst, scratch)``
  = ``accumulator.update``
* refresh cache (``make_refresh_cache``): ``refresh_cached_c`` (C) and ``refresh_cached`` (Numba path), see
  "Refresh cache" below.

The search stack's lazy walk-back over these steps, on either path, is ``quantfish.nnue.stack.ensure_accumulator``.

With ``kf = kernel.funcs if kernel.is_c else placeholder_funcs()`` one compiled search can serve both paths
(same Numba types) and choose per call with a flag.

``cnet = make_cnet(net)`` (built once) re-lays fc_0 and fc_1 for the kernel, marks fc_0's input groups whose
weights could saturate ``vpmaddubsw`` with inputs above 127 (``fc0_saturating_groups``) and makes the FT weights
64-byte aligned (a copy unless they already are); it refuses a net whose layer shapes are not the ones the
kernel is compiled for (``quantfish.nnue.architecture``'s, which ``load_library`` checks against the library's ``qf_arch``).
``make_cstack`` is ``accumulator.make_stack`` with aligned rows.
``scratch = make_cscratch(l1)`` is (x uint8[l1], nnz int32[l1/4 + 16], work int32[WORK_SIZE]), the same shape as
``inference.make_scratch`` (whose buffers also fit). One scratch per thread.
``forward_scheme_c(kf, cnet, net, acc, psqt, ply, side, bucket, scratch)`` is ``forward_c`` for a
Quantfish-format net: ``net`` (``Net.arrays()``) gives its packed scheme record.

Refresh cache
-------------
One entry per perspective and own-king square: an accumulator (int16[l1] + int32 PSQT) and the mailbox it
was computed for. It starts as (biases, 0, empty board). A refresh of perspective P with its king on k
diffs the current board against entry (P, k)'s board, applies the removed/added features to the entry in
place, stores the board, and copies the entry to the output (the C kernel does update + copy in one pass).
A king move costs about as many feature rows as pieces changed since the king last stood on that square,
instead of all pieces (about 32). Entries are keyed by the square, not the king bucket, because the
orientation (mirroring when the king is on files a-d) also depends on the square. Memory: 2 * 64 * l1 * 2
bytes (256 KB for L1 = 1024). Any board is valid input: an entry is only ever a function of its board.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path
from typing import NamedTuple, Optional

import numpy as np

from quantfish.nnue.kernel import files as kernelfiles

from quantfish.runtime import largepages
from quantfish.nnue.accumulator import MAX_DIRTY, NO_SQ, AccumulatorStack
from quantfish.nnue.architecture import (
    BIAS_DTYPE, FC0_OUT, FC1_IN_PADDED, FC1_OUT, FC2_IN_PADDED, MAX_FT_SHIFT, WEIGHT_DTYPE, c_defines,
)
from quantfish.nnue.features import active_features, king_bucket_offset, orient, piece_plane
from quantfish.nnue.layers import WORK_SIZE
from quantfish.nnue.intmath import tdiv
from quantfish.runtime.jit import njit
from quantfish.nnue.net import NET_ARRAYS_SPEC, P_FT_SHIFT
from quantfish.nnue.io.stockfish import CACHE_LINE
from quantfish.runtime.rawview import ArraySpec, check_arrays, word64
from quantfish.nnue.requant import psqt_scheme

ENV_MODE = "QUANTFISH_KERNEL"
ENV_VARIANT = "QUANTFISH_KERNEL_VARIANT"
MODES = ("auto", "c", "numba")

CPU_AVX2, CPU_AVX512, CPU_AVX512VNNI = 1, 2, 4
# variant -> CPU feature bits it needs, best first
VARIANT_NEEDS = {"avx512vnni": CPU_AVX2 | CPU_AVX512 | CPU_AVX512VNNI, "avx512": CPU_AVX2 | CPU_AVX512,
                 "avx2": CPU_AVX2, "scalar": 0}
SIMD_VARIANTS = ("avx512vnni", "avx512", "avx2")

ALIGN = CACHE_LINE     # the kernel's SIMD rows; nets are read into arrays so aligned (quantfish.nnue.io.stockfish)

_P = ctypes.c_void_p
_I = ctypes.c_int64
# name -> (restype, argtypes); the order of KernelFuncs
_SIGNATURES = {
    "acc_refresh": (None, [_P, _P, _P, _I, _I, _P, _I, _P, _P]),
    "acc_update": (None, [_P, _P, _I, _I, _P, _P, _P, _P, _P, _I, _P, _I]),
    "acc_update_copy": (None, [_P, _P, _I, _I, _P, _P, _P, _P, _P, _I, _P, _I]),
    "transform": (None, [_P, _P, _I, _I, _P]),
    "transform_nnz": (_I, [_P, _P, _I, _I, _P, _P]),
    "find_nnz": (_I, [_P, _I, _P]),
    "fc0": (None, [_P, _P, _P, _P, _I, _P]),
    "head": (_I, [_P, _P, _P, _P, _I]),
    "forward": (_I, [_P, _P, _I, _I, _P, _P, _P, _P, _P, _I, _P, _P, _P]),
    "forward_scheme": (_I, [_P, _P, _I, _P, _P, _P, _P, _P, _P, _P, _I, _P, _P, _P]),
    "evaluate": (_I, [_P, _I, _P, _I, _I, _I, _I]),
}


class KernelFuncs(NamedTuple):
    """ctypes functions of one variant (C prototypes in quantfish/nnue/kernel/qfkernel.c)."""

    acc_refresh: object      # (bias, w, pw, l1, nb, feats, n, acc, psqt)
    acc_update: object       # (w, pw, l1, nb, src, psrc, dst, pdst, rem, nr, add, na)
    acc_update_copy: object  # (w, pw, l1, nb, entry, pentry, out, pout, rem, nr, add, na)
    transform: object        # (acc_us, acc_them, l1, ft_shift, x)
    transform_nnz: object    # (acc_us, acc_them, l1, ft_shift, x, nnz) -> n
    find_nnz: object         # (x, l1, nnz) -> n
    fc0: object              # (w0g, b0, x, nnz, n, out16)
    head: object             # (fc0, w1g, b1, w2, b2) -> positional
    forward: object          # (acc_us, acc_them, l1, ft_shift, w0g, b0, w1g, b1, w2, b2, x, nnz, fc0) -> pos
    forward_scheme: object   # (acc_us, acc_them, l1, qs, w0g, fc0_sat, b0, w1, b1, w2, b2, x, nnz, fc0) -> pos
    evaluate: object         # (cx, ply, board, ksq_w, ksq_b, side, bucket) -> psqt << 32 | positional


class Kernel(NamedTuple):
    status: str                     # "c-<variant>" or "numba"
    variant: Optional[str]          # "avx512vnni", "avx512", "avx2", "scalar" or None
    funcs: Optional[KernelFuncs]
    reason: str

    @property
    def is_c(self) -> bool:
        return self.funcs is not None

    def info_string(self) -> str:
        return f"NNUE path {self.status}: {self.reason}"


class KernelUnavailable(RuntimeError):
    pass


# ------------------------------------------------------------------------------------------------------
# Loading
# ------------------------------------------------------------------------------------------------------

_libs: dict = {}


def _build_on_first_use(path: Path) -> None:
    """Builds the library of the current sources (``quantfish.nnue.kernel.build``); KernelUnavailable with the
    compiler's reason when it cannot be built."""
    from quantfish.nnue.kernel.build import KernelBuildError, build
    try:
        build(out=path)
    except KernelBuildError as exc:
        raise KernelUnavailable(f"kernel library {path} not built: {str(exc).splitlines()[0]}") from None


def load_library(path=None):
    """ctypes handle of the kernel library (cached per path), built first if it is the default library and
    missing; raises KernelUnavailable with the reason."""
    default = path is None
    path = Path(path) if path is not None else kernelfiles.library_path()
    key = str(path)
    if key in _libs:
        return _libs[key]
    if not path.is_file():
        if not default:
            raise KernelUnavailable(f"kernel library {path} not found")
        _build_on_first_use(path)
    try:
        lib = ctypes.CDLL(key)
    except OSError as exc:
        raise KernelUnavailable(f"cannot load kernel library {path}: {exc}") from None
    try:
        lib.qf_build_id.restype = ctypes.c_char_p
        lib.qf_build_id.argtypes = []
        lib.qf_cpu_features.restype = ctypes.c_int64
        lib.qf_cpu_features.argtypes = []
        built_from = lib.qf_build_id().decode().split("-")[0]
    except AttributeError:
        raise KernelUnavailable(f"kernel library {path} is not a Quantfish kernel (run: quantfish kernel)") from None
    if kernelfiles.SOURCE.is_file() and built_from != kernelfiles.source_id():
        raise KernelUnavailable(f"kernel library {path} is stale: built from other sources "
                                f"(run: quantfish kernel)")
    want = c_defines()
    built_for = library_arch(lib)
    if built_for != want:
        diff = ", ".join(f"{k} {built_for.get(k)} (now {v})" for k, v in want.items() if built_for.get(k) != v)
        raise KernelUnavailable(f"kernel library {path} was built for other architecture constants: {diff} "
                                f"(run: quantfish kernel)")
    _libs[key] = lib
    return lib


def library_arch(lib) -> dict:
    """The architecture constants a kernel library was compiled with (its ``qf_arch``), by the C names of
    ``architecture.c_defines()``; empty when the library predates ``qf_arch``."""
    try:
        fn = lib.qf_arch
    except AttributeError:
        return {}
    fn.restype = ctypes.c_int64
    fn.argtypes = [ctypes.c_void_p, ctypes.c_int64]
    names = list(c_defines())
    values = (ctypes.c_int64 * len(names))()
    count = fn(values, len(names))
    return dict(zip(names, values[:count]))


def cpu_features(lib=None) -> int:
    """CPU feature bits (CPU_AVX2 | CPU_AVX512 | CPU_AVX512VNNI) from CPUID via the library, or from
    /proc/cpuinfo when no library is given."""
    if lib is not None:
        return int(lib.qf_cpu_features())
    flags = proc_cpu_flags()
    f = 0
    if {"avx2", "fma", "bmi2", "popcnt"} <= flags:
        f |= CPU_AVX2
        if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
            f |= CPU_AVX512
            if "avx512_vnni" in flags:
                f |= CPU_AVX512VNNI
    return f


def proc_cpu_flags() -> set:
    """The 'flags' of the first CPU in /proc/cpuinfo (empty set when unavailable)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def compiled_variants(lib) -> list:
    """Variants present in the library (the build leaves out those the compiler cannot target)."""
    return [v for v in VARIANT_NEEDS if hasattr(lib, f"qf_{v}_forward")]


def usable_variants(lib) -> list:
    """Variants present in the library that this CPU runs, best first."""
    feats = cpu_features(lib)
    return [v for v in compiled_variants(lib) if VARIANT_NEEDS[v] & feats == VARIANT_NEEDS[v]]


def kernel_funcs(lib, variant: str) -> KernelFuncs:
    """Typed ctypes functions of ``variant``."""
    funcs = []
    for name, (restype, argtypes) in _SIGNATURES.items():
        # A fresh function object per (variant, name), so argtypes set here cannot leak between variants.
        fn = ctypes.CFUNCTYPE(restype, *argtypes)((f"qf_{variant}_{name}", lib))
        funcs.append(fn)
    return KernelFuncs(*funcs)


def _not_loaded(*args):
    raise RuntimeError("C kernel function called on the Numba path (placeholder_funcs)")


_placeholders = None


def placeholder_funcs() -> KernelFuncs:
    """KernelFuncs with the kernel's exact ctypes signatures that work without the library (Python
    callbacks that raise if ever called). Numba types them exactly like the real functions, so one compiled
    (and cached) search can take ``kf`` plus a run-time flag and serve both paths:
    ``kf = kernel.funcs if kernel.is_c else placeholder_funcs()``."""
    global _placeholders
    if _placeholders is None:
        _placeholders = KernelFuncs(*(ctypes.CFUNCTYPE(restype, *argtypes)(_not_loaded)
                                      for restype, argtypes in _SIGNATURES.values()))
    return _placeholders


def load_kernel(mode: Optional[str] = None, variant: Optional[str] = None, path=None,
                require: bool = False) -> Kernel:
    """Choose the evaluation path (see the module docstring). ``require=True`` raises KernelUnavailable
    instead of falling back to the Numba path when C was asked for (mode "c" or a variant)."""
    mode = (mode or os.environ.get(ENV_MODE) or "auto").strip().lower()
    if mode not in MODES:
        raise ValueError(f"kernel mode must be one of {', '.join(MODES)}, not {mode!r}")
    variant = variant or os.environ.get(ENV_VARIANT) or None
    if mode == "numba":
        return Kernel("numba", None, None, "Numba path selected")
    strict = require and (mode == "c" or variant is not None)
    try:
        lib = load_library(path)
        usable = usable_variants(lib)
        if variant is not None:
            if variant not in VARIANT_NEEDS:
                raise KernelUnavailable(f"unknown kernel variant {variant!r} (one of {', '.join(VARIANT_NEEDS)})")
            if variant not in usable:
                raise KernelUnavailable(f"kernel variant {variant} is not usable here "
                                        f"(usable: {', '.join(usable) or 'none'})")
            chosen, why = variant, "variant forced"
        else:
            simd = [v for v in usable if v in SIMD_VARIANTS]
            if simd:
                chosen, why = simd[0], "best variant this CPU supports"
            elif mode == "c" and "scalar" in usable:
                chosen, why = "scalar", "CPU lacks AVX2: scalar C variant (mode c)"
            else:
                raise KernelUnavailable("CPU lacks AVX2")
        return Kernel(f"c-{chosen}", chosen, kernel_funcs(lib, chosen), f"C kernel, {why}")
    except KernelUnavailable as exc:
        if strict:
            raise
        return Kernel("numba", None, None, f"{exc}; using the Numba path")


# ------------------------------------------------------------------------------------------------------
# Net layout and buffers for the kernel
# ------------------------------------------------------------------------------------------------------

def aligned_zeros(shape, dtype, align: int = ALIGN) -> np.ndarray:
    """C-contiguous zeroed array whose data starts on an ``align``-byte boundary; a large one (the FT weights,
    the transposition table) on huge pages where the system gives them (``quantfish.runtime.largepages``)."""
    return largepages.aligned_zeros(shape, dtype, align)


def aligned_copy(a: np.ndarray, align: int = ALIGN) -> np.ndarray:
    out = aligned_zeros(a.shape, a.dtype, align)
    out[...] = a
    return out


class CNet(NamedTuple):
    """Net parameters as the kernel reads them (built once by ``make_cnet``)."""

    ft_bias: np.ndarray      # int16[L1]            (shared with Net.arrays())
    ft_weights: np.ndarray   # int16[F, L1]         (shared unless align_ft)
    ft_psqt: np.ndarray      # int32[F, nb]         (shared)
    b0: np.ndarray           # int32[S, 16]
    w0g: np.ndarray          # int8[S, L1/4, 16, 4] w0g[s, g, o, k] = w0[s, o, 4g+k]
    fc0_sat: np.ndarray      # uint8[S, (L1 + 31) / 32]: fc0_saturating_groups(w0g)
    b1: np.ndarray           # int32[S, 32]
    w1g: np.ndarray          # int8[S, 8, 32, 4]    w1g[s, g, o, k] = w1[s, o, 4g+k]
    b2: np.ndarray           # int64[S]
    w2: np.ndarray           # int8[S, 32]
    params: np.ndarray       # int64[1]: ft_shift (0: 15.1 transform, 1: 17.1, accumulator doubled first)


# dtype and ndim of each field (make_cnet checks them, quantfish.nnue.netdir uses them); the FT is Net.arrays()'s.
CNET_SPEC = CNet(
    ft_bias=NET_ARRAYS_SPEC.ft_bias, ft_weights=NET_ARRAYS_SPEC.ft_weights, ft_psqt=NET_ARRAYS_SPEC.ft_psqt,
    b0=ArraySpec(BIAS_DTYPE, 2), w0g=ArraySpec(WEIGHT_DTYPE, 4), fc0_sat=ArraySpec(np.uint8, 2),
    b1=ArraySpec(BIAS_DTYPE, 2), w1g=ArraySpec(WEIGHT_DTYPE, 4), b2=ArraySpec(np.int64, 1),
    w2=ArraySpec(WEIGHT_DTYPE, 2),
    params=ArraySpec(np.int64, 1))


def fc0_grouped(w0: np.ndarray) -> np.ndarray:
    """[S][16][L1] -> [S][L1/4][16][4] (4 consecutive inputs of all 16 outputs are 64 contiguous bytes)."""
    s, o, n = w0.shape
    return aligned_copy(w0.reshape(s, o, n // 4, 4).transpose(0, 2, 1, 3))


def fc0_saturating_groups(w0g: np.ndarray, x_max: int = 255) -> np.ndarray:
    """uint8[S, ceil(G / 8)] of fc_0's grouped weights ``w0g`` [S][G][16][4]: bit g % 8 of byte g / 8 is set when
    some output's pair of products (inputs 4g, 4g+1 or 4g+2, 4g+3), with inputs in 0..x_max, can leave int16.

    ``vpmaddubsw`` sums such a pair with int16 saturation, so for inputs above 127 the kernel (AVX2 without
    VNNI) widens the products only of the marked groups that hold such a byte: Stockfish's net, quantised with
    its own scales, marks 0-2 of 256 groups a stack; range-based scales (largest weight 127 a row) 6-15."""
    w = w0g.astype(np.int64).reshape(*w0g.shape[:3], 2, 2)
    highest = x_max * np.clip(w, 0, None).sum(-1)
    lowest = -x_max * np.clip(-w, 0, None).sum(-1)
    groups = ((highest > 32767) | (lowest < -32768)).any(axis=(2, 3))
    return aligned_copy(np.packbits(groups, axis=1, bitorder="little"))


def make_cnet(net, ft_shift: Optional[int] = None, align_ft: bool = True) -> CNet:
    """Kernel layout of ``net`` (a ``Net`` or its ``arrays()``). ``ft_shift`` s selects the transform
    ``a = int16(acc << s)``, ``(clamp(a[j], 0, 127 << s) * clamp(a[j + L1/2], 0, 127 << s)) >> 7 + 2s``:
    0 for 15.1 nets, 1 for 17.1 nets; by default it is read from the net's ``params``.
    ``align_ft`` (default) makes the FT weights 64-byte aligned: refreshes and updates are 1.2-1.5x faster
    (a misaligned 64-byte row chunk spans two cache lines). The array is shared when it is aligned already,
    else copied (46 MB for the 15.1 net); pass False to always share.

    The kernel is compiled for the widths of ``quantfish.nnue.architecture`` (its ``qf_arch`` is checked when the
    library is loaded), so a net whose layers have other shapes is refused here."""
    a = net.arrays() if hasattr(net, "arrays") else net
    if ft_shift is None:
        ft_shift = int(a.params[P_FT_SHIFT])
    ft_bias, ft_w, ft_p = a.ft_bias, a.ft_weights, a.ft_psqt
    l1 = ft_bias.shape[0]
    if l1 % 8 or ft_w.shape[1] != l1:
        raise ValueError(f"the kernel needs L1 to be a multiple of 8 (L1 = {l1})")
    stacks = a.w0.shape[0]
    want = {"fc_0": (stacks, FC0_OUT, l1), "fc_1": (stacks, FC1_OUT, FC1_IN_PADDED),
            "fc_2": (stacks, FC2_IN_PADDED)}
    found = {"fc_0": a.w0.shape, "fc_1": a.w1.shape, "fc_2": a.w2.shape}
    if found != want:
        raise ValueError(f"the kernel was built for other layer shapes: weights {found}, kernel {want}")
    if not 0 <= ft_shift <= MAX_FT_SHIFT:
        raise ValueError(f"the kernel supports ft_shift 0..{MAX_FT_SHIFT}, not {ft_shift}")
    w0g = fc0_grouped(np.asarray(a.w0))
    w1 = np.asarray(a.w1)
    w1g = aligned_copy(w1.reshape(stacks, FC1_OUT, FC1_IN_PADDED // 4, 4).transpose(0, 2, 1, 3))
    spec = CNET_SPEC
    cnet = CNet(np.ascontiguousarray(ft_bias),
                aligned_copy(ft_w) if align_ft and ft_w.ctypes.data % ALIGN else np.ascontiguousarray(ft_w),
                np.ascontiguousarray(ft_p),
                aligned_copy(a.b0.astype(spec.b0.dtype)), w0g, fc0_saturating_groups(w0g),
                aligned_copy(a.b1.astype(spec.b1.dtype)), w1g,
                np.ascontiguousarray(a.b2, dtype=spec.b2.dtype), aligned_copy(a.w2.astype(spec.w2.dtype)),
                np.array([ft_shift], spec.params.dtype))
    check_arrays(CNET_SPEC, cnet, "make_cnet")
    return cnet


def make_cstack(l1: int, max_ply: int, psqt_buckets: int = 8):
    """``accumulator.make_stack`` with 64-byte aligned arrays (every acc[p, P] row starts on a cache line
    when l1 is a multiple of 32)."""
    return AccumulatorStack(aligned_zeros((max_ply, 2, l1), np.int16),
                            aligned_zeros((max_ply, 2, psqt_buckets), np.int32), np.zeros((max_ply, 2), np.uint8),
                            np.zeros((max_ply, MAX_DIRTY, 3), np.int32), np.zeros(max_ply, np.int32))


def make_cscratch(l1: int):
    """(x uint8[l1], nnz int32[l1/4 + 16], work int32[WORK_SIZE]), 64-byte aligned; one per thread. The kernel
    needs l1/4 + 16 index slots; the Numba forward passes need l1 (``inference.make_scratch``), so never hand
    them this scratch."""
    return (aligned_zeros(l1, np.uint8), aligned_zeros(l1 // 4 + 16, np.int32),
            aligned_zeros(WORK_SIZE, np.int32))


# ------------------------------------------------------------------------------------------------------
# Compiled wrappers (the search calls these; kf is KernelFuncs, passed as an argument)
# ------------------------------------------------------------------------------------------------------

@njit(cache=True, nogil=True)
def positional_c(kf, cnet, acc_us, acc_them, bucket, scratch):
    """Layer-stack output of ``bucket`` for two perspective accumulators (side to move first)."""
    x, nnz, work = scratch
    return kf.forward(acc_us.ctypes, acc_them.ctypes, acc_us.shape[0], cnet.params[0],
                      cnet.w0g[bucket].ctypes, cnet.b0[bucket].ctypes, cnet.w1g[bucket].ctypes,
                      cnet.b1[bucket].ctypes, cnet.w2[bucket].ctypes, cnet.b2[bucket], x.ctypes, nnz.ctypes,
                      work.ctypes)


@njit(cache=True, nogil=True)
def forward_c(kf, cnet, acc, psqt, ply, side, bucket, scratch):
    """(psqt, positional) of one bucket for the accumulators at ``ply``: ``inference.forward`` in C."""
    pos = positional_c(kf, cnet, acc[ply, side], acc[ply, 1 - side], bucket, scratch)
    return tdiv(np.int64(psqt[ply, side, bucket]) - np.int64(psqt[ply, 1 - side, bucket]), 2), pos


@njit(cache=True, nogil=True)
def forward_scheme_c(kf, cnet, net, acc, psqt, ply, side, bucket, scratch):
    """``inference.forward_scheme`` (a Quantfish-format net, ``net`` its ``Net.arrays()``) in C."""
    x, nnz, work = scratch
    qs = net.qscheme[bucket]
    pos = kf.forward_scheme(acc[ply, side].ctypes, acc[ply, 1 - side].ctypes, acc.shape[2], qs.ctypes,
                            cnet.w0g[bucket].ctypes, cnet.fc0_sat[bucket].ctypes, cnet.b0[bucket].ctypes,
                            cnet.w1g[bucket].ctypes, cnet.b1[bucket].ctypes, cnet.w2[bucket].ctypes, cnet.b2[bucket],
                            x.ctypes, nnz.ctypes, work.ctypes)
    return psqt_scheme(psqt[ply, side, bucket], psqt[ply, 1 - side, bucket], qs), pos


@njit(cache=True, nogil=True)
def forward_all_c(kf, cnet, acc, psqt, ply, side, psqt_out, pos_out, scratch):
    """All buckets (for eval reports): fills psqt_out and pos_out, like ``inference.forward_all``."""
    for b in range(psqt_out.shape[0]):
        p, q = forward_c(kf, cnet, acc, psqt, ply, side, b, scratch)
        psqt_out[b] = p
        pos_out[b] = q


@njit(cache=True, nogil=True)
def refresh_c(kf, cnet, board, persp, ksq, acc_out, psqt_out, scratch):
    """One perspective's accumulator from scratch for mailbox ``board`` (``accumulator.refresh``)."""
    feats = scratch[2]
    n = active_features(persp, ksq, board, feats)
    kf.acc_refresh(cnet.ft_bias.ctypes, cnet.ft_weights.ctypes, cnet.ft_psqt.ctypes, acc_out.shape[0],
                   psqt_out.shape[0], feats.ctypes, n, acc_out.ctypes, psqt_out.ctypes)


@njit(cache=True, nogil=True)
def update_c(kf, cnet, persp, ksq, dirty_row, nd, acc_src, acc_dst, psqt_src, psqt_dst, scratch):
    """``dst = src`` minus the removed and plus the added features of one move (``accumulator.update``)."""
    work = scratch[2]
    rem = work[0:4]
    add = work[4:8]
    o = orient(persp, ksq)
    kb = king_bucket_offset(persp, ksq)
    nr = 0
    na = 0
    for i in range(nd):
        pc = dirty_row[i, 0]
        base = piece_plane(persp, pc) + kb
        if dirty_row[i, 1] != NO_SQ:
            rem[nr] = (dirty_row[i, 1] ^ o) + base
            nr += 1
        if dirty_row[i, 2] != NO_SQ:
            add[na] = (dirty_row[i, 2] ^ o) + base
            na += 1
    kf.acc_update(cnet.ft_weights.ctypes, cnet.ft_psqt.ctypes, acc_dst.shape[0], psqt_dst.shape[0],
                  acc_src.ctypes, psqt_src.ctypes, acc_dst.ctypes, psqt_dst.ctypes, rem.ctypes, nr, add.ctypes,
                  na)




# ------------------------------------------------------------------------------------------------------
# Refresh cache (both paths)
# ------------------------------------------------------------------------------------------------------

def make_refresh_cache(net):
    """(acc int16[2, 64, L1], psqt int32[2, 64, nb], boards int8[2, 64, 64]) for ``net`` (a CNet, a Net or
    its arrays() tuple): every entry holds the biases, zero PSQT and an empty board. Reset it (make a new
    one) when the net changes; it is valid for any position otherwise."""
    a = net.arrays() if hasattr(net, "arrays") else net
    bias, psq = a.ft_bias, a.ft_psqt
    l1, nb = bias.shape[0], psq.shape[1]
    acc = aligned_zeros((2, 64, l1), np.int16)
    acc[...] = bias
    return acc, aligned_zeros((2, 64, nb), np.int32), aligned_zeros((2, 64, 64), np.int8)


@njit(cache=True, nogil=True)
def _board_diff(board, cached, persp, ksq, rem, add):
    """Features removed (on ``cached``, not on ``board``) and added (the reverse); updates ``cached``."""
    o = orient(persp, ksq)
    kb = king_bucket_offset(persp, ksq)
    nr = 0
    na = 0
    # Eight squares compared at a time (a cache entry differs from the board on a few squares); the squares
    # of a differing word one by one.
    for w in range(8):
        if word64(cached, w) == word64(board, w):
            continue
        for sq in range(8 * w, 8 * w + 8):
            old = cached[sq]
            new = board[sq]
            if old != new:
                if old != 0:
                    rem[nr] = (sq ^ o) + piece_plane(persp, old) + kb
                    nr += 1
                if new != 0:
                    add[na] = (sq ^ o) + piece_plane(persp, new) + kb
                    na += 1
                cached[sq] = new
    return nr, na


@njit(cache=True, nogil=True)
def refresh_cached_c(kf, cnet, cache, board, persp, ksq, acc_out, psqt_out, scratch):
    """``refresh_c`` through the refresh cache: entry (persp, ksq) += board diff, then copied out."""
    cacc, cpsqt, cboards = cache
    work = scratch[2]
    rem = work[0:64]
    add = work[64:128]
    nr, na = _board_diff(board, cboards[persp, ksq], persp, ksq, rem, add)
    kf.acc_update_copy(cnet.ft_weights.ctypes, cnet.ft_psqt.ctypes, acc_out.shape[0], psqt_out.shape[0],
                       cacc[persp, ksq].ctypes, cpsqt[persp, ksq].ctypes, acc_out.ctypes, psqt_out.ctypes,
                       rem.ctypes, nr, add.ctypes, na)


@njit(cache=True, nogil=True)
def refresh_cached(net, cache, board, persp, ksq, acc_out, psqt_out, scratch):
    """Numba path: the same refresh through the cache (``net`` is ``Net.arrays()``)."""
    cacc, cpsqt, cboards = cache
    w = net.ft_weights
    pw = net.ft_psqt
    work = scratch[2]
    rem = work[0:64]
    add = work[64:128]
    nr, na = _board_diff(board, cboards[persp, ksq], persp, ksq, rem, add)
    e = cacc[persp, ksq]
    pe = cpsqt[persp, ksq]
    for i in range(nr):
        row = w[rem[i]]
        for j in range(e.shape[0]):
            e[j] = e[j] - row[j]
        prow = pw[rem[i]]
        for k in range(pe.shape[0]):
            pe[k] = pe[k] - prow[k]
    for i in range(na):
        row = w[add[i]]
        for j in range(e.shape[0]):
            e[j] = e[j] + row[j]
        prow = pw[add[i]]
        for k in range(pe.shape[0]):
            pe[k] = pe[k] + prow[k]
    # Element loops, not slice assignment: the search calls this from code compiled without NRT.
    for j in range(e.shape[0]):
        acc_out[j] = e[j]
    for k in range(pe.shape[0]):
        psqt_out[k] = pe[k]
