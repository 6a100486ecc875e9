"""The C NNUE kernel gives exactly the integers of the Numba path, in every variant this CPU runs.

The library is built by the session fixture (quantfish/nnue/kernel/build.py; needs gcc). If it cannot be built or
loaded the tests FAIL with the reason; nothing is skipped silently. A variant the CPU cannot execute is
reported as an explicit skip with the CPU's features in the reason.
"""

import csv
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numba import njit

from quantfish.core.fen import parse_fen
from quantfish.nnue import architecture
from quantfish.nnue.kernel import loader as ckernel, files as kernelfiles
from quantfish.nnue.accumulator import make_stack, refresh
from quantfish.nnue.stack import ensure_accumulator, refresh_ply
from quantfish.nnue.layers import fc0_sparse, find_nnz, forward, forward_all, head, make_scratch, transform_half
from quantfish.nnue.net import P_FT_SHIFT, NetArrays
from quantfish.nnue.requant import no_scheme
from quantfish.nnue.kernel import build as build_kernel
from tests.testdata import NNUE_DATA, require

REPO = Path(__file__).resolve().parent.parent
TSV = NNUE_DATA / "sf15.1_reference.tsv"
N_REF_ROWS = 300
ALL_VARIANTS = ("scalar", "avx2", "avx512", "avx512vnni")
I16_EXTREMES = np.array([-32768, -32767, -1000, -129, -128, -127, -1, 0, 1, 2, 63, 64, 126, 127, 128, 129,
                         253, 254, 255, 256, 1000, 16383, 16384, 32766, 32767], np.int16)


@pytest.fixture(scope="session")
def kernel_lib():
    try:
        res = build_kernel.build()
    except build_kernel.KernelBuildError as exc:
        pytest.fail(f"cannot build the C kernel: {exc}")
    try:
        return ckernel.load_library(res["path"])
    except ckernel.KernelUnavailable as exc:
        pytest.fail(f"cannot load the C kernel: {exc}")


@pytest.fixture(scope="session", params=ALL_VARIANTS)
def kf(request, kernel_lib):
    v = request.param
    if v not in ckernel.compiled_variants(kernel_lib):
        if build_kernel.is_x86_64():
            pytest.fail(f"variant {v} was not compiled (compiler too old for its flags?)")
        pytest.skip(f"variant {v}: not an x86-64 machine")
    if v not in ckernel.usable_variants(kernel_lib):
        pytest.skip(f"variant {v}: this CPU lacks it (feature bits {ckernel.cpu_features(kernel_lib)})")
    return ckernel.kernel_funcs(kernel_lib, v)


@pytest.fixture(scope="session")
def cnet(nnue_arrays):
    return ckernel.make_cnet(nnue_arrays)


@pytest.fixture(scope="session")
def sf_cnet(sf_arrays):
    return ckernel.make_cnet(sf_arrays)


def _p(a):
    assert a.flags.c_contiguous
    return a.ctypes.data


# ------------------------------------------------------------------------------------------------------
# Loading, CPU detection, status
# ------------------------------------------------------------------------------------------------------

def test_cpu_detection_agrees_with_proc_cpuinfo(kernel_lib):
    if not ckernel.proc_cpu_flags():
        pytest.fail("/proc/cpuinfo has no flags line")
    assert ckernel.cpu_features(kernel_lib) == ckernel.cpu_features(None)


def test_status_strings(kernel_lib):
    assert ckernel.load_kernel("numba").status == "numba"
    k = ckernel.load_kernel("auto")
    usable = ckernel.usable_variants(kernel_lib)
    simd = [v for v in ckernel.SIMD_VARIANTS if v in usable]
    assert k.status == (f"c-{simd[0]}" if simd else "numba")
    assert ckernel.load_kernel("c", variant="scalar").status == "c-scalar"
    with pytest.raises(ValueError):
        ckernel.load_kernel("fast")


def test_missing_library_falls_back(tmp_path):
    k = ckernel.load_kernel("auto", path=tmp_path / "nope.so")
    assert k.status == "numba" and "not found" in k.reason
    with pytest.raises(ckernel.KernelUnavailable):
        ckernel.load_kernel("c", path=tmp_path / "nope.so", require=True)


@njit(cache=True, nogil=True)
def _maybe_c(kf, use_c, x, nnz):
    if use_c:
        return kf.find_nnz(x.ctypes, x.shape[0], nnz.ctypes)
    return -1


