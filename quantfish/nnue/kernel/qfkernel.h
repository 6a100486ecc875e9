/*
 * Quantfish NNUE kernel: the exported API. Every function exists once per variant, named
 * qf_<variant>_<name> with <variant> one of scalar, avx2, avx512, avx512vnni (QF(name) below expands to the
 * variant being compiled; qfkernel.c includes this header so that the compiler checks the definitions).
 * quantfish/nnue/kernel/loader.py holds the matching ctypes signatures (_SIGNATURES).
 *
 * Conventions: counts and sizes are int64_t; pointers need no alignment (64 bytes is fastest); l1 is the
 * accumulator width per perspective (a multiple of 8; 128, 1024 and 3072 in real nets); nb the number of
 * PSQT buckets (8). Feature indices are int32 rows of the FT tensors: w[f * l1 + j], pw[f * nb + k].
 */
#ifndef QFKERNEL_H
#define QFKERNEL_H

#include <stdint.h>

#ifndef QF
#  error "define QF(name) (the variant prefix) before including qfkernel.h"
#endif
#ifndef QF_API
#  define QF_API
#endif

/* acc[j] = int16(bias[j] + sum_f w[f][j]) and psqt[k] = int32(sum_f pw[f][k]) over feats[0..n). */
QF_API void QF(acc_refresh)(const int16_t *bias, const int16_t *w, const int32_t *pw, int64_t l1, int64_t nb,
                            const int32_t *feats, int64_t n, int16_t *acc, int32_t *psqt);

/* dst = src - sum w[rem] + sum w[add] (int16 wrapping), pdst likewise (int32 wrapping). src may be dst. */
QF_API void QF(acc_update)(const int16_t *w, const int32_t *pw, int64_t l1, int64_t nb,
                           const int16_t *src, const int32_t *psrc, int16_t *dst, int32_t *pdst,
                           const int32_t *rem, int64_t nr, const int32_t *add, int64_t na);

/* Refresh-cache step: entry += (add - rem) in place, then out = entry (one pass over the accumulator). */
QF_API void QF(acc_update_copy)(const int16_t *w, const int32_t *pw, int64_t l1, int64_t nb,
                                int16_t *entry, int32_t *pentry, int16_t *out, int32_t *pout,
                                const int32_t *rem, int64_t nr, const int32_t *add, int64_t na);

/* x[l1] (uint8, 0..126): side to move's half first. ft_shift s in {0, 1}: a = int16(acc << s),
   x[j] = clamp(a[j], 0, 127 << s) * clamp(a[j + l1/2], 0, 127 << s) >> (7 + 2s). */
QF_API void QF(transform)(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, int64_t ft_shift,
                          uint8_t *x);

/* transform, and list the non-zero 4-byte groups of x into nnz (room for l1/4 + 16); returns their number. */
QF_API int64_t QF(transform_nnz)(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, int64_t ft_shift,
                                 uint8_t *x, int32_t *nnz);

/* Indices g (increasing) with x[4g..4g+3] not all zero; nnz needs room for l1/4 + 16. Returns the count. */
QF_API int64_t QF(find_nnz)(const uint8_t *x, int64_t l1, int32_t *nnz);

/* out[o] = b0[o] + sum over the n listed groups g, k < 4 of w0g[g][o][k] * x[4g + k]   (o < 16, int32
   wrapping). w0g is one layer stack's fc_0 weights as [l1/4][16][4]. The avx2 and avx512 variants need
   x[i] <= 127 (true for transform outputs); scalar and avx512vnni are exact for any byte. */
QF_API void QF(fc0)(const int8_t *w0g, const int32_t *b0, const uint8_t *x, const int32_t *nnz, int64_t n,
                    int32_t *out);

/* Positional output from fc_0's 16 outputs: SqrClippedReLU / ClippedReLU of outputs 0..14, fc_1 (w1g is
   [8][32][4]: w1g[g][o][k] = w1[o][4g + k]), ClippedReLU, fc_2, plus tdiv(wrap32(fc0[15] * 9600), 8128).
   Exact for every int32 input. */
QF_API int64_t QF(head)(const int32_t *fc0, const int8_t *w1g, const int32_t *b1, const int8_t *w2, int64_t b2);

/* transform_nnz + fc0 + head for one layer stack; x: l1 bytes, nnz: l1/4 + 16 entries, fc0_out: 16 int32. */
QF_API int64_t QF(forward)(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, int64_t ft_shift,
                           const int8_t *w0g, const int32_t *b0, const int8_t *w1g, const int32_t *b1,
                           const int8_t *w2, int64_t b2, uint8_t *x, int32_t *nnz, int32_t *fc0_out);

/* forward for a Quantfish-format net: the same layers with the requantisations and clamps of its scheme
   record, qs = one stack's packed rows (int64[QF_S_* sites][QF_SCHEME_ROW], quantfish/nnue/requant.py). Exact for
   activations up to 255: without VNNI, fc_0 widens its weights to int16 (vpmaddwd) instead of using
   vpmaddubsw for the 4-input groups whose input has a byte above 127 and whose weights could saturate
   vpmaddubsw with it, as fc0_sat marks them (bit g % 8 of byte g / 8 for group g, (l1 + 31) / 32 bytes;
   ckernel.fc0_saturating_groups; NULL: every group), and fc_1 splits bytes above 127 into two exact halves.
   Returns positional; fc0_out is left holding fc_0's outputs. x: l1 bytes, nnz: l1/4 + 16 entries. w1g is
   fc_1's weights as in head. */
QF_API int64_t QF(forward_scheme)(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, const int64_t *qs,
                                  const int8_t *w0g, const uint8_t *fc0_sat, const int32_t *b0, const int8_t *w1g,
                                  const int32_t *b1, const int8_t *w2, int64_t b2, uint8_t *x, int32_t *nnz,
                                  int32_t *fc0_out);

/* The search's evaluation at ply: for each perspective not yet computed at ply, walk back to the nearest
   computed ply and apply the move records forward (ply by ply, marking each computed), or, when the
   perspective's king moved on the way or nothing is computed, refresh ply from board through the refresh
   cache; then forward for the side to move and layer stack bucket. cx is an evaluation context (int64
   [QF_CX_SIZE]: addresses and sizes, architecture.EVAL_CONTEXT_FIELDS, then cx[QF_CX_PLAN_SLOTS] slots of
   QF_CX_PLAN_WORDS where a Quantfish-format net's plan per layer stack is kept: written here, so a context
   serves one thread), board the mailbox at ply. Returns (psqt << 32) | (uint32)positional, psqt = (psqt[us] -
   psqt[them]) / 2 truncated (a Quantfish-format net: its record's PSQT requantisation). */
QF_API int64_t QF(evaluate)(int64_t *cx, int64_t ply, const int8_t *board, int64_t ksq_white,
                            int64_t ksq_black, int64_t side, int64_t bucket);

/* Variant-independent (defined once, in the scalar unit). */
#define QF_CPU_AVX2 1        /* AVX2, FMA, BMI2, POPCNT */
#define QF_CPU_AVX512 2      /* AVX-512 F, BW, VL, DQ (and the OS saves the state) */
#define QF_CPU_AVX512VNNI 4  /* AVX-512 VNNI */
QF_API int64_t qf_cpu_features(void);
QF_API const char *qf_build_id(void);
/* The constants of qfarch.h the library was compiled with: at most n into out; returns their number. */
QF_API int64_t qf_arch(int64_t *out, int64_t n);

#endif