def test_placeholder_funcs_share_the_compiled_code(kernel_lib):
    from numba import typeof
    real = ckernel.kernel_funcs(kernel_lib, "scalar")
    fake = ckernel.placeholder_funcs()
    assert typeof(real) == typeof(fake)
    x = np.zeros(64, np.uint8)
    x[5] = 1
    nnz = np.zeros(64 // 4 + 16, np.int32)
    assert _maybe_c(real, True, x, nnz) == 1 and nnz[0] == 1
    assert _maybe_c(fake, False, x, nnz) == -1
    assert len(_maybe_c.signatures) == 1


@pytest.mark.slow
def test_the_library_is_built_on_first_use_into_the_cache_folder(tmp_path, monkeypatch):
    """With an empty cache folder the loader builds the library there (nothing is written into the package)."""
    try:
        build_kernel.find_compiler()
    except build_kernel.KernelBuildError:
        pytest.skip("no C compiler")
    monkeypatch.setenv("QUANTFISH_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(ckernel, "_libs", {})
    k = ckernel.load_kernel("c" if build_kernel.is_x86_64() else "auto")
    assert kernelfiles.library_path() == tmp_path / "kernel" / f"libqfkernel-{kernelfiles.source_id()}.so"
    assert kernelfiles.library_path().is_file()
    assert k.is_c or "AVX2" in k.reason
    assert not list(kernelfiles.KERNEL_DIR.glob("*.so")) and not (kernelfiles.KERNEL_DIR / "qfarch.h").exists()


def test_build_is_up_to_date_and_skipped(kernel_lib):
    res = build_kernel.build()
    assert res["built"] is False
    assert build_kernel.library_build_id(kernelfiles.library_path()) == build_kernel.full_build_id(build_kernel.find_compiler())


# ------------------------------------------------------------------------------------------------------
# The kernel's widths, shifts and scales come from quantfish/nnue/architecture.py
# ------------------------------------------------------------------------------------------------------

def test_c_constants_are_the_architectures(kernel_lib, tmp_path):
    """qfarch.h (what the build writes for the compiler) is architecture.c_header(); each macro is the
    architecture's constant; the compiled library reports the same values (qf_arch, which the loader checks)."""
    a = architecture
    header = a.write_c_header(tmp_path).read_text()
    assert header == a.c_header()
    macros = {m[1]: int(m[2]) for m in re.finditer(r"^#define (QF_\w+) (-?\d+)", header, re.M)}
    assert macros == {
        "QF_FC0_OUT": a.FC0_OUT, "QF_FC1_IN": a.FC1_IN_PADDED, "QF_FC1_OUT": a.FC1_OUT,
        "QF_FC2_IN": a.FC2_IN_PADDED, "QF_WEIGHT_SCALE_BITS": a.WEIGHT_SCALE_BITS, "QF_ACT_MAX": a.ACT_MAX,
        "QF_SQR_SHIFT": a.SQR_SHIFT, "QF_SQR_LIMIT": a.SQR_INPUT_LIMIT, "QF_FT_ACT_MAX": a.FT_ACT_MAX,
        "QF_FT_PRODUCT_SHIFT": a.FT_PRODUCT_SHIFT, "QF_MAX_FT_SHIFT": a.MAX_FT_SHIFT,
        "QF_SKIP_MUL": a.SKIP_MUL, "QF_SKIP_DIV": a.SKIP_DIV,
        # a scheme record's packed layout (quantfish.nnue.requant), which forward_scheme reads
        "QF_SCHEME_ROW": a.SCHEME_ROW, "QF_SCHEME_Q_SHIFT": a.SCHEME_Q_SHIFT, "QF_SCHEME_Q_DIV": a.SCHEME_Q_DIV,
        "QF_SCHEME_Q_ROUND": a.SCHEME_Q_ROUND, "QF_SCHEME_Q_WRAP": a.SCHEME_Q_WRAP,
        "QF_SCHEME_Q_MUL": a.SCHEME_Q_MUL, "QF_SCHEME_Q_HI": a.SCHEME_Q_HI, "QF_SCHEME_SITES": len(a.SCHEME_SITES),
        **{f"QF_S_{name.upper()}": i for i, name in enumerate(a.SCHEME_SITES)},
        # the feature set and move record the one-call evaluation walks, and its context's layout (quantfish.nnue.kernel.ceval)
        "QF_PS_NB": a.PS_NB, "QF_KING_PLANE": a.KING_PLANE, "QF_NO_SQ": a.NO_SQ, "QF_MAX_DIRTY": a.MAX_DIRTY,
        **{f"QF_CX_{name.upper()}": i for i, name in enumerate(a.EVAL_CONTEXT_FIELDS)},
        "QF_CX_SIZE": len(a.EVAL_CONTEXT_FIELDS), "QF_CX_PLAN_WORDS": a.CX_PLAN_WORDS}
    assert macros == a.c_defines()
    assert ckernel.library_arch(kernel_lib) == macros


def _kernel_sources(directory):
    for name in ("qfkernel.c", "qfkernel.h"):
        shutil.copy(kernelfiles.KERNEL_DIR / name, directory / name)


def test_build_id_follows_the_constants(monkeypatch, tmp_path):
    """Another constant in architecture.py gives another qfarch.h, so other source and build ids."""
    _kernel_sources(tmp_path)
    monkeypatch.setattr(kernelfiles, "KERNEL_DIR", tmp_path)
    architecture.write_c_header(tmp_path)
    before = kernelfiles.source_id()
    changed = tuple((n, v + 1 if n == "QF_SKIP_MUL" else v, c) for n, v, c in architecture.C_CONSTANTS)
    monkeypatch.setattr(architecture, "C_CONSTANTS", changed)
    architecture.write_c_header(tmp_path)
    assert "#define QF_SKIP_MUL 9601" in (tmp_path / architecture.C_HEADER_NAME).read_text()
    assert kernelfiles.source_id() != before


def test_loader_refuses_a_library_built_for_other_constants(kernel_lib, monkeypatch):
    other = dict(architecture.c_defines(), QF_FC1_OUT=64)
    monkeypatch.setattr(ckernel, "c_defines", lambda: other)
    monkeypatch.setattr(ckernel, "_libs", {})
    with pytest.raises(ckernel.KernelUnavailable, match=r"other architecture constants: QF_FC1_OUT 32 \(now 64\)"):
        ckernel.load_library(kernelfiles.library_path())
    k = ckernel.load_kernel("auto")
    assert k.status == "numba" and "architecture constants" in k.reason


def test_kernel_does_not_compile_for_widths_its_simd_code_does_not_handle(tmp_path):
    cc = build_kernel.find_compiler()
    _kernel_sources(tmp_path)
    cmd = [cc, "-std=gnu11", "-fsyntax-only", "-DQF_VARIANT_SCALAR=1", str(tmp_path / "qfkernel.c")]
    header = tmp_path / architecture.C_HEADER_NAME
    header.write_text(architecture.c_header())
    ok = subprocess.run(cmd, capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr
    header.write_text(architecture.c_header().replace("#define QF_FC0_OUT 16 ", "#define QF_FC0_OUT 8  "))
    bad = subprocess.run(cmd, capture_output=True, text=True)
    assert bad.returncode != 0 and "the SIMD layer code is written for" in bad.stderr


def test_make_cnet_refuses_other_layer_shapes(nnue_arrays):
    with pytest.raises(ValueError, match="other layer shapes"):
        ckernel.make_cnet(nnue_arrays._replace(w1=np.zeros((8, 32, 64), np.int8)))
    with pytest.raises(ValueError, match="ft_shift"):
        ckernel.make_cnet(nnue_arrays, ft_shift=architecture.MAX_FT_SHIFT + 1)


@pytest.mark.parametrize("which", ["15.1 raw", "17.1 LEB128"])
def test_a_loaded_nets_arrays_start_on_a_cache_line_so_the_kernel_shares_its_ft_weights(which, nnue_net, nnue17_pair):
    """The file reader places every array on a cache line; the kernel layout then shares the feature
    transformer's weights (46 MB in 15.1's net) instead of copying them to align them."""
    net = nnue_net if which == "15.1 raw" else nnue17_pair.big
    arrays = net.arrays()
    for name in ("ft_bias", "ft_weights", "ft_psqt", "b0", "w0", "b1", "w1", "b2", "w2"):
        assert getattr(arrays, name).ctypes.data % ckernel.ALIGN == 0, name
    cnet = ckernel.make_cnet(net)
    assert np.shares_memory(cnet.ft_weights, arrays.ft_weights)
    assert np.array_equal(cnet.ft_weights, arrays.ft_weights)


# ------------------------------------------------------------------------------------------------------
# Piece by piece against the Numba functions, random inputs and the extremes of each range
# ------------------------------------------------------------------------------------------------------

def _random_acc(rng, l1):
    acc = rng.integers(-300, 400, size=l1).astype(np.int16)
    k = l1 // 4
    idx = rng.choice(l1, size=k, replace=False)
    acc[idx] = rng.choice(I16_EXTREMES, size=k)
    return acc


def _transform_ref(us, them, s):
    """numpy reference: a = int16(acc << s), clamp to [0, 127 << s], product >> 7 + 2s."""
    half = us.shape[0] // 2
    out = []
    for a in (us, them):
        a = (a.astype(np.int64) << s).astype(np.int16).astype(np.int64)
        u = np.clip(a[:half], 0, 127 << s)
        v = np.clip(a[half:], 0, 127 << s)
        out.append(((u * v) >> (7 + 2 * s)).astype(np.uint8))
    return np.concatenate(out)


@pytest.mark.parametrize("l1", [128, 1024, 3072, 136, 8])
def test_transform_and_nnz(kf, l1):
    rng = np.random.default_rng(l1)
    x = ckernel.aligned_zeros(l1, np.uint8)
    x_ref = np.zeros(l1, np.uint8)
    nnz = ckernel.aligned_zeros(l1 // 4 + 16, np.int32)
    nzb = np.zeros(l1, np.int32)
    for trial in range(40):
        us, them = _random_acc(rng, l1), _random_acc(rng, l1)
        if trial == 0:
            us[:] = 127
            them[:] = 0
        if trial == 1:
            us[:] = rng.choice(I16_EXTREMES, size=l1)
            them[:] = 32767
        if trial == 2:
            us[:] = -32768
            them[:] = 254
        half = l1 // 2
        for s in (0, 1):        # 15.1 and 17.1 arithmetic, against the Numba path and numpy
            transform_half(us, x_ref[:half], s)
            transform_half(them, x_ref[half:], s)
            assert np.array_equal(x_ref, _transform_ref(us, them, s))
            kf.transform(_p(us), _p(them), l1, s, _p(x))
            assert np.array_equal(x, x_ref)
            x[:] = 0
            n = kf.transform_nnz(_p(us), _p(them), l1, s, _p(x), _p(nnz))
            assert np.array_equal(x, x_ref)
            # Numba lists non-zero bytes; the kernel lists non-zero 4-byte groups.
            nb = find_nnz(x_ref, nzb)
            groups = np.unique(nzb[:nb] // 4)
            assert np.array_equal(nnz[:n], groups)
            n2 = kf.find_nnz(_p(x), l1, _p(nnz))
            assert n2 == n and np.array_equal(nnz[:n2], groups)


def test_find_nnz_patterns(kf):
    l1 = 1024
    x = ckernel.aligned_zeros(l1, np.uint8)
    nnz = ckernel.aligned_zeros(l1 // 4 + 16, np.int32)
    rng = np.random.default_rng(5)
    for density in (0.0, 0.01, 0.2, 0.7, 1.0):
        x[:] = (rng.random(l1) < density) * rng.integers(1, 256, size=l1)
        n = kf.find_nnz(_p(x), l1, _p(nnz))
        expect = np.nonzero(x.reshape(-1, 4).any(axis=1))[0]
        assert np.array_equal(nnz[:n], expect)


@pytest.mark.parametrize("l1", [128, 1024, 3072])
def test_fc0_sparse(kf, l1):
    rng = np.random.default_rng(l1 + 1)
    nzb = np.zeros(l1, np.int32)
    out_ref = np.zeros(16, np.int32)
    out = ckernel.aligned_zeros(16, np.int32)
    nnz = ckernel.aligned_zeros(l1 // 4 + 16, np.int32)
    for trial in range(30):
        w0 = rng.integers(-128, 128, size=(16, l1)).astype(np.int8)
        b0 = rng.integers(-2**20, 2**20, size=16).astype(np.int32)
        x = ((rng.random(l1) < 0.3) * rng.integers(0, 128, size=l1)).astype(np.uint8)
        if trial == 0:        # extremes: every input 127 (the largest the non-VNNI paths accept) and 126
            w0[:] = -128
            x[:] = 127
        if trial == 1:
            w0[:] = 127
            x[:] = 126
            b0[:] = 2**31 - 1 - 10   # int32 wrap-around, as the Numba int32 output array wraps
        if trial == 2:
            w0[:] = rng.choice(np.array([-128, 127], np.int8), size=(16, l1))
            x[:] = rng.choice(np.array([0, 127], np.uint8), size=l1)
            b0[:] = -2**31
        w0t = np.ascontiguousarray(w0.T)
        w0g = ckernel.fc0_grouped(w0[None])[0]
        nb = find_nnz(x, nzb)
        fc0_sparse(w0t, b0, x, nzb, nb, out_ref)
        dense = (b0.astype(np.int64) + w0.astype(np.int64) @ x.astype(np.int64))
        assert np.array_equal(out_ref, dense.astype(np.int32))      # wraps like int32
        n = kf.find_nnz(_p(x), l1, _p(nnz))
        kf.fc0(_p(w0g), _p(b0), _p(x), _p(nnz), n, _p(out))
        assert np.array_equal(out, out_ref), (trial, out, out_ref)


def test_fc0_vnni_and_scalar_exact_for_any_byte(kernel_lib):
    """vpdpbusd and the scalar code are exact for inputs up to 255 too (no int16 intermediate)."""
    l1 = 256
    rng = np.random.default_rng(9)
    variants = [v for v in ("scalar", "avx512vnni") if v in ckernel.usable_variants(kernel_lib)]
    assert "scalar" in variants
    for v in variants:
        kf = ckernel.kernel_funcs(kernel_lib, v)
        for w in (-128, 127):
            w0 = np.full((16, l1), w, np.int8)
            w0[3] = rng.integers(-128, 128, size=l1)
            x = np.full(l1, 255, np.uint8)
            b0 = np.zeros(16, np.int32)
            nnz = np.arange(l1 // 4 + 16, dtype=np.int32)
            out = np.zeros(16, np.int32)
            w0g = ckernel.fc0_grouped(w0[None])[0]      # keep a reference while the kernel reads it
            kf.fc0(_p(w0g), _p(b0), _p(x), _p(nnz), l1 // 4, _p(out))
            assert np.array_equal(out, (w0.astype(np.int64) @ x.astype(np.int64)).astype(np.int32)), v


FC0_EXTREMES = np.array([-2**31, -2**31 + 1, -10**6, -8161, -8160, -8159, -8128, -129, -64, -63, -1, 0, 1, 63, 64,
                         127, 128, 8127, 8128, 8159, 8160, 8161, 223696, 223697, 10**6, 2**31 - 2, 2**31 - 1],
                        np.int32)


def test_head(kf):
    rng = np.random.default_rng(3)
    l1in = np.zeros(32, np.int32)
    cr1 = np.zeros(32, np.int32)
    for trial in range(400):
        fc0 = rng.integers(-40000, 40000, size=16).astype(np.int32)
        if trial % 2:
            fc0[:] = rng.choice(FC0_EXTREMES, size=16)
        w1 = rng.integers(-128, 128, size=(32, 32)).astype(np.int8)
        b1 = rng.integers(-20000, 20000, size=32).astype(np.int32)
        w2 = rng.integers(-128, 128, size=32).astype(np.int8)
        b2 = int(rng.integers(-5000, 5000))
        if trial % 5 == 0:
            b1[:] = rng.choice(np.array([-2**31, 2**31 - 1, -2**30 - 5, 2**30 + 5, -520192, 520191], np.int32),
                               size=32)
        if trial % 7 == 0:
            b2 = int(rng.choice([-2**31, 2**31 - 1]))
        if trial % 11 == 0:
            w1[:] = rng.choice(np.array([-128, 127], np.int8), size=(32, 32))
            w2[:] = rng.choice(np.array([-128, 127], np.int8), size=32)
        ref = head(fc0, b1, w1, np.int32(b2), w2, l1in, cr1)
        w1g = np.ascontiguousarray(w1.reshape(32, 8, 4).transpose(1, 0, 2))
        got = kf.head(_p(fc0), _p(w1g), _p(b1), _p(w2), b2)
        assert got == ref, (trial, fc0, got, ref)


def _net_like(rng, l1, nf=64, nb=8, big=False):
    """Random FT tensors; ``big`` uses values near the int16 limits so that sums wrap around."""
    hi = 32767 if big else 600
    bias = rng.integers(-hi, hi + 1, size=l1).astype(np.int16)
    w = rng.integers(-hi, hi + 1, size=(nf, l1)).astype(np.int16)
    pw = rng.integers(-2**31 if big else -5000, 2**31 - 1 if big else 5000, size=(nf, nb)).astype(np.int32)
    return bias, w, pw


@pytest.mark.parametrize("l1", [128, 1024, 3072, 136])
@pytest.mark.parametrize("big", [False, True])
def test_accumulator_refresh_and_update(kf, l1, big):
    rng = np.random.default_rng(l1 * 2 + big)
    nb = 8
    bias, w, pw = _net_like(rng, l1, big=big)
    for trial in range(20):
        feats = rng.integers(0, w.shape[0], size=int(rng.integers(0, 33))).astype(np.int32)
        acc = ckernel.aligned_zeros(l1, np.int16)
        psq = np.zeros(nb, np.int32)
        kf.acc_refresh(_p(bias), _p(w), _p(pw), l1, nb, _p(feats), feats.shape[0], _p(acc), _p(psq))
        ref = (bias.astype(np.int64) + w[feats].astype(np.int64).sum(axis=0)).astype(np.int16)
        pref = pw[feats].astype(np.int64).sum(axis=0).astype(np.int32) if feats.size else np.zeros(nb, np.int32)
        assert np.array_equal(acc, ref) and np.array_equal(psq, pref)
        rem = rng.integers(0, w.shape[0], size=int(rng.integers(0, 4))).astype(np.int32)
        add = rng.integers(0, w.shape[0], size=int(rng.integers(0, 4))).astype(np.int32)
        dst = np.zeros(l1, np.int16)
        pdst = np.zeros(nb, np.int32)
        kf.acc_update(_p(w), _p(pw), l1, nb, _p(acc), _p(psq), _p(dst), _p(pdst), _p(rem), rem.size, _p(add),
                      add.size)
        dref = (acc.astype(np.int64) - w[rem].astype(np.int64).sum(axis=0)
                + w[add].astype(np.int64).sum(axis=0)).astype(np.int16)
        pdref = (psq.astype(np.int64) - pw[rem].astype(np.int64).sum(axis=0)
                 + pw[add].astype(np.int64).sum(axis=0)).astype(np.int32)
        assert np.array_equal(dst, dref) and np.array_equal(pdst, pdref)
        # in place (src == dst) and the cache form (entry updated in place and copied out)
        entry, pentry = acc.copy(), psq.copy()
        kf.acc_update(_p(w), _p(pw), l1, nb, _p(entry), _p(pentry), _p(entry), _p(pentry), _p(rem), rem.size,
                      _p(add), add.size)
        assert np.array_equal(entry, dref) and np.array_equal(pentry, pdref)
        entry, pentry = acc.copy(), psq.copy()
        out, pout = np.zeros(l1, np.int16), np.zeros(nb, np.int32)
        kf.acc_update_copy(_p(w), _p(pw), l1, nb, _p(entry), _p(pentry), _p(out), _p(pout), _p(rem), rem.size,
                           _p(add), add.size)
        assert np.array_equal(entry, dref) and np.array_equal(out, dref)
        assert np.array_equal(pentry, pdref) and np.array_equal(pout, pdref)


# ------------------------------------------------------------------------------------------------------
# Whole forward pass and accumulators through the compiled wrappers, on real positions
# ------------------------------------------------------------------------------------------------------

def _rows(n):
    with open(require(TSV)) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))
    return rows[:n]


@njit(cache=True, nogil=True)
def _refresh_both_c(net, kf, cnet, acc, psqt, computed, board, scratch):
    refresh_ply(net, acc, psqt, computed, 0, board, scratch, kf, cnet)


def test_forward_on_reference_positions(kf, sf_arrays, sf_cnet):
    l1 = sf_arrays.ft_bias.shape[0]
    acc, psqt, computed, _, _ = make_stack(l1, 1)
    acc_c, psqt_c, computed_c, _, _ = make_stack(l1, 1)
    scratch = make_scratch(l1)
    cscratch = ckernel.make_cscratch(l1)
    p_ref, q_ref = np.zeros(8, np.int64), np.zeros(8, np.int64)
    p_c, q_c = np.zeros(8, np.int64), np.zeros(8, np.int64)
    bad = []
    for r in _rows(N_REF_ROWS):
        pos = parse_fen(r["fen"])
        board = np.ascontiguousarray(pos.board, dtype=np.int8)
        refresh_ply(sf_arrays, acc, psqt, computed, 0, board)
        _refresh_both_c(sf_arrays, kf, sf_cnet, acc_c, psqt_c, computed_c, board, cscratch)
        assert np.array_equal(acc, acc_c) and np.array_equal(psqt, psqt_c), r["fen"]
        b = int(r["bucket"])
        p, q = forward(sf_arrays, acc, psqt, 0, pos.side, b, scratch)
        pc, qc = ckernel.forward_c(kf, sf_cnet, acc_c, psqt_c, 0, pos.side, b, cscratch)
        # the Numba scratch works with the kernel too
        pc2, qc2 = ckernel.forward_c(kf, sf_cnet, acc_c, psqt_c, 0, pos.side, b, scratch)
        forward_all(sf_arrays, acc, psqt, 0, pos.side, p_ref, q_ref, scratch)
        ckernel.forward_all_c(kf, sf_cnet, acc_c, psqt_c, 0, pos.side, p_c, q_c, cscratch)
        want = (int(r[f"psqt_{b}"]), int(r[f"positional_{b}"]))
        want_all = [int(r[f"psqt_{k}"]) for k in range(8)], [int(r[f"positional_{k}"]) for k in range(8)]
        if not ((p, q) == (pc, qc) == (pc2, qc2) == want and list(p_c) == list(p_ref) == want_all[0]
                and list(q_c) == list(q_ref) == want_all[1]):
            bad.append((r["fen"], want, (p, q), (pc, qc)))
    assert not bad, f"{len(bad)} of {N_REF_ROWS} rows differ, first: {bad[:3]}"


def _game_sequence(n_plies, seed):
    """A random game: python-chess boards, moves and dirty rows (engine protocol of accumulator.py)."""
    import random

    import chess

    from quantfish.nnue.pychess import dirty_pieces, mailbox, set_dirty
    rng = random.Random(seed)
    board = chess.Board()
    boards = [mailbox(board)]
    kings = [(board.king(chess.WHITE), board.king(chess.BLACK))]
    _, _, _, dirty, ndirty = make_stack(8, n_plies + 1)
    sides = [0]
    for p in range(1, n_plies + 1):
        moves = list(board.legal_moves)
        if not moves:
            break
        caps = [m for m in moves if board.is_capture(m) or m.promotion or board.is_castling(m)]
        move = rng.choice(caps if caps and rng.random() < 0.5 else moves)
        set_dirty(dirty, ndirty, p, dirty_pieces(board, move))
        board.push(move)
        boards.append(mailbox(board))
        kings.append((board.king(chess.WHITE), board.king(chess.BLACK)))
        sides.append(0 if board.turn == chess.WHITE else 1)
    n = len(boards)
    return (np.array(boards, np.int8), np.array(kings, np.int64), dirty[:n].copy(), ndirty[:n].copy(),
            np.array(sides, np.int64))


@njit(cache=True, nogil=True)
def _play_numba(net, boards, kings, dirty, ndirty, acc, psqt, computed, cache, use_cache, scratch, out_acc,
                out_psqt):
    refresh_ply(net, acc, psqt, computed, 0, boards[0])
    for p in range(1, boards.shape[0]):
        computed[p, 0] = 0
        computed[p, 1] = 0
        if use_cache:
            ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, p, boards[p], kings[p, 0], kings[p, 1],
                               scratch, cache)
        else:
            ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, p, boards[p], kings[p, 0], kings[p, 1])
        out_acc[p] = acc[p]
        out_psqt[p] = psqt[p]


@njit(cache=True, nogil=True)
def _play_c(net, kf, cnet, boards, kings, dirty, ndirty, acc, psqt, computed, cache, use_cache, scratch, out_acc,
            out_psqt):
    refresh_ply(net, acc, psqt, computed, 0, boards[0], scratch, kf, cnet)
    for p in range(1, boards.shape[0]):
        computed[p, 0] = 0
        computed[p, 1] = 0
        if use_cache:
            ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, p, boards[p], kings[p, 0], kings[p, 1],
                               scratch, cache, kf, cnet)
        else:
            ensure_accumulator(net, acc, psqt, computed, dirty, ndirty, p, boards[p], kings[p, 0], kings[p, 1],
                               scratch, None, kf, cnet)
        out_acc[p] = acc[p]
        out_psqt[p] = psqt[p]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_incremental_and_refresh_cache_along_games(kf, nnue_arrays, cnet, seed):
    """Lazy incremental updates, with and without the refresh cache, in both paths, equal full refreshes."""
    l1 = nnue_arrays.ft_bias.shape[0]
    boards, kings, dirty, ndirty, _ = _game_sequence(160, seed)
    n = boards.shape[0]
    full = np.zeros((n, 2, l1), np.int16)
    full_p = np.zeros((n, 2, 8), np.int32)
    for p in range(n):
        for persp in range(2):
            refresh(nnue_arrays, boards[p], persp, kings[p, persp], full[p, persp], full_p[p, persp])
    scratch = ckernel.make_cscratch(l1)
    for use_cache in (False, True):
        for path in ("numba", "c"):
            acc, psqt, computed, _, _ = make_stack(l1, n)
            cache = ckernel.make_refresh_cache(nnue_arrays)
            out_acc = np.zeros_like(full)
            out_p = np.zeros_like(full_p)
            out_acc[0], out_p[0] = full[0], full_p[0]
            if path == "numba":
                _play_numba(nnue_arrays, boards, kings, dirty, ndirty, acc, psqt, computed, cache, use_cache,
                            scratch, out_acc, out_p)
            else:
                _play_c(nnue_arrays, kf, cnet, boards, kings, dirty, ndirty, acc, psqt, computed, cache, use_cache, scratch,
                        out_acc, out_p)
            assert np.array_equal(out_acc, full), (path, use_cache)
            assert np.array_equal(out_p, full_p), (path, use_cache)


def test_refresh_cache_random_boards(kf, nnue_arrays, cnet):
    """Repeated cached refreshes on unrelated boards (large diffs, same king squares) stay exact."""
    l1 = nnue_arrays.ft_bias.shape[0]
    rng = np.random.default_rng(11)
    cache_c = ckernel.make_refresh_cache(cnet)
    cache_n = ckernel.make_refresh_cache(nnue_arrays)
    scratch = ckernel.make_cscratch(l1)
    acc_ref, p_ref = np.zeros(l1, np.int16), np.zeros(8, np.int32)
    acc_c, p_c = np.zeros(l1, np.int16), np.zeros(8, np.int32)
    acc_n, p_n = np.zeros(l1, np.int16), np.zeros(8, np.int32)
    for trial in range(200):
        board = np.zeros(64, np.int8)
        k = int(rng.integers(0, 31))
        sqs = rng.choice(64, size=k + 2, replace=False)
        board[sqs[0]], board[sqs[1]] = 6, 14
        board[sqs[2:]] = rng.choice(np.array([1, 2, 3, 4, 5, 9, 10, 11, 12, 13], np.int8), size=k)
        persp = int(rng.integers(0, 2))
        ksq = int(sqs[persp])
        refresh(nnue_arrays, board, persp, ksq, acc_ref, p_ref)
        ckernel.refresh_cached_c(kf, cnet, cache_c, board, persp, ksq, acc_c, p_c, scratch)
        ckernel.refresh_cached(nnue_arrays, cache_n, board, persp, ksq, acc_n, p_n, scratch)
        assert np.array_equal(acc_c, acc_ref) and np.array_equal(p_c, p_ref)
        assert np.array_equal(acc_n, acc_ref) and np.array_equal(p_n, p_ref)


@pytest.mark.parametrize("ft_shift", [0, 1])
def test_other_l1_widths_forward(kf, ft_shift):
    """forward_c equals the Numba forward for random nets of L1 = 128 and 3072 (the 17.1 widths)."""
    for l1 in (128, 3072):
        rng = np.random.default_rng(l1 + ft_shift)
        nf, nb, s = 96, 8, 8
        bias, w, pw = _net_like(rng, l1, nf=nf)
        w0 = rng.integers(-128, 128, size=(s, 16, l1)).astype(np.int8)
        w1 = rng.integers(-128, 128, size=(s, 32, 32)).astype(np.int8)
        params = np.zeros(3, np.int32)
        params[P_FT_SHIFT] = ft_shift
        arrays = NetArrays(ft_bias=bias, ft_weights=w, ft_psqt=pw,
                           b0=rng.integers(-3000, 3000, size=(s, 16)).astype(np.int32), w0=w0,
                           w0t=np.ascontiguousarray(w0.transpose(0, 2, 1)),
                           b1=rng.integers(-3000, 3000, size=(s, 32)).astype(np.int32), w1=w1,
                           b2=rng.integers(-3000, 3000, size=s).astype(np.int32),
                           w2=rng.integers(-128, 128, size=(s, 32)).astype(np.int8), params=params,
                           qscheme=no_scheme())
        cn = ckernel.make_cnet(arrays)
        assert cn.params[0] == ft_shift
        acc = rng.integers(-60, 200, size=(1, 2, l1)).astype(np.int16)
        acc[0, :, :8] = [-32768, 32767, 16383, 16384, -16385, 127, 128, 254]
        psq = rng.integers(-10**6, 10**6, size=(1, 2, nb)).astype(np.int32)
        scratch = make_scratch(l1)
        cscratch = ckernel.make_cscratch(l1)
        for side in (0, 1):
            for b in range(s):
                assert forward(arrays, acc, psq, 0, side, b, scratch) == \
                    ckernel.forward_c(kf, cn, acc, psq, 0, side, b, cscratch)


def test_sf17_reference_positions(kf, nnue17_pair):
    """Both synthetic 17.1 nets (L1 3072 and 128, FT shift 1): every bucket equals the 17.1 reference data."""
    with open(require(NNUE_DATA / "sf17.1_reference.tsv")) as fh:
        rows = list(csv.DictReader(fh, delimiter="\t"))[:N_REF_ROWS]
    bad = []
    for name, net in (("big", nnue17_pair.big), ("small", nnue17_pair.small)):
        arrays = net.arrays()
        cn = ckernel.make_cnet(arrays)
        assert cn.params[0] == 1
        l1 = arrays.ft_bias.shape[0]
        acc, psqt, computed, _, _ = make_stack(l1, 1)
        cscratch = ckernel.make_cscratch(l1)
        p_c, q_c = np.zeros(8, np.int64), np.zeros(8, np.int64)
        for r in rows:
            pos = parse_fen(r["fen"])
            board = np.ascontiguousarray(pos.board, dtype=np.int8)
            _refresh_both_c(arrays, kf, cn, acc, psqt, computed, board, cscratch)
            ckernel.forward_all_c(kf, cn, acc, psqt, 0, pos.side, p_c, q_c, cscratch)
            want_p = [int(r[f"{name}_psqt_{k}"]) for k in range(8)]
            want_q = [int(r[f"{name}_positional_{k}"]) for k in range(8)]
            if list(p_c) != want_p or list(q_c) != want_q:
                bad.append((name, r["fen"], want_q, list(q_c)))
    assert not bad, f"{len(bad)} rows differ, first: {bad[:2]}"


# ------------------------------------------------------------------------------------------------------
# Numba cache: compiled code that receives the kernel functions as arguments is cached
# ------------------------------------------------------------------------------------------------------

_CACHE_PROBE = """
import numpy as np
from quantfish.nnue.kernel import loader as ckernel
from quantfish.nnue.io import load_net
from quantfish.nnue.loader import resolve_main_path
from quantfish.nnue.stack import refresh_ply
k = ckernel.load_kernel("c", require=True)
arrays = load_net(resolve_main_path()).arrays()
cnet = ckernel.make_cnet(arrays)
acc = np.zeros((1, 2, cnet.ft_bias.shape[0]), np.int16)
psqt = np.zeros((1, 2, 8), np.int32)
computed = np.zeros((1, 2), np.uint8)
board = np.zeros(64, np.int8); board[4] = 6; board[60] = 14; board[12] = 1
scratch = ckernel.make_cscratch(acc.shape[2])
refresh_ply(arrays, acc, psqt, computed, 0, board, scratch, k.funcs, cnet)
print("RESULT", ckernel.forward_c(k.funcs, cnet, acc, psqt, 0, 0, 0, scratch))
"""


def test_numba_cache_is_used_by_a_second_process(kernel_lib, nnue_net):
    env = dict(os.environ, NUMBA_DEBUG_CACHE="1", PYTHONPATH=str(REPO))
    runs = [subprocess.run([sys.executable, "-c", _CACHE_PROBE], capture_output=True, text=True, cwd=REPO,
                           env=env, timeout=600) for _ in range(2)]
    for r in runs:
        assert r.returncode == 0, r.stderr[-2000:]
    assert runs[0].stdout.split("RESULT")[1] == runs[1].stdout.split("RESULT")[1]
    second = runs[1].stdout
    # The functions called from Python are loaded from the cache (their callees are linked into them).
    for fn in ("loader.forward_c", "stack.refresh_ply"):
        assert any("data loaded from" in ln and f"{fn}-" in ln for ln in second.splitlines()), \
            f"{fn} not loaded from the cache:\n{second}"
    saved = [ln for ln in second.splitlines() if "data saved" in ln]
    assert not saved, f"the second process compiled again: {saved[:3]}"
