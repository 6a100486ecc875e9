/*
 * Quantfish NNUE kernel: the integer hot loops of HalfKAv2_hm nets (docs/nnue-sf15.1.md, nnue-sf17.1.md).
 *
 * This one file is compiled several times, once per instruction set, with QF_VARIANT_* defined:
 *   QF_VARIANT_SCALAR      plain C (the compiler may auto-vectorise with the baseline ISA)   qf_scalar_*
 *   QF_VARIANT_AVX2        AVX2 intrinsics                                                   qf_avx2_*
 *   QF_VARIANT_AVX512      AVX-512 F/BW/VL                                                   qf_avx512_*
 *   QF_VARIANT_AVX512VNNI  AVX-512 F/BW/VL + VNNI (vpdpbusd)                                 qf_avx512vnni_*
 * The scalar translation unit also defines the variant-independent entry points (CPU detection, build id).
 * The SIMD routines are written once, over the vec_* helpers ("Vector helpers" below), which are defined for
 * 512-bit registers in the AVX-512 variants and for 256-bit ones in AVX2; VNNI changes only vec_dot4. The
 * scalar variant keeps plain C loops of its own (the reference).
 * The API is declared in qfkernel.h. Python (quantfish/nnue/kernel/loader.py) picks one variant at run time.
 * There is no Python.h: every function works on
 * raw pointers and int64 counts, so it can be called through ctypes and from Numba-compiled code.
 *
 * Every function gives exactly the integers of the Numba path (quantfish/nnue/layers.py,
 * quantfish/nnue/accumulator.py):
 *   - accumulators: int16 wrapping adds of FT weight rows, int32 wrapping adds of PSQT rows;
 *   - transform with s = ft_shift (0 for 15.1 nets, 1 for 17.1 nets, whose FT Stockfish doubles at load):
 *     a = int16(acc << s) (wrapping), x = (clamp(a[j], 0, 127 << s) * clamp(a[j + l1/2], 0, 127 << s))
 *     >> (7 + 2s), side to move first;
 *   - fc_0: int32 wrapping sums (like the Numba int32 output array);
 *   - head: SqrClippedReLU / ClippedReLU, fc_1, ClippedReLU, fc_2 + tdiv(wrap32(fc0[15]*9600), 8128), exact
 *     for every int32 input (see head_impl).
 * Byte dot products: vpdpbusd is exact for all inputs. The non-VNNI paths use vpmaddubsw (u8*i8 + u8*i8 with
 * int16 saturation) followed by vpmaddwd with ones (exact int32); a vpmaddubsw lane cannot saturate when
 * every u8 input is <= 127, since |2 * 127 * 128| = 32512 < 32767. All u8 inputs of fc_0 come from the
 * transform (<= 126) and all of fc_1 / fc_2 from clipped activations (<= 127), so the result is exact;
 * this is the documented precondition of the standalone fc0 entry point (x[i] <= 127) for those variants.
 * Two int16 results are never added before widening (no saturating vpaddsw).
 *
 * Buffers: nothing needs to be aligned (unaligned loads everywhere); 64-byte alignment is faster. The nnz
 * list must have room for l1/4 + 16 entries (SIMD code stores whole vectors past the last index).
 * Layouts prepared once by quantfish/nnue/kernel/loader.py (make_cnet):
 *   w0g  int8 [l1/4][16][4]  fc_0 weights of one stack: w0g[g][o][k] = w0[o][4g+k]
 *   w1g  int8 [8][32][4]     fc_1 weights of one stack: w1g[g][o][k] = w1[o][4g+k]
 *
 * The widths, shifts and scales (16, 32, 6, 19, 127, 9600 / 8128, ...) are not stated here: they come from
 * qfarch.h, which quantfish/nnue/kernel/build.py writes from quantfish/nnue/architecture.py before compiling.
 * The SIMD code is
 * written for the present widths; the checks after the #include refuse to compile for others.
 *
 * Original code written for Quantfish.
 */
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(QF_VARIANT_AVX512VNNI)
#  define QF(name) qf_avx512vnni_##name
#  define QF_USE_AVX512 1
#  define QF_USE_VNNI 1
#elif defined(QF_VARIANT_AVX512)
#  define QF(name) qf_avx512_##name
#  define QF_USE_AVX512 1
#elif defined(QF_VARIANT_AVX2)
#  define QF(name) qf_avx2_##name
#  define QF_USE_AVX2 1
#else
#  define QF(name) qf_scalar_##name
#  define QF_SCALAR 1
#endif

#if defined(QF_USE_AVX512) || defined(QF_USE_AVX2)
#  include <immintrin.h>
#endif

#define QF_API __attribute__((visibility("default")))
#define QF_INLINE static inline __attribute__((always_inline))

#include "qfkernel.h"

#ifndef QF_BUILD_ID
#  define QF_BUILD_ID "unknown"
#endif

#include "qfarch.h"   /* generated from quantfish/nnue/architecture.py by quantfish/nnue/kernel/build.py */
#ifndef QF_ARCH_VALUES
#  error "qfarch.h is incomplete: rebuild the kernel with python -m nnue.build_kernel"
#endif

/* Layout assumptions of the SIMD code. fc_0: the int32 outputs fill one AVX-512 register (two AVX2 ones),
   and one group of 4 inputs of all outputs is one 64-byte load of w0g. head: fc_1's inputs are assembled as
   two 16-byte halves (15 squared, 15 clipped, 2 zero bytes), its int32 outputs fill two AVX-512 registers, and
   fc_2 reads them as one 32-byte vector. */
#if QF_FC0_OUT != 16 || QF_FC1_IN != 32 || QF_FC1_IN != 2 * (QF_FC0_OUT - 1) + 2 || QF_FC1_OUT != 32 \
    || QF_FC2_IN != QF_FC1_OUT
#  error "the SIMD layer code is written for fc_0 16 -> fc_1 30 (padded 32) -> 32 -> fc_2: adapt it first"
#endif
/* vpmaddubsw (u8 * i8 pairs summed in int16) is exact only when every u8 input is <= 127 (see above). */
#if QF_ACT_MAX > 127 || ((QF_FT_ACT_MAX * QF_FT_ACT_MAX) >> QF_FT_PRODUCT_SHIFT) > 127
#  error "layer inputs above 127 would make the non-VNNI dot products saturate"
#endif
/* The transform multiplies two clamped FT values in an unsigned 16-bit lane. */
#if (QF_FT_ACT_MAX << QF_MAX_FT_SHIFT) * (QF_FT_ACT_MAX << QF_MAX_FT_SHIFT) > 65535
#  error "the FT product no longer fits 16 bits"
#endif

#define W0G_GROUP (4 * QF_FC0_OUT)   /* bytes of w0g per group of 4 inputs */
#define W1G_GROUP (4 * QF_FC1_OUT)   /* bytes of w1g per group of 4 inputs */
#define BIAS1_CLAMP (1 << 30)

QF_INLINE int32_t load_i32(const void *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

QF_INLINE int64_t clamp64(int64_t v, int64_t lo, int64_t hi)
{
    return v < lo ? lo : (v > hi ? hi : v);
}

/* fc_2's skip connection: tdiv(wrap32(fc0_15 * 9600), 8128); C division truncates toward zero. */
QF_INLINE int64_t forward_skip(int32_t fc0_15)
{
    int32_t p = (int32_t)((uint32_t)fc0_15 * (uint32_t)QF_SKIP_MUL);
    return (int64_t)(p / QF_SKIP_DIV);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Vector helpers: each operation defined once per register width (vec_t is __m512i in the AVX-512         */
/* variants, __m256i in the AVX2 one), so that every SIMD routine below is written once for both. Lanes:    */
/* VEC_I16 / VEC_I32 / VEC_I64 of 16, 32, 64 bits; vmask_t holds a bit per 32-bit lane.                    */
/* ------------------------------------------------------------------------------------------------------ */

#if defined(QF_USE_AVX512) || defined(QF_USE_AVX2)
#  define QF_SIMD 1
#endif

#if defined(QF_USE_AVX512)
typedef __m512i vec_t;
typedef unsigned vmask_t;
#  define VEC_BYTES 64
#  define VMASK_ALL 0xFFFFu
#  define TILE_REGS 16     /* accumulator registers of a tile: half of the 32 zmm */

QF_INLINE vec_t vec_load(const void *p) { return _mm512_loadu_si512(p); }
QF_INLINE void vec_store(void *p, vec_t v) { _mm512_storeu_si512(p, v); }
QF_INLINE vec_t vec_zero(void) { return _mm512_setzero_si512(); }
QF_INLINE vec_t vec_set1_8(int8_t c) { return _mm512_set1_epi8((char)c); }
QF_INLINE vec_t vec_set1_16(int16_t c) { return _mm512_set1_epi16(c); }
QF_INLINE vec_t vec_set1_32(int32_t c) { return _mm512_set1_epi32(c); }
QF_INLINE vec_t vec_set1_64(int64_t c) { return _mm512_set1_epi64(c); }
QF_INLINE vec_t vec_and(vec_t a, vec_t b) { return _mm512_and_si512(a, b); }
QF_INLINE vec_t vec_or(vec_t a, vec_t b) { return _mm512_or_si512(a, b); }

QF_INLINE vec_t vec_add16(vec_t a, vec_t b) { return _mm512_add_epi16(a, b); }
QF_INLINE vec_t vec_sub16(vec_t a, vec_t b) { return _mm512_sub_epi16(a, b); }
QF_INLINE vec_t vec_min16(vec_t a, vec_t b) { return _mm512_min_epi16(a, b); }
QF_INLINE vec_t vec_max16(vec_t a, vec_t b) { return _mm512_max_epi16(a, b); }
QF_INLINE vec_t vec_mullo16(vec_t a, vec_t b) { return _mm512_mullo_epi16(a, b); }
QF_INLINE vec_t vec_mulhi_u16(vec_t a, vec_t b) { return _mm512_mulhi_epu16(a, b); }
QF_INLINE vec_t vec_avg_u16(vec_t a, vec_t b) { return _mm512_avg_epu16(a, b); }
QF_INLINE vec_t vec_sll16(vec_t a, __m128i n) { return _mm512_sll_epi16(a, n); }
QF_INLINE vec_t vec_srl16(vec_t a, __m128i n) { return _mm512_srl_epi16(a, n); }
#  define vec_srli16(a, n) _mm512_srli_epi16((a), (n))

QF_INLINE vec_t vec_add32(vec_t a, vec_t b) { return _mm512_add_epi32(a, b); }
QF_INLINE vec_t vec_sub32(vec_t a, vec_t b) { return _mm512_sub_epi32(a, b); }
QF_INLINE vec_t vec_min32(vec_t a, vec_t b) { return _mm512_min_epi32(a, b); }
QF_INLINE vec_t vec_max32(vec_t a, vec_t b) { return _mm512_max_epi32(a, b); }
QF_INLINE vec_t vec_abs32(vec_t a) { return _mm512_abs_epi32(a); }
QF_INLINE vec_t vec_mullo32(vec_t a, vec_t b) { return _mm512_mullo_epi32(a, b); }
QF_INLINE vec_t vec_srl32(vec_t a, __m128i n) { return _mm512_srl_epi32(a, n); }
QF_INLINE vec_t vec_sra32(vec_t a, __m128i n) { return _mm512_sra_epi32(a, n); }
#  define vec_srli32(a, n) _mm512_srli_epi32((a), (n))
#  define vec_srai32(a, n) _mm512_srai_epi32((a), (n))

QF_INLINE vec_t vec_add64(vec_t a, vec_t b) { return _mm512_add_epi64(a, b); }
QF_INLINE vec_t vec_mul_u32(vec_t a, vec_t b) { return _mm512_mul_epu32(a, b); }   /* even 32-bit lanes -> 64 */
QF_INLINE vec_t vec_srl64(vec_t a, __m128i n) { return _mm512_srl_epi64(a, n); }
#  define vec_srli64(a, n) _mm512_srli_epi64((a), (n))
#  define vec_slli64(a, n) _mm512_slli_epi64((a), (n))
/* min of 64-bit lanes that hold values in 0..2^63-1 */
QF_INLINE vec_t vec_min64(vec_t a, vec_t b) { return _mm512_min_epu64(a, b); }

QF_INLINE vec_t vec_min_u8(vec_t a, vec_t b) { return _mm512_min_epu8(a, b); }
QF_INLINE vec_t vec_madd16(vec_t a, vec_t b) { return _mm512_madd_epi16(a, b); }
QF_INLINE vec_t vec_maddubs(vec_t u8, vec_t i8) { return _mm512_maddubs_epi16(u8, i8); }
QF_INLINE vec_t vec_unpacklo16(vec_t a, vec_t b) { return _mm512_unpacklo_epi16(a, b); }
QF_INLINE vec_t vec_unpackhi16(vec_t a, vec_t b) { return _mm512_unpackhi_epi16(a, b); }
/* within each 128-bit lane, as the instruction: callers pack unpacklo/unpackhi pairs, which keeps the order */
QF_INLINE vec_t vec_packus32(vec_t a, vec_t b) { return _mm512_packus_epi32(a, b); }

/* int16 -> uint8 (saturating), the bytes of a then those of b: packus interleaves the 128-bit lanes of a and
   b, the qword permutation restores their order. */
QF_INLINE vec_t vec_packus16_ordered(vec_t a, vec_t b)
{
    return _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 2, 4, 6, 1, 3, 5, 7), _mm512_packus_epi16(a, b));
}

/* a[i] == b[i] ? t[i] : f[i] in 16-bit lanes */
QF_INLINE vec_t vec_sel_eq16(vec_t a, vec_t b, vec_t t, vec_t f)
{
    return _mm512_mask_mov_epi16(f, _mm512_cmpeq_epi16_mask(a, b), t);
}

/* the even 32-bit lanes of e with the odd ones of o */
QF_INLINE vec_t vec_blend_odd32(vec_t e, vec_t o) { return _mm512_mask_blend_epi32((__mmask16)0xAAAA, e, o); }

/* VEC_I32 int64 values known to fit int32, as int32 lanes */
QF_INLINE vec_t vec_narrow64(const int64_t *p)
{
    return _mm512_inserti64x4(_mm512_castsi256_si512(_mm512_cvtepi64_epi32(_mm512_loadu_si512(p))),
                              _mm512_cvtepi64_epi32(_mm512_loadu_si512(p + 8)), 1);
}

/* VEC_I32 int8 values, sign-extended to int32 lanes */
QF_INLINE vec_t vec_load_i8_i32(const int8_t *p) { return _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)); }

QF_INLINE int32_t vec_hsum32(vec_t v) { return _mm512_reduce_add_epi32(v); }

/* bit i: 32-bit lane i of v is not zero; of v & m is not zero */
QF_INLINE vmask_t vec_nonzero32(vec_t v) { return _mm512_test_epi32_mask(v, v); }
QF_INLINE vmask_t vec_test32(vec_t v, vec_t m) { return _mm512_test_epi32_mask(v, m); }

/* out[0..k) = base + i for the k set bits i of m, increasing (a whole vector is stored); returns k. */
QF_INLINE int64_t vec_write_indices(vmask_t m, int32_t base, int32_t *out)
{
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    _mm512_storeu_si512(out, _mm512_maskz_compress_epi32((__mmask16)m, _mm512_add_epi32(_mm512_set1_epi32(base), iota)));
    return __builtin_popcount(m);
}

/* The VEC_I32 bits of a bitmap (bit g % 8 of byte g / 8) from byte i on (i even). */
QF_INLINE vmask_t vec_map_bits(const uint8_t *map, int64_t i) { return map[i] | (vmask_t)map[i + 1] << 8; }

/* Sixteen int32 lanes of a and sixteen of b (FC0_REGS registers each, every value in 0..255) as 16 bytes each. */
QF_INLINE void vec_bytes16x2(const vec_t *a, const vec_t *b, __m128i *ab, __m128i *bb)
{
    *ab = _mm512_cvtepi32_epi8(a[0]);
    *bb = _mm512_cvtepi32_epi8(b[0]);
}

#  if defined(QF_USE_VNNI)
/* acc + the sums of four u8 * i8 products per 32-bit lane (vpdpbusd: exact for any byte) */
QF_INLINE vec_t vec_dot4(vec_t acc, vec_t x, vec_t w) { return _mm512_dpbusd_epi32(acc, x, w); }
#  endif

#elif defined(QF_USE_AVX2)
typedef __m256i vec_t;
typedef unsigned vmask_t;
#  define VEC_BYTES 32
#  define VMASK_ALL 0xFFu
#  define TILE_REGS 8      /* accumulator registers of a tile: half of the 16 ymm */

QF_INLINE vec_t vec_load(const void *p) { return _mm256_loadu_si256((const __m256i *)p); }
QF_INLINE void vec_store(void *p, vec_t v) { _mm256_storeu_si256((__m256i *)p, v); }
QF_INLINE vec_t vec_zero(void) { return _mm256_setzero_si256(); }
QF_INLINE vec_t vec_set1_8(int8_t c) { return _mm256_set1_epi8((char)c); }
QF_INLINE vec_t vec_set1_16(int16_t c) { return _mm256_set1_epi16(c); }
QF_INLINE vec_t vec_set1_32(int32_t c) { return _mm256_set1_epi32(c); }
QF_INLINE vec_t vec_set1_64(int64_t c) { return _mm256_set1_epi64x(c); }
QF_INLINE vec_t vec_and(vec_t a, vec_t b) { return _mm256_and_si256(a, b); }
QF_INLINE vec_t vec_or(vec_t a, vec_t b) { return _mm256_or_si256(a, b); }

QF_INLINE vec_t vec_add16(vec_t a, vec_t b) { return _mm256_add_epi16(a, b); }
QF_INLINE vec_t vec_sub16(vec_t a, vec_t b) { return _mm256_sub_epi16(a, b); }
QF_INLINE vec_t vec_min16(vec_t a, vec_t b) { return _mm256_min_epi16(a, b); }
QF_INLINE vec_t vec_max16(vec_t a, vec_t b) { return _mm256_max_epi16(a, b); }
QF_INLINE vec_t vec_mullo16(vec_t a, vec_t b) { return _mm256_mullo_epi16(a, b); }
QF_INLINE vec_t vec_mulhi_u16(vec_t a, vec_t b) { return _mm256_mulhi_epu16(a, b); }
QF_INLINE vec_t vec_avg_u16(vec_t a, vec_t b) { return _mm256_avg_epu16(a, b); }
QF_INLINE vec_t vec_sll16(vec_t a, __m128i n) { return _mm256_sll_epi16(a, n); }
QF_INLINE vec_t vec_srl16(vec_t a, __m128i n) { return _mm256_srl_epi16(a, n); }
#  define vec_srli16(a, n) _mm256_srli_epi16((a), (n))

QF_INLINE vec_t vec_add32(vec_t a, vec_t b) { return _mm256_add_epi32(a, b); }
QF_INLINE vec_t vec_sub32(vec_t a, vec_t b) { return _mm256_sub_epi32(a, b); }
QF_INLINE vec_t vec_min32(vec_t a, vec_t b) { return _mm256_min_epi32(a, b); }
QF_INLINE vec_t vec_max32(vec_t a, vec_t b) { return _mm256_max_epi32(a, b); }
QF_INLINE vec_t vec_abs32(vec_t a) { return _mm256_abs_epi32(a); }
QF_INLINE vec_t vec_mullo32(vec_t a, vec_t b) { return _mm256_mullo_epi32(a, b); }
QF_INLINE vec_t vec_srl32(vec_t a, __m128i n) { return _mm256_srl_epi32(a, n); }
QF_INLINE vec_t vec_sra32(vec_t a, __m128i n) { return _mm256_sra_epi32(a, n); }
#  define vec_srli32(a, n) _mm256_srli_epi32((a), (n))
#  define vec_srai32(a, n) _mm256_srai_epi32((a), (n))

QF_INLINE vec_t vec_add64(vec_t a, vec_t b) { return _mm256_add_epi64(a, b); }
QF_INLINE vec_t vec_mul_u32(vec_t a, vec_t b) { return _mm256_mul_epu32(a, b); }
QF_INLINE vec_t vec_srl64(vec_t a, __m128i n) { return _mm256_srl_epi64(a, n); }
#  define vec_srli64(a, n) _mm256_srli_epi64((a), (n))
#  define vec_slli64(a, n) _mm256_slli_epi64((a), (n))
/* no unsigned 64-bit min in AVX2: for values below 2^63 the signed compare orders them */
QF_INLINE vec_t vec_min64(vec_t a, vec_t b) { return _mm256_blendv_epi8(a, b, _mm256_cmpgt_epi64(a, b)); }

QF_INLINE vec_t vec_min_u8(vec_t a, vec_t b) { return _mm256_min_epu8(a, b); }
QF_INLINE vec_t vec_madd16(vec_t a, vec_t b) { return _mm256_madd_epi16(a, b); }
QF_INLINE vec_t vec_maddubs(vec_t u8, vec_t i8) { return _mm256_maddubs_epi16(u8, i8); }
QF_INLINE vec_t vec_unpacklo16(vec_t a, vec_t b) { return _mm256_unpacklo_epi16(a, b); }
QF_INLINE vec_t vec_unpackhi16(vec_t a, vec_t b) { return _mm256_unpackhi_epi16(a, b); }
QF_INLINE vec_t vec_packus32(vec_t a, vec_t b) { return _mm256_packus_epi32(a, b); }

QF_INLINE vec_t vec_packus16_ordered(vec_t a, vec_t b)
{
    return _mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xD8);
}

QF_INLINE vec_t vec_sel_eq16(vec_t a, vec_t b, vec_t t, vec_t f)
{
    return _mm256_blendv_epi8(f, t, _mm256_cmpeq_epi16(a, b));
}

QF_INLINE vec_t vec_blend_odd32(vec_t e, vec_t o) { return _mm256_blend_epi32(e, o, 0xAA); }

QF_INLINE vec_t vec_narrow64(const int64_t *p)
{
    const __m256i idx = _mm256_setr_epi32(0, 2, 4, 6, 0, 2, 4, 6);
    const __m256i a = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)p), idx);
    const __m256i b = _mm256_permutevar8x32_epi32(_mm256_loadu_si256((const __m256i *)(p + 4)), idx);
    return _mm256_permute2x128_si256(a, b, 0x20);
}

QF_INLINE vec_t vec_load_i8_i32(const int8_t *p) { return _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)); }

QF_INLINE int32_t vec_hsum32(vec_t v)
{
    __m128i r = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0x4E));
    r = _mm_add_epi32(r, _mm_shuffle_epi32(r, 0xB1));
    return _mm_cvtsi128_si32(r);
}

QF_INLINE vmask_t vec_nonzero32(vec_t v)
{
    const unsigned zero = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(v, _mm256_setzero_si256())));
    return ~zero & VMASK_ALL;
}
QF_INLINE vmask_t vec_test32(vec_t v, vec_t m) { return vec_nonzero32(_mm256_and_si256(v, m)); }

/* nnz_lut[m] = positions of the set bits of m (8-bit mask), in increasing order: AVX2 has no compress. */
static uint8_t nnz_lut[256][8];
__attribute__((constructor)) static void init_nnz_lut(void)
{
    for (int m = 0; m < 256; m++) {
        int n = 0;
        for (int b = 0; b < 8; b++)
            if (m & (1 << b))
                nnz_lut[m][n++] = (uint8_t)b;
        for (; n < 8; n++)
            nnz_lut[m][n] = 0;
    }
}

QF_INLINE int64_t vec_write_indices(vmask_t m, int32_t base, int32_t *out)
{
    const __m256i off = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)nnz_lut[m]));
    _mm256_storeu_si256((__m256i *)out, _mm256_add_epi32(off, _mm256_set1_epi32(base)));
    return __builtin_popcount(m);
}

QF_INLINE vmask_t vec_map_bits(const uint8_t *map, int64_t i) { return map[i]; }

/* Two registers a sixteen: int32 -> int16 -> uint8 with the lane order restored after each pack. */
QF_INLINE void vec_bytes16x2(const vec_t *a, const vec_t *b, __m128i *ab, __m128i *bb)
{
    const __m256i a16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(a[0], a[1]), 0xD8);
    const __m256i b16 = _mm256_permute4x64_epi64(_mm256_packs_epi32(b[0], b[1]), 0xD8);
    const __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(a16, b16), 0xD8);
    *ab = _mm256_castsi256_si128(bytes);
    *bb = _mm256_extracti128_si256(bytes, 1);
}
#endif

#if defined(QF_SIMD)
#  define VEC_I16 (VEC_BYTES / 2)
#  define VEC_I32 (VEC_BYTES / 4)
#  define VEC_I64 (VEC_BYTES / 8)
#  define FC0_REGS (QF_FC0_OUT / VEC_I32)   /* registers of fc_0's outputs */
#  define FC1_REGS (QF_FC1_OUT / VEC_I32)   /* registers of fc_1's outputs */
_Static_assert(QF_FC0_OUT % VEC_I32 == 0 && QF_FC1_OUT % VEC_I32 == 0 && W0G_GROUP == FC0_REGS * VEC_BYTES
               && W1G_GROUP == FC1_REGS * VEC_BYTES, "fc_0 / fc_1 outputs must fill whole registers");

#  if !defined(QF_USE_VNNI)
/* vpmaddubsw then vpmaddwd with ones: exact while every u8 input is <= 127 (see the top of the file) */
QF_INLINE vec_t vec_dot4(vec_t acc, vec_t x, vec_t w)
{
    return vec_add32(acc, vec_madd16(vec_maddubs(x, w), vec_set1_16(1)));
}
#  endif

/* 256-bit loads and stores of the parts both SIMD variants do in eight lanes (PSQT, fc0_wide, fc1_scheme) */
#  define vload256(p) _mm256_loadu_si256((const __m256i *)(p))
#  define vstore256(p, v) _mm256_storeu_si256((__m256i *)(p), (v))
#endif

/* fc_1's 32 input bytes from 16 bytes a (first activation, rows 0..15) and 16 bytes b (second): a[0..14],
   b[0..14], 0, 0, in one aligned 32-byte buffer whose whole stores fc_1's 4-byte loads are forwarded from. */
#if defined(QF_SIMD)
QF_INLINE void store_fc1_input(__m128i a, __m128i b, uint8_t *in)
{
    const __m128i keep15 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0);
    const __m128i keep14 = _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 0);
    _mm_store_si128((__m128i *)in, _mm_or_si128(_mm_and_si128(a, keep15), _mm_slli_si128(b, 15)));
    _mm_store_si128((__m128i *)(in + 16), _mm_and_si128(_mm_srli_si128(b, 1), keep14));
}
#endif

/* ------------------------------------------------------------------------------------------------------ */
/* Accumulator: dst = src - sum(w[rem]) + sum(w[add]); dst2 (optional) gets the same values.              */
/* src may alias dst or dst2: each tile is fully loaded before it is stored.                             */
/* ------------------------------------------------------------------------------------------------------ */

#if defined(QF_SIMD)
QF_INLINE void tile_update(const int nreg, const int16_t *w, int64_t l1, int64_t j0,
                           const int16_t *src, int16_t *dst, int16_t *dst2,
                           const int32_t *rem, int64_t nr, const int32_t *add, int64_t na)
{
    vec_t r[TILE_REGS];
#pragma GCC unroll 16
    for (int k = 0; k < nreg; k++)
        r[k] = vec_load(src + j0 + k * VEC_I16);
    for (int64_t i = 0; i < nr; i++) {
        const int16_t *row = w + (int64_t)rem[i] * l1 + j0;
#pragma GCC unroll 16
        for (int k = 0; k < nreg; k++)
            r[k] = vec_sub16(r[k], vec_load(row + k * VEC_I16));
    }
    for (int64_t i = 0; i < na; i++) {
        const int16_t *row = w + (int64_t)add[i] * l1 + j0;
#pragma GCC unroll 16
        for (int k = 0; k < nreg; k++)
            r[k] = vec_add16(r[k], vec_load(row + k * VEC_I16));
    }
#pragma GCC unroll 16
    for (int k = 0; k < nreg; k++)
        vec_store(dst + j0 + k * VEC_I16, r[k]);
    if (dst2) {
#pragma GCC unroll 16
        for (int k = 0; k < nreg; k++)
            vec_store(dst2 + j0 + k * VEC_I16, r[k]);
    }
}
#endif

QF_INLINE void acc_update_impl(const int16_t *w, const int32_t *pw, int64_t l1, int64_t nb,
                               const int16_t *src, const int32_t *psrc,
                               int16_t *dst, int32_t *pdst, int16_t *dst2, int32_t *pdst2,
                               const int32_t *rem, int64_t nr, const int32_t *add, int64_t na)
{
    int64_t j = 0;
#if defined(QF_SIMD)
    for (; j + TILE_REGS * VEC_I16 <= l1; j += TILE_REGS * VEC_I16)
        tile_update(TILE_REGS, w, l1, j, src, dst, dst2, rem, nr, add, na);
    for (; j + 4 * VEC_I16 <= l1; j += 4 * VEC_I16)
        tile_update(4, w, l1, j, src, dst, dst2, rem, nr, add, na);
    for (; j + VEC_I16 <= l1; j += VEC_I16)
        tile_update(1, w, l1, j, src, dst, dst2, rem, nr, add, na);
    for (; j < l1; j++) {
        uint16_t s = (uint16_t)src[j];
        for (int64_t i = 0; i < nr; i++)
            s = (uint16_t)(s - (uint16_t)w[(int64_t)rem[i] * l1 + j]);
        for (int64_t i = 0; i < na; i++)
            s = (uint16_t)(s + (uint16_t)w[(int64_t)add[i] * l1 + j]);
        dst[j] = (int16_t)s;
        if (dst2)
            dst2[j] = (int16_t)s;
    }
#else
    /* Scalar: row-wise passes over dst (the compiler vectorises these with the baseline ISA). */
    (void)j;
    if (dst != src)
        memmove(dst, src, (size_t)l1 * sizeof(int16_t));
    for (int64_t i = 0; i < nr; i++) {
        const int16_t *row = w + (int64_t)rem[i] * l1;
        for (int64_t k = 0; k < l1; k++)
            dst[k] = (int16_t)(uint16_t)((uint16_t)dst[k] - (uint16_t)row[k]);
    }
    for (int64_t i = 0; i < na; i++) {
        const int16_t *row = w + (int64_t)add[i] * l1;
        for (int64_t k = 0; k < l1; k++)
            dst[k] = (int16_t)(uint16_t)((uint16_t)dst[k] + (uint16_t)row[k]);
    }
    if (dst2)
        memcpy(dst2, dst, (size_t)l1 * sizeof(int16_t));
#endif
    int64_t k0 = 0;
#if defined(QF_SIMD)
    /* PSQT: 8 buckets a 256-bit register (the net's 8 in one); measured, the scalar loop below took about a
       tenth of an incremental update. */
    for (; k0 + 8 <= nb; k0 += 8) {
        __m256i s = psrc ? vload256(psrc + k0) : _mm256_setzero_si256();
        for (int64_t i = 0; i < nr; i++)
            s = _mm256_sub_epi32(s, vload256(pw + (int64_t)rem[i] * nb + k0));
        for (int64_t i = 0; i < na; i++)
            s = _mm256_add_epi32(s, vload256(pw + (int64_t)add[i] * nb + k0));
        vstore256(pdst + k0, s);
        if (pdst2)
            vstore256(pdst2 + k0, s);
    }
#endif
    for (int64_t k = k0; k < nb; k++) {
        uint32_t s = psrc ? (uint32_t)psrc[k] : 0u;
        for (int64_t i = 0; i < nr; i++)
            s -= (uint32_t)pw[(int64_t)rem[i] * nb + k];
        for (int64_t i = 0; i < na; i++)
            s += (uint32_t)pw[(int64_t)add[i] * nb + k];
        pdst[k] = (int32_t)s;
        if (pdst2)
            pdst2[k] = (int32_t)s;
    }
}

/* acc = bias + sum(w[feats]), psqt = sum(pw[feats]) (one perspective). */
QF_API void QF(acc_refresh)(const int16_t *bias, const int16_t *w, const int32_t *pw, int64_t l1, int64_t nb,
                            const int32_t *feats, int64_t n, int16_t *acc, int32_t *psqt)
{
    acc_update_impl(w, pw, l1, nb, bias, NULL, acc, psqt, NULL, NULL, NULL, 0, feats, n);
}

/* dst = src - sum(w[rem]) + sum(w[add]) and the same for PSQT; src may equal dst. */
QF_API void QF(acc_update)(const int16_t *w, const int32_t *pw, int64_t l1, int64_t nb,
                           const int16_t *src, const int32_t *psrc, int16_t *dst, int32_t *pdst,
                           const int32_t *rem, int64_t nr, const int32_t *add, int64_t na)
{
    acc_update_impl(w, pw, l1, nb, src, psrc, dst, pdst, NULL, NULL, rem, nr, add, na);
}

/* Refresh-cache step: entry += diff (in place), then out = entry, in one pass. */
QF_API void QF(acc_update_copy)(const int16_t *w, const int32_t *pw, int64_t l1, int64_t nb,
                                int16_t *entry, int32_t *pentry, int16_t *out, int32_t *pout,
                                const int32_t *rem, int64_t nr, const int32_t *add, int64_t na)
{
    acc_update_impl(w, pw, l1, nb, entry, pentry, entry, pentry, out, pout, rem, nr, add, na);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Feature transform and the list of non-zero 4-byte input groups                                        */
/* ------------------------------------------------------------------------------------------------------ */

/* Indices g of the non-zero groups x[4g..4g+3], for groups [g0, g1); returns the new count. */
QF_INLINE int64_t nnz_scalar(const uint8_t *x, int64_t g0, int64_t g1, int32_t *nnz, int64_t n)
{
    for (int64_t g = g0; g < g1; g++) {
        nnz[n] = (int32_t)g;
        n += load_i32(x + 4 * g) != 0;
    }
    return n;
}

QF_INLINE int64_t find_nnz_impl(const uint8_t *x, int64_t l1, int32_t *nnz)
{
    const int64_t groups = l1 / 4;
    int64_t g = 0, n = 0;
#if defined(QF_SIMD)
    for (; g + VEC_I32 <= groups; g += VEC_I32)
        n += vec_write_indices(vec_nonzero32(vec_load(x + 4 * g)), (int32_t)g, nnz + n);
#endif
    return nnz_scalar(x, g, groups, nnz, n);
}

QF_INLINE int64_t ft_value(int16_t a, int64_t s)
{
    return (int64_t)(int16_t)(uint16_t)((uint32_t)(uint16_t)a << s);
}

QF_INLINE int32_t clamp32(int32_t v, int32_t hi)
{
    return v < 0 ? 0 : (v > hi ? hi : v);
}

/* x[j] for j in [j0, half) of one perspective (the SIMD tail, or all of it in the scalar variant); one
   loop per shift so that the compiler can vectorise them. */
QF_INLINE void transform_scalar(const int16_t *a, int64_t half, int64_t j0, int64_t s, uint8_t *out)
{
    if (s == 0) {
        for (int64_t j = j0; j < half; j++)
            out[j] = (uint8_t)((clamp32(a[j], QF_FT_ACT_MAX) * clamp32(a[j + half], QF_FT_ACT_MAX))
                               >> QF_FT_PRODUCT_SHIFT);
    } else {
        for (int64_t j = j0; j < half; j++)
            out[j] = (uint8_t)((clamp32((int32_t)ft_value(a[j], 1), QF_FT_ACT_MAX << 1)
                                * clamp32((int32_t)ft_value(a[j + half], 1), QF_FT_ACT_MAX << 1))
                               >> (QF_FT_PRODUCT_SHIFT + 2));
    }
}

/* Transform both perspectives (side to move first) into x[l1]; if nnz is not NULL, also list the non-zero
   4-byte groups and return their number (else return 0). ft_shift s is 0 or 1: the clamped values are at
   most 254, their product fits an unsigned 16-bit lane, and the result is 0..126. */
QF_INLINE int64_t transform_body(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, int64_t s,
                                 uint8_t *x, int32_t *nnz)
{
    const int64_t half = l1 / 2;
    const int64_t cmax = QF_FT_ACT_MAX << s, shift = QF_FT_PRODUCT_SHIFT + 2 * s;
    int64_t n = 0;
#if defined(QF_SIMD)
    const int fuse = nnz != NULL && half % VEC_BYTES == 0;
    const vec_t zero = vec_zero(), vmax = vec_set1_16((int16_t)cmax);
    const __m128i sh = _mm_cvtsi64_si128(shift), pre = _mm_cvtsi64_si128(s);
    for (int p = 0; p < 2; p++) {
        const int16_t *a = p ? acc_them : acc_us;
        uint8_t *out = x + p * half;
        int64_t j = 0;
        for (; j + VEC_BYTES <= half; j += VEC_BYTES) {
#define FT(q) vec_min16(vec_max16(vec_sll16(vec_load(q), pre), zero), vmax)
            const vec_t a0 = FT(a + j), a1 = FT(a + j + VEC_I16);
            const vec_t b0 = FT(a + half + j), b1 = FT(a + half + j + VEC_I16);
#undef FT
            /* a*b <= 65535 fits an unsigned 16-bit lane; the logical shift makes it 0..255. */
            const vec_t y = vec_packus16_ordered(vec_srl16(vec_mullo16(a0, b0), sh), vec_srl16(vec_mullo16(a1, b1), sh));
            vec_store(out + j, y);
            if (fuse)
                n += vec_write_indices(vec_nonzero32(y), (int32_t)((p * half + j) >> 2), nnz + n);
        }
        transform_scalar(a, half, j, s, out);
    }
#else
    const int fuse = 0;
    (void)cmax;
    (void)shift;
    transform_scalar(acc_us, half, 0, s, x);
    transform_scalar(acc_them, half, 0, s, x + half);
#endif
    if (nnz != NULL && !fuse)
        n = find_nnz_impl(x, l1, nnz);
    return n;
}

/* One body per ft_shift: with s a constant the compiler drops the pre-shift of 15.1 nets (s = 0) and makes the
   product's shift an immediate. */
QF_INLINE int64_t transform_impl(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, int64_t s,
                                 uint8_t *x, int32_t *nnz)
{
    if (s == 0)
        return transform_body(acc_us, acc_them, l1, 0, x, nnz);
    return transform_body(acc_us, acc_them, l1, 1, x, nnz);
}

QF_API void QF(transform)(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, int64_t ft_shift,
                          uint8_t *x)
{
    transform_impl(acc_us, acc_them, l1, ft_shift, x, NULL);
}

QF_API int64_t QF(transform_nnz)(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, int64_t ft_shift,
                                 uint8_t *x, int32_t *nnz)
{
    return transform_impl(acc_us, acc_them, l1, ft_shift, x, nnz);
}

/* Indices of the non-zero 4-byte groups of x[l1] (l1 a multiple of 4); nnz needs l1/4 + 16 entries. */
QF_API int64_t QF(find_nnz)(const uint8_t *x, int64_t l1, int32_t *nnz)
{
    return find_nnz_impl(x, l1, nnz);
}

/* ------------------------------------------------------------------------------------------------------ */
/* fc_0 over the listed non-zero groups                                                                  */
/* ------------------------------------------------------------------------------------------------------ */

/* fc_0 in plain C, exact for any byte: the scalar variant's fc0. */
static void fc0_plain(const int8_t *w0g, const int32_t *b0, const uint8_t *x, const int32_t *nnz, int64_t n,
                      int32_t *out)
{
    uint32_t s[QF_FC0_OUT];
    for (int o = 0; o < QF_FC0_OUT; o++)
        s[o] = (uint32_t)b0[o];
    for (int64_t t = 0; t < n; t++) {
        const int64_t g = nnz[t];
        const int8_t *wg = w0g + W0G_GROUP * g;
        const uint8_t *xg = x + 4 * g;
        for (int o = 0; o < QF_FC0_OUT; o++)
            s[o] += (uint32_t)(wg[4 * o] * xg[0] + wg[4 * o + 1] * xg[1] + wg[4 * o + 2] * xg[2]
                               + wg[4 * o + 3] * xg[3]);
    }
    for (int o = 0; o < QF_FC0_OUT; o++)
        out[o] = (int32_t)s[o];
}

#if defined(QF_SIMD)
/* Independent sums over the listed groups (four registers in all), so that the dot products' latency overlaps;
   the int32 sums wrap, so their order does not matter. */
#  define FC0_CHAINS (4 / FC0_REGS)
#endif

QF_INLINE void fc0_impl(const int8_t *w0g, const int32_t *b0, const uint8_t *x, const int32_t *nnz, int64_t n,
                        int32_t *out)
{
#if defined(QF_SIMD)
    vec_t s[FC0_CHAINS][FC0_REGS];
#pragma GCC unroll 4
    for (int c = 0; c < FC0_CHAINS; c++)
#pragma GCC unroll 2
        for (int r = 0; r < FC0_REGS; r++)
            s[c][r] = c ? vec_zero() : vec_load(b0 + VEC_I32 * r);
    int64_t t = 0;
    for (; t + FC0_CHAINS <= n; t += FC0_CHAINS) {
#pragma GCC unroll 4
        for (int c = 0; c < FC0_CHAINS; c++) {
            const int64_t g = nnz[t + c];
            const vec_t xv = vec_set1_32(load_i32(x + 4 * g));
#pragma GCC unroll 2
            for (int r = 0; r < FC0_REGS; r++)
                s[c][r] = vec_dot4(s[c][r], xv, vec_load(w0g + W0G_GROUP * g + VEC_BYTES * r));
        }
    }
    for (; t < n; t++) {
        const int64_t g = nnz[t];
        const vec_t xv = vec_set1_32(load_i32(x + 4 * g));
#pragma GCC unroll 2
        for (int r = 0; r < FC0_REGS; r++)
            s[0][r] = vec_dot4(s[0][r], xv, vec_load(w0g + W0G_GROUP * g + VEC_BYTES * r));
    }
#pragma GCC unroll 2
    for (int r = 0; r < FC0_REGS; r++) {
#pragma GCC unroll 4
        for (int c = 1; c < FC0_CHAINS; c++)
            s[0][r] = vec_add32(s[0][r], s[c][r]);
        vec_store(out + VEC_I32 * r, s[0][r]);
    }
#else
    fc0_plain(w0g, b0, x, nnz, n, out);
#endif
}

/* out[16] = b0 + sum over the n listed groups g of w0g[g] . x[4g..4g+3] (int32, wrapping). */
QF_API void QF(fc0)(const int8_t *w0g, const int32_t *b0, const uint8_t *x, const int32_t *nnz, int64_t n,
                    int32_t *out)
{
    fc0_impl(w0g, b0, x, nnz, n, out);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Head: activations of fc_0, fc_1, ClippedReLU, fc_2, plus the forwarded fc_0 output 15                  */
/* ------------------------------------------------------------------------------------------------------ */

/* Exact for every int32 input:
 *   sqr: min(127, v*v >> 19) is 127 for |v| >= 8160 (QF_SQR_LIMIT), so v is clamped to +-8160 first
 *        (product < 2^31);
 *   fc_1: the weighted sum is at most 32*128*127 = 520192 in magnitude; the bias is clamped to +-2^30
 *         first, which does not change clamp((b + s) >> 6, 0, 127) and keeps the int32 sum exact;
 *   fc_2 and the skip are summed in int64, as the Numba path does (the SIMD variants sum fc_2's 32 products,
 *         at most 127 * 128 each, in int32). */
QF_INLINE int64_t head_impl(const int32_t *fc0, const int8_t *w1g, const int32_t *b1, const int8_t *w2,
                            int64_t b2)
{
#if defined(QF_SIMD)
    const vec_t zero = vec_zero(), c127 = vec_set1_32(QF_ACT_MAX);
    const vec_t lo_c = vec_set1_32(-QF_SQR_LIMIT), hi_c = vec_set1_32(QF_SQR_LIMIT);
    vec_t sq[FC0_REGS], cr[FC0_REGS];
#pragma GCC unroll 2
    for (int r = 0; r < FC0_REGS; r++) {
        const vec_t v = vec_load(fc0 + VEC_I32 * r);
        const vec_t vc = vec_min32(vec_max32(v, lo_c), hi_c);
        sq[r] = vec_min32(vec_srli32(vec_mullo32(vc, vc), QF_SQR_SHIFT), c127);
        cr[r] = vec_min32(vec_max32(vec_srai32(v, QF_WEIGHT_SCALE_BITS), zero), c127);
    }
    __m128i sqb, crb;
    vec_bytes16x2(sq, cr, &sqb, &crb);
    uint8_t in[QF_FC1_IN] __attribute__((aligned(32)));
    store_fc1_input(sqb, crb, in);

    vec_t s[FC1_REGS];
#pragma GCC unroll 4
    for (int q = 0; q < FC1_REGS; q++)
        s[q] = zero;
#pragma GCC unroll 8
    for (int g = 0; g < QF_FC1_IN / 4; g++) {
        const vec_t xv = vec_set1_32(load_i32(in + 4 * g));
#pragma GCC unroll 4
        for (int q = 0; q < FC1_REGS; q++)
            s[q] = vec_dot4(s[q], xv, vec_load(w1g + W1G_GROUP * g + VEC_BYTES * q));
    }
    const vec_t bmin = vec_set1_32(-BIAS1_CLAMP), bmax = vec_set1_32(BIAS1_CLAMP);
    vec_t acc = zero;
#pragma GCC unroll 4
    for (int q = 0; q < FC1_REGS; q++) {
        const vec_t bb = vec_min32(vec_max32(vec_load(b1 + VEC_I32 * q), bmin), bmax);
        const vec_t c = vec_min32(vec_max32(vec_srai32(vec_add32(s[q], bb), QF_WEIGHT_SCALE_BITS), zero), c127);
        acc = vec_add32(acc, vec_mullo32(c, vec_load_i8_i32(w2 + VEC_I32 * q)));
    }
    const int64_t fc2 = (int64_t)vec_hsum32(acc);
#else
    int32_t in[QF_FC1_IN];
    for (int o = 0; o < QF_FC0_OUT - 1; o++) {
        const int64_t v = fc0[o];
        const int64_t sq = (v * v) >> QF_SQR_SHIFT;
        in[o] = (int32_t)(sq < QF_ACT_MAX ? sq : QF_ACT_MAX);
        in[QF_FC0_OUT - 1 + o] = (int32_t)clamp64(v >> QF_WEIGHT_SCALE_BITS, 0, QF_ACT_MAX);
    }
    for (int i = 2 * (QF_FC0_OUT - 1); i < QF_FC1_IN; i++)
        in[i] = 0;
    int64_t fc2 = 0;
    for (int o = 0; o < QF_FC1_OUT; o++) {
        int64_t s = b1[o];
        for (int g = 0; g < QF_FC1_IN / 4; g++)
            for (int k = 0; k < 4; k++)
                s += (int64_t)w1g[W1G_GROUP * g + 4 * o + k] * in[4 * g + k];
        fc2 += (int64_t)w2[o] * clamp64(s >> QF_WEIGHT_SCALE_BITS, 0, QF_ACT_MAX);
    }
#endif
    return b2 + fc2 + forward_skip(fc0[QF_FC0_OUT - 1]);
}

/* Positional output of one layer stack from fc_0's 16 outputs. */
QF_API int64_t QF(head)(const int32_t *fc0, const int8_t *w1g, const int32_t *b1, const int8_t *w2, int64_t b2)
{
    return head_impl(fc0, w1g, b1, w2, b2);
}

/* The whole layer-stack pass: transform (side to move first), non-zero groups, sparse fc_0, head.
   x needs l1 bytes, nnz l1/4 + 16 entries, fc0_out 16 int32 (left holding fc_0's outputs). */
QF_API int64_t QF(forward)(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, int64_t ft_shift,
                           const int8_t *w0g, const int32_t *b0, const int8_t *w1g,
                           const int32_t *b1, const int8_t *w2, int64_t b2, uint8_t *x, int32_t *nnz,
                           int32_t *fc0_out)
{
    const int64_t n = transform_impl(acc_us, acc_them, l1, ft_shift, x, nnz);
    fc0_impl(w0g, b0, x, nnz, n, fc0_out);
    return head_impl(fc0_out, w1g, b1, w2, b2);
}

/* ------------------------------------------------------------------------------------------------------ */
/* Quantfish-format nets: the arithmetic of a scheme record (quantfish/nnue/requant.py states it; the definition is  */
/* quantfish/quant/simulator.py). fc_0's input and fc_0 / fc_1 have SIMD paths chosen per call from the record */
/* (plan_x, fc0_wide, fc1_scheme); the per-row requantisations are plain C.                               */
/* ------------------------------------------------------------------------------------------------------ */

#define QF_ROW(qs, site) ((qs) + (site) * QF_SCHEME_ROW)

QF_INLINE int64_t floor_div(int64_t a, int64_t d)
{
    const int64_t q = a / d;
    return (a % d != 0 && ((a < 0) != (d < 0))) ? q - 1 : q;
}

/* R(v * mul[row] / (div << shift)), rounded by the row's code; int64 throughout, as the Numba path. */
QF_INLINE int64_t requant_row(int64_t v, const int64_t *q, int64_t row)
{
    int64_t p = v * q[QF_SCHEME_Q_MUL + row];
    if (q[QF_SCHEME_Q_WRAP])
        p = (int64_t)(int32_t)(uint32_t)(uint64_t)p;
    const int64_t s = q[QF_SCHEME_Q_SHIFT], r = q[QF_SCHEME_Q_ROUND];
    if (q[QF_SCHEME_Q_DIV] == 1) {
        if (s == 0)
            return p;
        if (r == 0)
            return p >> s;                                  /* arithmetic shift: floor */
        if (r == 1)
            return p < 0 ? -((-p) >> s) : p >> s;
        return (p + ((int64_t)1 << (s - 1))) >> s;
    }
    const int64_t d = q[QF_SCHEME_Q_DIV] << s;
    if (r == 0)
        return floor_div(p, d);
    if (r == 1)
        return p / d;
    return floor_div(p + (d >> 1), d);
}

/* out[o] = R(v[o] * mul[o] / (div << shift)) for o < n: requant_row with the site's shift, divisor and rounding
   hoisted out of the loop, so that each rounding's loop has no branch and the compiler vectorises it. */
QF_INLINE void requant_rows(const int64_t *v, int n, const int64_t *q, int64_t *out)
{
    const int64_t *mul = q + QF_SCHEME_Q_MUL;
    const int64_t s = q[QF_SCHEME_Q_SHIFT], r = q[QF_SCHEME_Q_ROUND];
    if (q[QF_SCHEME_Q_DIV] != 1 || q[QF_SCHEME_Q_WRAP]) {
        for (int o = 0; o < n; o++)
            out[o] = requant_row(v[o], q, o);
    } else if (s == 0) {
        for (int o = 0; o < n; o++)
            out[o] = v[o] * mul[o];
    } else if (r == 0) {
        for (int o = 0; o < n; o++)
            out[o] = (v[o] * mul[o]) >> s;
    } else if (r == 2) {
        const int64_t add = (int64_t)1 << (s - 1);
        for (int o = 0; o < n; o++)
            out[o] = (v[o] * mul[o] + add) >> s;
    } else {
        for (int o = 0; o < n; o++)
            out[o] = requant_row(v[o], q, o);
    }
}

/* x[j] = clamp(R_x(clamp(a[j], 0, ft_hi) * clamp(a[j + half], 0, ft_hi)), 0, x_hi) for one perspective, in
   plain C (the scalar variant, and records the SIMD plan does not cover). */
static void transform_scheme_scalar(const int16_t *acc, int64_t half, const int64_t *qs, uint8_t *x)
{
    const int64_t ft_hi = QF_ROW(qs, QF_S_FT)[QF_SCHEME_Q_HI];
    const int64_t *qx = QF_ROW(qs, QF_S_X);
    const int64_t x_hi = qx[QF_SCHEME_Q_HI], mul = qx[QF_SCHEME_Q_MUL], s = qx[QF_SCHEME_Q_SHIFT];
    if (qx[QF_SCHEME_Q_DIV] == 1 && !qx[QF_SCHEME_Q_WRAP] && mul >= 0 && mul <= (int64_t)UINT32_MAX) {
        /* the products are >= 0, so floor and trunc are one shift, nearest adds half first */
        const int64_t add = (qx[QF_SCHEME_Q_ROUND] == 2 && s > 0) ? ((int64_t)1 << (s - 1)) : 0;
        if (ft_hi * ft_hi * mul + add <= INT32_MAX && s < 31) {
            /* every product fits int32 (Stockfish-like clamps): a loop the compiler vectorises */
            const int32_t hi32 = (int32_t)ft_hi, m32 = (int32_t)mul, add32 = (int32_t)add, xh = (int32_t)x_hi;
            const int sh = (int)s;
            for (int64_t j = 0; j < half; j++) {
                int32_t a = acc[j], b = acc[j + half];
                a = a < 0 ? 0 : (a > hi32 ? hi32 : a);
                b = b < 0 ? 0 : (b > hi32 ? hi32 : b);
                const int32_t v = (a * b * m32 + add32) >> sh;
                x[j] = (uint8_t)(v > xh ? xh : v);
            }
            return;
        }
        /* a * b < 2**30 fits 32 bits; the product with the multiplier needs 64 (unsigned: vpmuludq) */
        const int32_t hi32 = (int32_t)ft_hi;
        const uint64_t m64 = (uint64_t)mul, add64 = (uint64_t)add, xh = (uint64_t)x_hi;
        for (int64_t j = 0; j < half; j++) {
            int32_t a = acc[j], b = acc[j + half];
            a = a < 0 ? 0 : (a > hi32 ? hi32 : a);
            b = b < 0 ? 0 : (b > hi32 ? hi32 : b);
            const uint64_t v = ((uint64_t)(uint32_t)(a * b) * m64 + add64) >> s;
            x[j] = (uint8_t)(v > xh ? xh : v);
        }
        return;
    }
    for (int64_t j = 0; j < half; j++) {
        int64_t a = acc[j], b = acc[j + half];
        a = a < 0 ? 0 : (a > ft_hi ? ft_hi : a);
        b = b < 0 ? 0 : (b > ft_hi ? ft_hi : b);
        const int64_t v = requant_row(a * b, qx, 0);
        x[j] = (uint8_t)(v < 0 ? 0 : (v > x_hi ? x_hi : v));
    }
}

/* How fc_0's input x = clamp(R_x(a * b), 0, x_hi) of a scheme is computed (decided once per call from the
   record; a, b = the two clamped FT halves, 0..ft_hi). R_x must be a shift (divisor 1, no wrap) rounded by
   floor, trunc (the same: a * b >= 0) or nearest with a multiplier >= 0, else the scalar loop runs.
   XS_16: ft_hi <= 255, so a * b fits an unsigned 16-bit lane. With mul' = mul << k and s' = s + k (the same
   value) chosen so that mul' <= 32767 and s' >= 17, h = (a * b * mul') >> 16 is one vpmulhuw, floor is
   h >> (s' - 16) and nearest adds bit s' - 17 of h (bit s' - 1 of the product): ((h >> (s' - 17)) + 1) >> 1,
   one vpavgw, with nothing to overflow.
   XS_32: a * b (one vpmaddwd on zero-extended lanes) times mul plus the rounding addend fits 32 unsigned
   bits; one vpmulld and a logical shift, then the clamp to x_hi in 32 bits (the value may pass 32767).
   XS_64: any other multiplier below 2^32 (the FT clamps of nets trained here reach 5,000, their products
   2^25, times multipliers of 15 bits): a * b as in XS_32, times mul in 64-bit lanes (vpmuludq of the even and
   the odd 32-bit lanes), plus the addend, shifted and clamped to x_hi there.
   XS_SHIFT: XS_16 without a multiplier (mul 1, 1 <= s <= 16: Stockfish's arithmetic and its 0..255 variant):
   floor is (a * b) >> s, nearest ((a * b) >> (s - 1) + 1) >> 1, one vpavgw, which cannot overflow. An FT clamp
   of 256 (dfp's power of two; XS_SHIFT256) fits too: only 256 * 256 leaves 16 bits, and its lanes
   (a & b == 256) take the value R(65536) (big256, kept below 32768 for the signed pack; x_hi is at most 255).
   XS_17: XS_16 for FT clamps up to 362, whose products need 17 bits: with p = lo + 2^16 hb (lo = vpmullw,
   hb = vpmulhuw of a and b, 0 or 1), (p * mul') >> 16 is vpmulhuw(lo, mul') + hb * mul', below 2 * 32767. */
enum { XS_SCALAR = 0, XS_16 = 1, XS_32 = 2, XS_SHIFT = 3, XS_17 = 4, XS_SHIFT256 = 5, XS_64 = 6 };

typedef struct {
    int mode, nearest;
    int32_t ft_hi, x_hi;
    int32_t m16, k2;           /* XS_16; XS_SHIFT: k2 = s */
    int32_t big256;            /* XS_SHIFT256: R(256 * 256), at most 32767 */
    uint32_t m32, add32;       /* XS_32 */
    int32_t s32;
} x_plan;

static x_plan plan_x(const int64_t *qs)
{
    x_plan p;
    memset(&p, 0, sizeof p);
    const int64_t *qx = QF_ROW(qs, QF_S_X);
    const int64_t ft_hi = QF_ROW(qs, QF_S_FT)[QF_SCHEME_Q_HI], x_hi = qx[QF_SCHEME_Q_HI];
    const int64_t mul = qx[QF_SCHEME_Q_MUL], s = qx[QF_SCHEME_Q_SHIFT], r = qx[QF_SCHEME_Q_ROUND];
    p.mode = XS_SCALAR;
    if (qx[QF_SCHEME_Q_DIV] != 1 || qx[QF_SCHEME_Q_WRAP] || mul < 0 || s < 1 || s > 62 || ft_hi < 0
        || ft_hi > 32767 || x_hi < 0 || x_hi > 255)
        return p;
    p.nearest = r == 2;
    p.ft_hi = (int32_t)ft_hi;
    p.x_hi = (int32_t)x_hi;
    if (ft_hi <= 256 && mul == 1 && s <= 16) {
        const int64_t big = (65536 + (p.nearest ? (int64_t)1 << (s - 1) : 0)) >> s;
        p.mode = ft_hi <= 255 ? XS_SHIFT : XS_SHIFT256;
        p.k2 = (int32_t)s;
        p.big256 = (int32_t)(big > 32767 ? 32767 : big);
        return p;
    }
    if (ft_hi <= 362) {
        int64_t m = mul, sh = s;
        while (sh < 17 && m <= 32767 / 2) {
            m <<= 1;
            sh++;
        }
        if (sh >= 17 && m <= 32767) {
            p.mode = ft_hi <= 255 ? XS_16 : XS_17;
            p.m16 = (int32_t)m;
            p.k2 = (int32_t)(sh - 16);
            return p;
        }
    }
    const uint64_t add = p.nearest ? (uint64_t)1 << (s - 1) : 0;
    if (s <= 31 && mul <= (int64_t)UINT32_MAX
        && (uint64_t)ft_hi * (uint64_t)ft_hi * (uint64_t)mul + add <= (uint64_t)UINT32_MAX) {
        p.mode = XS_32;
        p.m32 = (uint32_t)mul;
        p.add32 = (uint32_t)add;
        p.s32 = (int32_t)s;
    } else if (mul <= (int64_t)UINT32_MAX) {
        p.mode = XS_64;             /* a * b < 2^30 times mul < 2^32, plus add <= 2^61: below 2^63 */
        p.m32 = (uint32_t)mul;
        p.s32 = (int32_t)s;
    }
    return p;
}

#if defined(QF_SIMD)
/* XS_64 of VEC_I32 products q (32-bit lanes, below 2^30): min((q * m + add) >> s, xh) in 64-bit lanes, the even
   lanes' results in the low halves and the odd lanes' in the high halves, so VEC_I32 int32 in q's order. */
QF_INLINE vec_t prod64(vec_t q, vec_t m, vec_t add, __m128i s, vec_t xh)
{
    const vec_t ev = vec_min64(vec_srl64(vec_add64(vec_mul_u32(q, m), add), s), xh);
    const vec_t od = vec_min64(vec_srl64(vec_add64(vec_mul_u32(vec_srli64(q, 32), m), add), s), xh);
    return vec_or(ev, vec_slli64(od, 32));
}

/* VEC_BYTES outputs x[0..VEC_BYTES) of one perspective from a = acc + j, b = acc + half + j (see x_plan). */
QF_INLINE vec_t transform_block(const int16_t *a, const int16_t *b, const x_plan *p, const int mode,
                                const int nearest)
{
    const vec_t zero = vec_zero(), hi = vec_set1_16((int16_t)p->ft_hi);
#  define CL(q) vec_min16(vec_max16(vec_load(q), zero), hi)
    const vec_t a0 = CL(a), a1 = CL(a + VEC_I16), b0 = CL(b), b1 = CL(b + VEC_I16);
#  undef CL
    vec_t v0, v1;
    if (mode == XS_SHIFT || mode == XS_SHIFT256) {
        const vec_t p0 = vec_mullo16(a0, b0), p1 = vec_mullo16(a1, b1);
        if (nearest) {
            const __m128i k1 = _mm_cvtsi32_si128(p->k2 - 1);
            v0 = vec_avg_u16(vec_srl16(p0, k1), zero);
            v1 = vec_avg_u16(vec_srl16(p1, k1), zero);
        } else {
            const __m128i k = _mm_cvtsi32_si128(p->k2);
            v0 = vec_srl16(p0, k);
            v1 = vec_srl16(p1, k);
        }
        if (mode == XS_SHIFT256) {
            const vec_t b256 = vec_set1_16(256), big = vec_set1_16((int16_t)p->big256);
            v0 = vec_sel_eq16(vec_and(a0, b0), b256, big, v0);
            v1 = vec_sel_eq16(vec_and(a1, b1), b256, big, v1);
        }
    } else if (mode == XS_16 || mode == XS_17) {
        const vec_t m = vec_set1_16((int16_t)p->m16);
        const __m128i k = _mm_cvtsi32_si128(p->k2), k1 = _mm_cvtsi32_si128(p->k2 - 1);
        vec_t h0 = vec_mulhi_u16(vec_mullo16(a0, b0), m);
        vec_t h1 = vec_mulhi_u16(vec_mullo16(a1, b1), m);
        if (mode == XS_17) {
            h0 = vec_add16(h0, vec_mullo16(vec_mulhi_u16(a0, b0), m));
            h1 = vec_add16(h1, vec_mullo16(vec_mulhi_u16(a1, b1), m));
        }
        if (nearest) {      /* ((h >> (k - 1)) + 1) >> 1 in one vpavgw: bit k - 1 of h added to h >> k */
            v0 = vec_avg_u16(vec_srl16(h0, k1), zero);
            v1 = vec_avg_u16(vec_srl16(h1, k1), zero);
        } else {
            v0 = vec_srl16(h0, k);
            v1 = vec_srl16(h1, k);
        }
    } else {
        /* XS_32 and XS_64: unpack with zero, so that each int32 lane is (a, 0) and vpmaddwd gives a * b; packus of
           the unpacklo / unpackhi pair restores the order */
        vec_t r[4];
        if (mode == XS_64) {
            const vec_t m = vec_set1_64((int64_t)p->m32), xh = vec_set1_64(p->x_hi);
            const vec_t add = vec_set1_64(nearest ? (int64_t)1 << (p->s32 - 1) : 0);
            const __m128i s = _mm_cvtsi32_si128(p->s32);
#  define PROD(x, y) prod64(vec_madd16((x), (y)), m, add, s, xh)
            r[0] = PROD(vec_unpacklo16(a0, zero), vec_unpacklo16(b0, zero));
            r[1] = PROD(vec_unpackhi16(a0, zero), vec_unpackhi16(b0, zero));
            r[2] = PROD(vec_unpacklo16(a1, zero), vec_unpacklo16(b1, zero));
            r[3] = PROD(vec_unpackhi16(a1, zero), vec_unpackhi16(b1, zero));
#  undef PROD
        } else {
            const vec_t m = vec_set1_32((int32_t)p->m32), add = vec_set1_32((int32_t)p->add32);
            const vec_t xh = vec_set1_32(p->x_hi);
            const __m128i s = _mm_cvtsi32_si128(p->s32);
            /* R(a * b) is below 2^31 but may pass 32767 (a clamp of x far below the FT's products): clamped to
               x_hi in 32 bits, so that the signed packs cannot turn it negative */
#  define PROD(x, y) vec_min32(vec_srl32(vec_add32(vec_mullo32(vec_madd16((x), (y)), m), add), s), xh)
            r[0] = PROD(vec_unpacklo16(a0, zero), vec_unpacklo16(b0, zero));
            r[1] = PROD(vec_unpackhi16(a0, zero), vec_unpackhi16(b0, zero));
            r[2] = PROD(vec_unpacklo16(a1, zero), vec_unpacklo16(b1, zero));
            r[3] = PROD(vec_unpackhi16(a1, zero), vec_unpackhi16(b1, zero));
#  undef PROD
        }
        v0 = vec_packus32(r[0], r[1]);
        v1 = vec_packus32(r[2], r[3]);
    }
    return vec_min_u8(vec_packus16_ordered(v0, v1), vec_set1_8((int8_t)p->x_hi));
}

/* Both perspectives with the non-zero groups listed as they are stored (half a multiple of VEC_BYTES). With
   `split` (without VNNI), groups with a byte above 127 that `sat` marks (a bit a group; NULL: every group) go to
   nnz_hi instead (their count to *n_hi): the weights of the others keep every pair of products within int16, so
   vpmaddubsw is exact on them. */
QF_INLINE int64_t transform_scheme_simd(const int16_t *acc_us, const int16_t *acc_them, int64_t half,
                                        const x_plan *p, const int mode, const int nearest, uint8_t *x,
                                        int32_t *nnz, const int split, int32_t *nnz_hi, int64_t *n_hi,
                                        const uint8_t *sat)
{
    int64_t n = 0, nh = 0;
    for (int q = 0; q < 2; q++) {
        const int16_t *a = q ? acc_them : acc_us;
        uint8_t *out = x + q * half;
        for (int64_t j = 0; j < half; j += VEC_BYTES) {
            const vec_t y = transform_block(a + j, a + half + j, p, mode, nearest);
            vec_store(out + j, y);
            const int32_t base = (int32_t)((q * half + j) >> 2);
            vmask_t m = vec_nonzero32(y);
            if (split) {
                const vmask_t hm = vec_test32(y, vec_set1_32((int32_t)0x80808080u))
                                   & (sat ? vec_map_bits(sat, (q * half + j) >> 5) : VMASK_ALL);
                if (hm) {       /* rare with a map: few groups' weights can saturate (Stockfish's net: 0-2 of 256) */
                    nh += vec_write_indices(hm, base, nnz_hi + nh);
                    m &= ~hm;
                }
            }
            n += vec_write_indices(m, base, nnz + n);
        }
    }
    if (split)
        *n_hi = nh;
    return n;
}
#endif

/* x = fc_0's input of both perspectives (side to move first) under the record qs; lists the non-zero 4-byte
   groups into nnz and returns their number. One SIMD body per plan, so each loop is free of branches. With
   nnz_hi (the SIMD variants without VNNI, x_hi > 127), the groups holding a byte above 127 that `sat` marks (see
   transform_scheme_simd) are listed there instead and counted in *n_hi (every group, when the plan has no SIMD
   body). p is plan_x(qs). */
static int64_t transform_scheme(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, const int64_t *qs,
                                const x_plan *p, uint8_t *x, int32_t *nnz, int32_t *nnz_hi, int64_t *n_hi,
                                const uint8_t *sat)
{
    const int64_t half = l1 / 2;
#if defined(QF_SIMD)
    if (p->mode != XS_SCALAR && half % VEC_BYTES == 0) {
#  define BODY(mode, nearest) (nnz_hi ? transform_scheme_simd(acc_us, acc_them, half, p, mode, nearest, x, nnz, \
                                                                1, nnz_hi, n_hi, sat)                          \
                                      : transform_scheme_simd(acc_us, acc_them, half, p, mode, nearest, x, nnz, \
                                                                0, NULL, NULL, NULL))
        if (p->mode == XS_SHIFT)
            return p->nearest ? BODY(XS_SHIFT, 1) : BODY(XS_SHIFT, 0);
        if (p->mode == XS_SHIFT256)
            return p->nearest ? BODY(XS_SHIFT256, 1) : BODY(XS_SHIFT256, 0);
        if (p->mode == XS_16)
            return p->nearest ? BODY(XS_16, 1) : BODY(XS_16, 0);
        if (p->mode == XS_17)
            return p->nearest ? BODY(XS_17, 1) : BODY(XS_17, 0);
        if (p->mode == XS_64)
            return p->nearest ? BODY(XS_64, 1) : BODY(XS_64, 0);
        return BODY(XS_32, 0);
#  undef BODY
    }
#endif
    (void)sat;
    (void)p;
    transform_scheme_scalar(acc_us, half, qs, x);
    transform_scheme_scalar(acc_them, half, qs, x + half);
    if (nnz_hi) {
        *n_hi = find_nnz_impl(x, l1, nnz_hi);
        return 0;
    }
    return find_nnz_impl(x, l1, nnz);
}

/* z[o] = b1[o] + sum_i w1[o][i] * in[i] in int32 (wrapping), w1 as w1g ([8][32][4]). With every input in
   0..32767 (activations of any resolution) the SIMD variants widen the weights to int16 and use vpmaddwd,
   whose pair sums cannot overflow; the int32 additions wrap as the scalar loop's do. */
QF_INLINE void fc1_scheme(const int8_t *w1g, const int32_t *b1, const int32_t *in, int64_t *z)
{
#if defined(QF_SIMD)
    uint32_t any = 0;
    int16_t in16[QF_FC1_IN] __attribute__((aligned(32)));
    for (int i = 0; i < QF_FC1_IN; i++) {
        any |= (uint32_t)in[i];
        in16[i] = (int16_t)in[i];
    }
    if (any <= 32767) {
        __m256i acc[8];
#pragma GCC unroll 8
        for (int q = 0; q < 8; q++)
            acc[q] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int g = 0; g < QF_FC1_IN / 4; g++) {
            int64_t four;
            memcpy(&four, in16 + 4 * g, 8);
            const __m256i xv = _mm256_set1_epi64x(four);
            /* 16 weight bytes = outputs 4q..4q+3, inputs 4g..4g+3; vpmaddwd sums the input pairs */
#pragma GCC unroll 8
            for (int q = 0; q < 8; q++)
                acc[q] = _mm256_add_epi32(acc[q], _mm256_madd_epi16(
                    _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w1g + W1G_GROUP * g + 16 * q))), xv));
        }
        /* hadd of outputs 8p..8p+3 and 8p+4..8p+7 leaves (0 1 4 5 | 2 3 6 7); the qword permutation sorts it */
        int32_t out[QF_FC1_OUT] __attribute__((aligned(32)));
#pragma GCC unroll 4
        for (int p = 0; p < 4; p++)
            vstore256(out + 8 * p, _mm256_add_epi32(vload256(b1 + 8 * p),
                      _mm256_permute4x64_epi64(_mm256_hadd_epi32(acc[2 * p], acc[2 * p + 1]), 0xD8)));
        for (int o = 0; o < QF_FC1_OUT; o++)
            z[o] = out[o];
        return;
    }
#endif
    for (int o = 0; o < QF_FC1_OUT; o++) {
        int32_t sum = b1[o];
        for (int g = 0; g < QF_FC1_IN / 4; g++)
            for (int k = 0; k < 4; k++)
                sum += (int32_t)w1g[W1G_GROUP * g + 4 * o + k] * in[4 * g + k];
        z[o] = sum;
    }
}

/* Records whose three activation sites (the square, fc_0's and fc_1's ClippedReLU) have divisor 1, no wrap and
   clamps 0..255 (Stockfish's arithmetic, its 0..255 variant, power-of-two and calibrated schemes) take a head in
   registers. The square's limit must be <= 32767 for the scalar variant; the SIMD ones square a larger limit
   (calibrated records' reach 110,000 on Stockfish's net) in 64-bit lanes (HEAD_MUL64_SQR), as long as the square
   times the row's multiplier plus the rounding addend stays below 2^63, where the Numba head's int64 would
   wrap. A site of plain shifts (multiplier 1, shift <= 30) fits int32:
   the square is below 2^30, and a shift rounded to nearest is ((v >> (s - 1)) + 1) >> 1, equal to
   (v + 2^(s-1)) >> s without its overflow (v is first kept below INT32_MAX, which leaves every clamped result
   as it was). A site with multipliers below 2^31 (shift <= 62) computes v * mul in 64 bits (HEAD_MUL64_*).
   Either way a negative value clamps to 0 under floor and trunc alike. Returns 0 for other records, else
   1 when every fc_1 input is <= 127 (vpmaddubsw is exact) or 2 when some may reach 255, plus the MUL64 bits. */
enum { HEAD_FC1_WIDE = 2, HEAD_MUL64_SQR = 4, HEAD_MUL64_AC0 = 8, HEAD_MUL64_AC1 = 16 };

/* The multipliers of n rows of a site: 0 when all are 1 (a shift site, if its shift is <= 30), 1 when all lie in
   0..2^31-1 (HEAD_MUL64), -1 otherwise; *or_out gets their OR (a bound on each). n is a constant at each call,
   so the loop vectorises. */
QF_INLINE int site_muls(const int64_t *q, const int n, uint64_t *or_out)
{
    uint64_t not_one = 0, big = 0;
    for (int o = 0; o < n; o++) {
        not_one |= (uint64_t)(q[QF_SCHEME_Q_MUL + o] ^ 1);
        big |= (uint64_t)q[QF_SCHEME_Q_MUL + o];
    }
    *or_out = big;
    if (!not_one && q[QF_SCHEME_Q_SHIFT] <= 30)
        return 0;
    return (big & ~(uint64_t)INT32_MAX) ? -1 : 1;
}

static int lean_head_plan(const int64_t *qs)
{
    const int64_t *qsq = QF_ROW(qs, QF_S_SQR), *q0 = QF_ROW(qs, QF_S_AC0), *q1 = QF_ROW(qs, QF_S_AC1);
    uint64_t hi_in = 0, hi_out = 0, lim = 0;
    if ((qsq[QF_SCHEME_Q_DIV] ^ 1) | (q0[QF_SCHEME_Q_DIV] ^ 1) | (q1[QF_SCHEME_Q_DIV] ^ 1)
        | qsq[QF_SCHEME_Q_WRAP] | q0[QF_SCHEME_Q_WRAP] | q1[QF_SCHEME_Q_WRAP])
        return 0;
    if ((uint64_t)qsq[QF_SCHEME_Q_ROUND] > 2 || (uint64_t)q0[QF_SCHEME_Q_ROUND] > 2
        || (uint64_t)q1[QF_SCHEME_Q_ROUND] > 2 || (uint64_t)qsq[QF_SCHEME_Q_SHIFT] > 62
        || (uint64_t)q0[QF_SCHEME_Q_SHIFT] > 62 || (uint64_t)q1[QF_SCHEME_Q_SHIFT] > 62)
        return 0;
    uint64_t mul_or, unused;
    const int msq = site_muls(qsq, QF_FC0_OUT - 1, &mul_or), m0 = site_muls(q0, QF_FC0_OUT - 1, &unused),
              m1 = site_muls(q1, QF_FC1_OUT, &unused);
    if (msq < 0 || m0 < 0 || m1 < 0)
        return 0;
    int plan = (msq ? HEAD_MUL64_SQR : 0) | (m0 ? HEAD_MUL64_AC0 : 0) | (m1 ? HEAD_MUL64_AC1 : 0);
    for (int o = 0; o < QF_FC0_OUT - 1; o++) {
        hi_in |= (uint64_t)QF_ROW(qs, QF_S_SQR)[QF_SCHEME_Q_HI + o] | (uint64_t)QF_ROW(qs, QF_S_AC0)[QF_SCHEME_Q_HI + o];
        lim |= (uint64_t)QF_ROW(qs, QF_S_SQR_LIMIT)[QF_SCHEME_Q_HI + o];
    }
    for (int o = 0; o < QF_FC1_OUT; o++)
        hi_out |= (uint64_t)QF_ROW(qs, QF_S_AC1)[QF_SCHEME_Q_HI + o];
    if ((hi_in | hi_out) & ~(uint64_t)255)
        return 0;
#if !defined(QF_SIMD)
    if (plan || (lim & ~(uint64_t)32767))
        return 0;        /* the scalar variant's lean_head has no 64-bit sites: the general head is as good */
#else
    if (msq || (lim & ~(uint64_t)32767)) {
        const int64_t s = qsq[QF_SCHEME_Q_SHIFT];
        const unsigned __int128 add = qsq[QF_SCHEME_Q_ROUND] == 2 && s > 0 ? (unsigned __int128)1 << (s - 1) : 0;
        /* The ORs bound every row's limit and multiplier from above: when their square times their product fits,
           every row's does (calibrated records), and no row needs its own 128-bit product. */
        if (lim > INT32_MAX || (unsigned __int128)lim * lim * mul_or + add > (unsigned __int128)INT64_MAX) {
            for (int o = 0; o < QF_FC0_OUT - 1; o++) {
                const uint64_t l = (uint64_t)QF_ROW(qs, QF_S_SQR_LIMIT)[QF_SCHEME_Q_HI + o];
                if (l > INT32_MAX
                    || (unsigned __int128)l * l * (uint64_t)qsq[QF_SCHEME_Q_MUL + o] + add > (unsigned __int128)INT64_MAX)
                    return 0;
            }
        }
        plan |= HEAD_MUL64_SQR;     /* the square in 64-bit lanes, multipliers or not */
    }
#endif
    return plan | ((hi_in & ~(uint64_t)127) ? HEAD_FC1_WIDE : 1);
}

/* v[o] = R(v[o]) for a shift s and a rounding (floor, or nearest when `nearest`); see lean_head_plan. */
#define SHIFT_ROWS(v, n, s, nearest)                                                                         \
    do {                                                                                                   \
        if ((s) > 0 && (nearest)) {                                                                        \
            for (int o_ = 0; o_ < (n); o_++)                                                               \
                (v)[o_] = ((((v)[o_] > INT32_MAX - 1 ? INT32_MAX - 1 : (v)[o_]) >> ((s) - 1)) + 1) >> 1;   \
        } else if ((s) > 0) {                                                                              \
            for (int o_ = 0; o_ < (n); o_++)                                                               \
                (v)[o_] >>= (s);                                                                           \
        }                                                                                                  \
    } while (0)

/* The head of a record lean_head_plan accepts, equal to forward_scheme's general head. The SIMD variants hold
   each activation site of fc_0 in FC0_REGS registers of its 16 rows (row 15, the skip, is computed and dropped)
   and fc_1's outputs in FC1_REGS, build fc_1's 32 input bytes in registers and store them whole (as head_impl
   does), so that fc_1's 4-byte loads are forwarded from those stores. */
#if defined(QF_SIMD)

/* fc_1 on 32 byte inputs, z = b1 + sum_i w1[.][i] * in[i] (int32, wrapping): vpmaddubsw when every input is
   <= 127 (plan without HEAD_FC1_WIDE) or with VNNI, else each byte split in two exact halves. */
QF_INLINE void fc1_bytes(const int8_t *w1g, const int32_t *b1, const uint8_t *in, int plan, vec_t *z)
{
    vec_t acc[FC1_REGS];
#pragma GCC unroll 4
    for (int q = 0; q < FC1_REGS; q++)
        acc[q] = vec_zero();
#  if !defined(QF_USE_VNNI)
    if (plan & HEAD_FC1_WIDE) {
        /* inputs up to 255: x = r + 128 b (r = x & 127, b = x >> 7), both exact through vpmaddubsw; the b parts,
           at most 2 * 128 a pair, are summed over the 8 groups in int16 (2048 at most) and scaled once */
        const vec_t low7 = vec_set1_8(0x7F), one8 = vec_set1_8(1);
        vec_t accb[FC1_REGS];
#pragma GCC unroll 4
        for (int q = 0; q < FC1_REGS; q++)
            accb[q] = vec_zero();
#pragma GCC unroll 8
        for (int g = 0; g < QF_FC1_IN / 4; g++) {
            const vec_t xv = vec_set1_32(load_i32(in + 4 * g));
            const vec_t rv = vec_and(xv, low7), bv = vec_and(vec_srli16(xv, 7), one8);
#pragma GCC unroll 4
            for (int q = 0; q < FC1_REGS; q++) {
                const vec_t wv = vec_load(w1g + W1G_GROUP * g + VEC_BYTES * q);
                acc[q] = vec_dot4(acc[q], rv, wv);
                accb[q] = vec_add16(accb[q], vec_maddubs(bv, wv));
            }
        }
#pragma GCC unroll 4
        for (int q = 0; q < FC1_REGS; q++)
            acc[q] = vec_add32(acc[q], vec_madd16(accb[q], vec_set1_16(128)));
    } else
#  endif
    {
        (void)plan;
#pragma GCC unroll 8
        for (int g = 0; g < QF_FC1_IN / 4; g++) {
            const vec_t xv = vec_set1_32(load_i32(in + 4 * g));
#pragma GCC unroll 4
            for (int q = 0; q < FC1_REGS; q++)
                acc[q] = vec_dot4(acc[q], xv, vec_load(w1g + W1G_GROUP * g + VEC_BYTES * q));
        }
    }
#pragma GCC unroll 4
    for (int q = 0; q < FC1_REGS; q++)
        z[q] = vec_add32(acc[q], vec_load(b1 + VEC_I32 * q));
}

/* clamp(R(p), 0, hi) of VEC_I32 64-bit products of a site (pe: rows o, o+2, ..; po: rows o+1, o+3, ..) below
   2^63 with the rounding addend, as int32 lanes in row order: the values are >= 0, so the logical shift and
   the 64-bit min are exact. */
QF_INLINE vec_t round_clamp(vec_t pe, vec_t po, const int64_t *q, vec_t hi)
{
    const int s = (int)q[QF_SCHEME_Q_SHIFT];
    const vec_t add = vec_set1_64(q[QF_SCHEME_Q_ROUND] == 2 && s > 0 ? (int64_t)1 << (s - 1) : 0);
    const __m128i sh = _mm_cvtsi32_si128(s);
    pe = vec_min64(vec_srl64(vec_add64(pe, add), sh), vec_and(hi, vec_set1_64(0xFFFFFFFF)));
    po = vec_min64(vec_srl64(vec_add64(po, add), sh), vec_srli64(hi, 32));
    return vec_blend_odd32(pe, vec_slli64(po, 32));
}

/* clamp(R(v * mul[o..]), 0, hi) of a site with multipliers (HEAD_MUL64_*): v is first made >= 0, so that the
   unsigned 32 x 32 -> 64-bit products (below 2^62) plus the rounding addend fit 63 bits. */
QF_INLINE vec_t mulshift(vec_t v, const int64_t *q, int o, vec_t hi)
{
    v = vec_max32(v, vec_zero());
    const vec_t m = vec_narrow64(q + QF_SCHEME_Q_MUL + o);
    return round_clamp(vec_mul_u32(v, m), vec_mul_u32(vec_srli64(v, 32), vec_srli64(m, 32)), q, hi);
}

/* t * m for 64-bit t and the low 32 bits of m, in two 32-bit halves: lo(t) * m + (hi(t) * m << 32), exact
   while the product is below 2^64. */
QF_INLINE vec_t mul64x32(vec_t t, vec_t m)
{
    return vec_add64(vec_mul_u32(t, m), vec_slli64(vec_mul_u32(vec_srli64(t, 32), m), 32));
}

/* clamp(R(c * c * mul[o..]), 0, hi) for c in 0..2^31-1 (HEAD_MUL64_SQR): the squares in 64-bit lanes (vpmuludq
   of the even and the odd lanes), then times the multiplier; lean_head_plan has checked that the product with
   the addend stays below 2^63. */
QF_INLINE vec_t sqshift(vec_t c, const int64_t *q, int o, vec_t hi)
{
    const vec_t m = vec_narrow64(q + QF_SCHEME_Q_MUL + o);
    const vec_t co = vec_srli64(c, 32);
    return round_clamp(mul64x32(vec_mul_u32(c, c), m), mul64x32(vec_mul_u32(co, co), vec_srli64(m, 32)), q, hi);
}

/* R(v) of a shift site (SHIFT_ROWS in vector lanes). */
QF_INLINE vec_t shift_round(vec_t v, const int64_t *q)
{
    const int s = (int)q[QF_SCHEME_Q_SHIFT];
    if (s == 0)
        return v;
    if (q[QF_SCHEME_Q_ROUND] == 2) {
        v = vec_sra32(vec_min32(v, vec_set1_32(INT32_MAX - 1)), _mm_cvtsi32_si128(s - 1));
        return vec_srai32(vec_add32(v, vec_set1_32(1)), 1);
    }
    return vec_sra32(v, _mm_cvtsi32_si128(s));
}

static int64_t lean_head(const int32_t *z0, const int64_t *qs, int plan, const int8_t *w1g, const int32_t *b1,
                          const int8_t *w2, int64_t b2)
{
    const int64_t *qsq = QF_ROW(qs, QF_S_SQR), *qlim = QF_ROW(qs, QF_S_SQR_LIMIT), *q0 = QF_ROW(qs, QF_S_AC0),
                  *q1 = QF_ROW(qs, QF_S_AC1);
    const vec_t zero = vec_zero();
    vec_t sq[FC0_REGS], h[FC0_REGS];
#pragma GCC unroll 2
    for (int k = 0; k < FC0_REGS; k++) {
        const int o = VEC_I32 * k;
        const vec_t v = vec_load(z0 + o);
        const vec_t lim = vec_narrow64(qlim + QF_SCHEME_Q_HI + o);
        const vec_t c = vec_min32(vec_abs32(vec_max32(v, vec_sub32(zero, lim))), lim);
        const vec_t sq_hi = vec_narrow64(qsq + QF_SCHEME_Q_HI + o), h_hi = vec_narrow64(q0 + QF_SCHEME_Q_HI + o);
        /* a limit <= 32767 with shifts only: the square in int32 */
        sq[k] = (plan & HEAD_MUL64_SQR) ? sqshift(c, qsq, o, sq_hi)
                                        : vec_min32(shift_round(vec_mullo32(c, c), qsq), sq_hi);
        h[k] = (plan & HEAD_MUL64_AC0) ? mulshift(v, q0, o, h_hi)
                                       : vec_min32(vec_max32(shift_round(v, q0), zero), h_hi);
    }
    /* bytes sq[0..14], h[0..14], 0, 0 (each value is in 0..255) */
    __m128i sqb, hb;
    vec_bytes16x2(sq, h, &sqb, &hb);
    uint8_t in[QF_FC1_IN] __attribute__((aligned(32)));
    store_fc1_input(sqb, hb, in);

    vec_t z1[FC1_REGS];
    fc1_bytes(w1g, b1, in, plan, z1);
    vec_t acc = zero;
#pragma GCC unroll 4
    for (int k = 0; k < FC1_REGS; k++) {
        const int o = VEC_I32 * k;
        const vec_t c_hi = vec_narrow64(q1 + QF_SCHEME_Q_HI + o);
        const vec_t a = (plan & HEAD_MUL64_AC1) ? mulshift(z1[k], q1, o, c_hi)
                                                : vec_min32(vec_max32(shift_round(z1[k], q1), zero), c_hi);
        acc = vec_add32(acc, vec_mullo32(a, vec_load_i8_i32(w2 + o)));
    }
    const int64_t fc2 = (int64_t)vec_hsum32(acc);
    return requant_row(b2 + fc2, QF_ROW(qs, QF_S_OUT), 0) + requant_row(z0[QF_FC0_OUT - 1], QF_ROW(qs, QF_S_SKIP), 0);
}
#else
/* fc_1 on 32 byte inputs, z[o] = b1[o] + sum_i w1[o][i] * in[i] (int32, wrapping). */
QF_INLINE void fc1_bytes(const int8_t *w1g, const int32_t *b1, const uint8_t *in, int32_t *z)
{
    for (int o = 0; o < QF_FC1_OUT; o++) {
        uint32_t sum = (uint32_t)b1[o];
        for (int g = 0; g < QF_FC1_IN / 4; g++)
            for (int k = 0; k < 4; k++)
                sum += (uint32_t)((int32_t)w1g[W1G_GROUP * g + 4 * o + k] * in[4 * g + k]);
        z[o] = (int32_t)sum;
    }
}

static int64_t lean_head(const int32_t *z0, const int64_t *qs, int plan, const int8_t *w1g, const int32_t *b1,
                          const int8_t *w2, int64_t b2)
{
    const int64_t *qsq = QF_ROW(qs, QF_S_SQR), *qlim = QF_ROW(qs, QF_S_SQR_LIMIT), *q0 = QF_ROW(qs, QF_S_AC0),
                  *q1 = QF_ROW(qs, QF_S_AC1);
    (void)plan;
    int32_t sq[QF_FC0_OUT], h[QF_FC0_OUT];
    for (int o = 0; o < QF_FC0_OUT; o++) {
        const int32_t lim = (int32_t)qlim[QF_SCHEME_Q_HI + o], v = z0[o];
        int32_t c = v < -lim ? -lim : v;
        c = c < 0 ? -c : c;
        c = c > lim ? lim : c;
        sq[o] = c * c;
        h[o] = v;
    }
    SHIFT_ROWS(sq, QF_FC0_OUT, (int)qsq[QF_SCHEME_Q_SHIFT], qsq[QF_SCHEME_Q_ROUND] == 2);
    SHIFT_ROWS(h, QF_FC0_OUT, (int)q0[QF_SCHEME_Q_SHIFT], q0[QF_SCHEME_Q_ROUND] == 2);
    uint8_t in[QF_FC1_IN];
    for (int o = 0; o < QF_FC0_OUT - 1; o++) {
        const int32_t sq_hi = (int32_t)qsq[QF_SCHEME_Q_HI + o], h_hi = (int32_t)q0[QF_SCHEME_Q_HI + o];
        in[o] = (uint8_t)(sq[o] > sq_hi ? sq_hi : sq[o]);
        in[QF_FC0_OUT - 1 + o] = (uint8_t)(h[o] < 0 ? 0 : (h[o] > h_hi ? h_hi : h[o]));
    }
    for (int i = 2 * (QF_FC0_OUT - 1); i < QF_FC1_IN; i++)
        in[i] = 0;
    int32_t z1[QF_FC1_OUT];
    fc1_bytes(w1g, b1, in, z1);
    SHIFT_ROWS(z1, QF_FC1_OUT, (int)q1[QF_SCHEME_Q_SHIFT], q1[QF_SCHEME_Q_ROUND] == 2);
    int32_t fc2 = 0;
    for (int o = 0; o < QF_FC1_OUT; o++) {
        const int32_t c_hi = (int32_t)q1[QF_SCHEME_Q_HI + o];
        fc2 += (int32_t)w2[o] * (z1[o] < 0 ? 0 : (z1[o] > c_hi ? c_hi : z1[o]));
    }
    return requant_row(b2 + fc2, QF_ROW(qs, QF_S_OUT), 0) + requant_row(z0[QF_FC0_OUT - 1], QF_ROW(qs, QF_S_SKIP), 0);
}
#endif
#undef SHIFT_ROWS

#if defined(QF_SIMD) && !defined(QF_USE_VNNI)
/* fc0_impl for inputs up to 255 without VNNI: the weights are widened to int16 and vpmaddwd sums pairs of
   products (at most 2 * 255 * 128 in magnitude: no saturation), so it is exact for any byte. One 16-byte
   piece of a group is outputs 4q..4q+3 times inputs 4g..4g+3. */
static void fc0_wide(const int8_t *w0g, const int32_t *b0, const uint8_t *x, const int32_t *nnz, int64_t n,
                     int32_t *out)
{
    __m256i s0 = _mm256_setzero_si256(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t t = 0; t < n; t++) {
        const int64_t g = nnz[t];
        const __m256i xv = _mm256_broadcastq_epi64(_mm_cvtepu8_epi16(_mm_cvtsi32_si128(load_i32(x + 4 * g))));
        const int8_t *wg = w0g + W0G_GROUP * g;
#  define WIDE(k) _mm256_madd_epi16(_mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(wg + 16 * (k)))), xv)
        s0 = _mm256_add_epi32(s0, WIDE(0));
        s1 = _mm256_add_epi32(s1, WIDE(1));
        s2 = _mm256_add_epi32(s2, WIDE(2));
        s3 = _mm256_add_epi32(s3, WIDE(3));
#  undef WIDE
    }
    /* hadd leaves outputs (0 1 4 5 | 2 3 6 7) of each eight; the qword permutation sorts them */
    vstore256(out, _mm256_add_epi32(vload256(b0), _mm256_permute4x64_epi64(_mm256_hadd_epi32(s0, s1), 0xD8)));
    vstore256(out + 8, _mm256_add_epi32(vload256(b0 + 8),
                                        _mm256_permute4x64_epi64(_mm256_hadd_epi32(s2, s3), 0xD8)));
}
#endif

/* True when the map marks no group ((l1 + 31) / 32 bytes): fc_0 needs no widening whatever its inputs. */
QF_INLINE int no_group_saturates(const uint8_t *sat, int64_t l1)
{
    if (!sat)
        return 0;
    uint8_t any = 0;
    for (int64_t i = 0; i < (l1 + 31) / 32; i++)
        any |= sat[i];
    return any == 0;
}

/* What a record's pass decides from the record alone: how fc_0's input is computed (plan_x) and which head runs
   (lean_head_plan). The stand-alone forward_scheme decides it on every call; the search's evaluate keeps one per
   layer stack in its context's plan slots, decided on the stack's first evaluation. tag and qs say which
   variant decided it, from which record: a plan is only used by the variant that made it, for that record. */
typedef struct {
    int64_t tag;
    const int64_t *qs;
    x_plan x;
    int32_t head;
} scheme_plan;

_Static_assert(sizeof(scheme_plan) <= QF_CX_PLAN_WORDS * sizeof(int64_t), "a plan outgrows its context slot");

static char plan_tag_anchor;                             /* one per variant: its address tags the variant's plans */
#define PLAN_TAG ((int64_t)(intptr_t)&plan_tag_anchor)

static void decide_plan(const int64_t *qs, scheme_plan *p)
{
    memset(p, 0, sizeof *p);
    p->x = plan_x(qs);
    p->head = lean_head_plan(qs);
    p->qs = qs;
    p->tag = PLAN_TAG;
}

static int64_t forward_scheme_planned(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, const int64_t *qs,
                                      const scheme_plan *plan, const int8_t *w0g, const uint8_t *fc0_sat,
                                      const int32_t *b0, const int8_t *w1g, const int32_t *b1, const int8_t *w2,
                                      int64_t b2, uint8_t *x, int32_t *nnz, int32_t *fc0_out)
{
    /* fc_0 over the non-zero 4-byte groups. Inputs above 127 (resolution 255) could saturate vpmaddubsw, so
       without VNNI the groups holding one take fc0_wide, unless fc0_sat says their weights cannot (Stockfish's
       net: all but 0-2 groups of 256 a stack; nets trained in float: all). */
    int32_t z0[QF_FC0_OUT];
#if defined(QF_USE_VNNI) || defined(QF_SCALAR)
    (void)fc0_sat;
    fc0_impl(w0g, b0, x, nnz, transform_scheme(acc_us, acc_them, l1, qs, &plan->x, x, nnz, NULL, NULL, NULL), z0);
#else
    if (QF_ROW(qs, QF_S_X)[QF_SCHEME_Q_HI] <= 127 || no_group_saturates(fc0_sat, l1)) {
        fc0_impl(w0g, b0, x, nnz, transform_scheme(acc_us, acc_them, l1, qs, &plan->x, x, nnz, NULL, NULL, NULL),
                 z0);
    } else {
        int32_t nnz_hi[l1 / 4 + 16];
        int64_t n_hi = 0;
        const int64_t n = transform_scheme(acc_us, acc_them, l1, qs, &plan->x, x, nnz, nnz_hi, &n_hi, fc0_sat);
        fc0_impl(w0g, b0, x, nnz, n, z0);
        fc0_wide(w0g, z0, x, nnz_hi, n_hi, z0);
    }
#endif
    for (int o = 0; o < QF_FC0_OUT; o++)
        fc0_out[o] = z0[o];
    if (plan->head)
        return lean_head(z0, qs, plan->head, w1g, b1, w2, b2);

    /* SqrClippedReLU and ClippedReLU of z0[0..14] */
    const int64_t *qsq = QF_ROW(qs, QF_S_SQR), *lim = QF_ROW(qs, QF_S_SQR_LIMIT) + QF_SCHEME_Q_HI,
                  *q0 = QF_ROW(qs, QF_S_AC0), *sq_hi = qsq + QF_SCHEME_Q_HI, *h_hi = q0 + QF_SCHEME_Q_HI;
    int32_t l1in[QF_FC1_IN];
    enum { nh = QF_FC0_OUT - 1 };
    int64_t hv[nh], sq[nh], h[nh];
    for (int o = 0; o < nh; o++) {
        const int64_t v = z0[o];
        int64_t c = v < 0 ? -v : v;
        c = c > lim[o] ? lim[o] : c;
        hv[o] = v;
        sq[o] = c * c;
    }
    requant_rows(sq, nh, qsq, sq);
    requant_rows(hv, nh, q0, h);
    for (int o = 0; o < nh; o++) {
        l1in[o] = (int32_t)(sq[o] > sq_hi[o] ? sq_hi[o] : sq[o]);
        l1in[nh + o] = (int32_t)(h[o] < 0 ? 0 : (h[o] > h_hi[o] ? h_hi[o] : h[o]));
    }
    for (int i = 2 * nh; i < QF_FC1_IN; i++)
        l1in[i] = 0;

    /* fc_1 (int32 sums: the quantiser proves they fit, quantfish/quant/build.py), ClippedReLU, fc_2 */
    const int64_t *q1 = QF_ROW(qs, QF_S_AC1), *c_hi = q1 + QF_SCHEME_Q_HI;
    int64_t z1[QF_FC1_OUT];
    fc1_scheme(w1g, b1, l1in, z1);
    requant_rows(z1, QF_FC1_OUT, q1, z1);
    int64_t z2 = b2;
    for (int o = 0; o < QF_FC1_OUT; o++) {
        const int64_t c = z1[o] < 0 ? 0 : (z1[o] > c_hi[o] ? c_hi[o] : z1[o]);
        z2 += (int64_t)w2[o] * c;
    }
    return requant_row(z2, QF_ROW(qs, QF_S_OUT), 0) + requant_row(z0[QF_FC0_OUT - 1], QF_ROW(qs, QF_S_SKIP), 0);
}

QF_API int64_t QF(forward_scheme)(const int16_t *acc_us, const int16_t *acc_them, int64_t l1, const int64_t *qs,
                                  const int8_t *w0g, const uint8_t *fc0_sat, const int32_t *b0, const int8_t *w1g,
                                  const int32_t *b1, const int8_t *w2, int64_t b2, uint8_t *x, int32_t *nnz,
                                  int32_t *fc0_out)
{
    scheme_plan plan;
    decide_plan(qs, &plan);
    return forward_scheme_planned(acc_us, acc_them, l1, qs, &plan, w0g, fc0_sat, b0, w1g, b1, w2, b2, x, nnz,
                                  fc0_out);
}

/* ------------------------------------------------------------------------------------------------------ */
/* The search's whole evaluation in one call: the lazy accumulator walk-back of quantfish/nnue/stack.py               */
/* (ensure_accumulator, with the refresh cache of ckernel.refresh_cached_c) and then forward, on the arrays */
/* an evaluation context lists (architecture.EVAL_CONTEXT_FIELDS; quantfish/nnue/kernel/ceval.py builds it). Done in Numba,  */
/* the same steps cost the search about as much as the kernel's own work.                                    */
/* ------------------------------------------------------------------------------------------------------ */

#define CX_PTR(cx, type, field) ((type *)(intptr_t)(cx)[QF_CX_##field])

/* XOR mask putting a square into the perspective's view (see quantfish/nnue/features.py: orient). */
QF_INLINE int64_t feat_orient(int64_t persp, int64_t ksq)
{
    return ((ksq & 7) < 4 ? 7 : 0) ^ (persp ? 56 : 0);
}

/* QF_PS_NB * king bucket (quantfish/nnue/features.py: king_bucket_offset). */
QF_INLINE int64_t feat_king_bucket(int64_t persp, int64_t ksq)
{
    const int64_t r = persp ? 7 - (ksq >> 3) : ksq >> 3;
    int64_t f = ksq & 7;
    if (f < 4)
        f = 7 - f;
    return ((7 - r) * 4 + (7 - f)) * QF_PS_NB;
}

/* Plane of a piece code (colour * 8 + type) for a perspective (quantfish/nnue/features.py: piece_plane). */
QF_INLINE int64_t feat_plane(int64_t persp, int64_t piece)
{
    const int64_t pt = piece & 7;
    if (pt == 6)
        return QF_KING_PLANE;
    return 128 * (pt - 1) + ((piece >> 3) == persp ? 0 : 64);
}

/* True when the move that led to ply p moved the perspective's king (a refresh is needed below it). */
QF_INLINE int king_moved(const int32_t *dirty, const int32_t *ndirty, int64_t p, int64_t persp)
{
    const int32_t *row = dirty + p * QF_MAX_DIRTY * 3;
    for (int64_t i = 0; i < ndirty[p]; i++)
        if (row[3 * i] == persp * 8 + 6)
            return 1;
    return 0;
}

/* One perspective's accumulator at ply from the refresh cache: entry (persp, ksq) += board diff, copied out. */
static void refresh_from_cache(const int64_t *cx, const int8_t *board, int64_t persp, int64_t ksq,
                               int16_t *acc_out, int32_t *psqt_out)
{
    const int64_t l1 = cx[QF_CX_L1], nb = cx[QF_CX_NB];
    const int64_t e = persp * 64 + ksq;
    int8_t *cached = CX_PTR(cx, int8_t, CACHE_BOARDS) + e * 64;
    int16_t *entry = CX_PTR(cx, int16_t, CACHE_ACC) + e * l1;
    int32_t *pentry = CX_PTR(cx, int32_t, CACHE_PSQT) + e * nb;
    const int64_t o = feat_orient(persp, ksq), kb = feat_king_bucket(persp, ksq);
    int32_t rem[64], add[64];
    int64_t nr = 0, na = 0;
    for (int64_t w = 0; w < 8; w++) {
        uint64_t a, b;
        memcpy(&a, cached + 8 * w, 8);
        memcpy(&b, board + 8 * w, 8);
        if (a == b)
            continue;
        for (int64_t sq = 8 * w; sq < 8 * w + 8; sq++) {
            const int8_t old = cached[sq], now = board[sq];
            if (old == now)
                continue;
            if (old)
                rem[nr++] = (int32_t)((sq ^ o) + feat_plane(persp, old) + kb);
            if (now)
                add[na++] = (int32_t)((sq ^ o) + feat_plane(persp, now) + kb);
            cached[sq] = now;
        }
    }
    acc_update_impl(CX_PTR(cx, const int16_t, FT_WEIGHTS), CX_PTR(cx, const int32_t, FT_PSQT), l1, nb,
                    entry, pentry, entry, pentry, acc_out, psqt_out, rem, nr, add, na);
}

/* out = the mailbox of ply q, from `board` (ply `ply` > q) with the move records of plies q + 1..ply undone: each
   move's destination squares emptied, then its origin squares given back their pieces (a captured piece's row
   has the capture square as origin, a promoted piece's none). */
static void board_before(const int8_t *board, const int32_t *dirty, const int32_t *ndirty, int64_t ply, int64_t q,
                         int8_t *out)
{
    memcpy(out, board, 64);
    for (int64_t p = ply; p > q; p--) {
        const int32_t *row = dirty + p * QF_MAX_DIRTY * 3;
        for (int64_t i = 0; i < ndirty[p]; i++)
            if (row[3 * i + 2] != QF_NO_SQ)
                out[row[3 * i + 2]] = 0;
        for (int64_t i = 0; i < ndirty[p]; i++)
            if (row[3 * i + 1] != QF_NO_SQ)
                out[row[3 * i + 1]] = (int8_t)row[3 * i];
    }
}

/* acc[p] = acc[p - 1] updated by the move record of ply p, for one perspective whose king stands on ksq. */
static void update_from_parent(const int64_t *cx, int64_t p, int64_t persp, int64_t ksq)
{
    const int64_t l1 = cx[QF_CX_L1], nb = cx[QF_CX_NB];
    const int32_t *row = CX_PTR(cx, const int32_t, DIRTY) + p * QF_MAX_DIRTY * 3;
    const int64_t nd = CX_PTR(cx, const int32_t, NDIRTY)[p];
    const int64_t o = feat_orient(persp, ksq), kb = feat_king_bucket(persp, ksq);
    int32_t rem[QF_MAX_DIRTY], add[QF_MAX_DIRTY];
    int64_t nr = 0, na = 0;
    for (int64_t i = 0; i < nd; i++) {
        const int64_t base = feat_plane(persp, row[3 * i]) + kb;
        if (row[3 * i + 1] != QF_NO_SQ)
            rem[nr++] = (int32_t)((row[3 * i + 1] ^ o) + base);
        if (row[3 * i + 2] != QF_NO_SQ)
            add[na++] = (int32_t)((row[3 * i + 2] ^ o) + base);
    }
    int16_t *acc = CX_PTR(cx, int16_t, ACC);
    int32_t *psqt = CX_PTR(cx, int32_t, PSQT);
    acc_update_impl(CX_PTR(cx, const int16_t, FT_WEIGHTS), CX_PTR(cx, const int32_t, FT_PSQT), l1, nb,
                    acc + ((p - 1) * 2 + persp) * l1, psqt + ((p - 1) * 2 + persp) * nb,
                    acc + (p * 2 + persp) * l1, psqt + (p * 2 + persp) * nb, NULL, NULL, rem, nr, add, na);
}

/* (psqt, positional) in one int64: psqt in the high half, positional in the low (both fit 32 bits). */
QF_INLINE int64_t pack_outputs(int64_t psqt_out, int64_t positional)
{
    return (int64_t)((uint64_t)psqt_out << 32) | (int64_t)(uint32_t)(int32_t)positional;
}

QF_API int64_t QF(evaluate)(int64_t *cx, int64_t ply, const int8_t *board, int64_t ksq_white,
                            int64_t ksq_black, int64_t side, int64_t bucket)
{
    const int64_t l1 = cx[QF_CX_L1], nb = cx[QF_CX_NB];
    int16_t *acc = CX_PTR(cx, int16_t, ACC);
    int32_t *psqt = CX_PTR(cx, int32_t, PSQT);
    uint8_t *computed = CX_PTR(cx, uint8_t, COMPUTED);
    const int32_t *dirty = CX_PTR(cx, const int32_t, DIRTY);
    const int32_t *ndirty = CX_PTR(cx, const int32_t, NDIRTY);
    for (int64_t persp = 0; persp < 2; persp++) {
        if (computed[ply * 2 + persp])
            continue;
        const int64_t ksq = persp ? ksq_black : ksq_white;
        int64_t q = ply;
        while (!computed[q * 2 + persp] && q > 0 && !king_moved(dirty, ndirty, q, persp))
            q--;
        if (!computed[q * 2 + persp]) {
            if (q == ply || q == 0) {
                refresh_from_cache(cx, board, persp, ksq, acc + (ply * 2 + persp) * l1,
                                   psqt + (ply * 2 + persp) * nb);
                computed[ply * 2 + persp] = 1;
                continue;
            }
            /* The king moved into ply q, whose accumulator was never needed (its evaluation came from the table
               or the evaluation cache): refresh ply q, not this one, so that the plies between and q's other
               children update from it instead of each refreshing (bench: 1.44M refreshes down to 0.55M). */
            int8_t board_q[64];
            board_before(board, dirty, ndirty, ply, q, board_q);
            refresh_from_cache(cx, board_q, persp, ksq, acc + (q * 2 + persp) * l1, psqt + (q * 2 + persp) * nb);
            computed[q * 2 + persp] = 1;
        }
        for (int64_t p = q + 1; p <= ply; p++) {
            update_from_parent(cx, p, persp, ksq);
            computed[p * 2 + persp] = 1;
        }
    }
    /* The bucket's layer stack, then the forward pass of the net's format. */
    const int16_t *us = acc + (ply * 2 + side) * l1, *them = acc + (ply * 2 + (1 - side)) * l1;
    const int64_t d = (int64_t)psqt[(ply * 2 + side) * nb + bucket] - psqt[(ply * 2 + (1 - side)) * nb + bucket];
    const int8_t *w0g = CX_PTR(cx, const int8_t, W0G) + bucket * (l1 / 4) * W0G_GROUP;
    const int32_t *b0 = CX_PTR(cx, const int32_t, B0) + bucket * QF_FC0_OUT;
    const int8_t *w1g = CX_PTR(cx, const int8_t, W1G) + bucket * (QF_FC1_IN / 4) * W1G_GROUP;
    const int32_t *b1 = CX_PTR(cx, const int32_t, B1) + bucket * QF_FC1_OUT;
    const int8_t *w2 = CX_PTR(cx, const int8_t, W2) + bucket * QF_FC2_IN;
    const int64_t b2 = CX_PTR(cx, const int64_t, B2)[bucket];
    uint8_t *x = CX_PTR(cx, uint8_t, X);
    int32_t *nnz = CX_PTR(cx, int32_t, NNZ), *fc0_out = CX_PTR(cx, int32_t, WORK);
    const int64_t *qscheme = CX_PTR(cx, const int64_t, QSCHEME);
    if (qscheme) {
        /* A Quantfish-format net: its scheme record's forward pass and PSQT requantisation. */
        const int64_t *qs = qscheme + bucket * QF_SCHEME_SITES * QF_SCHEME_ROW;
        const uint8_t *fc0_sat = CX_PTR(cx, const uint8_t, FC0_SAT) + bucket * ((l1 + 31) / 32);
        scheme_plan local, *plan = &local;
        if (bucket < cx[QF_CX_PLAN_SLOTS]) {
            plan = (scheme_plan *)(cx + QF_CX_SIZE + bucket * QF_CX_PLAN_WORDS);
            if (plan->tag != PLAN_TAG || plan->qs != qs)
                decide_plan(qs, plan);
        } else {
            decide_plan(qs, plan);
        }
        const int64_t positional = forward_scheme_planned(us, them, l1, qs, plan, w0g, fc0_sat, b0, w1g, b1, w2, b2,
                                                          x, nnz, fc0_out);
        return pack_outputs(requant_row(d, QF_ROW(qs, QF_S_PSQT), 0), positional);
    }
    const int64_t positional = QF(forward)(us, them, l1, cx[QF_CX_FT_SHIFT], w0g, b0, w1g, b1, w2, b2, x, nnz,
                                           fc0_out);
    return pack_outputs(d / 2, positional);     /* C division truncates, as tdiv does */
}

/* ------------------------------------------------------------------------------------------------------ */
/* Variant-independent entry points (scalar translation unit only)                                       */
/* ------------------------------------------------------------------------------------------------------ */

#if defined(QF_SCALAR)

/* CPU features usable by this process (CPUID, and the OS saving the register state), as bits:
   1 = AVX2 (+FMA, BMI2, POPCNT), 2 = AVX-512 F/BW/VL/DQ, 4 = AVX-512 VNNI (with 2). */
QF_API int64_t qf_cpu_features(void)
{
    int64_t f = 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("bmi2")
        && __builtin_cpu_supports("popcnt"))
        f |= QF_CPU_AVX2;
    if ((f & QF_CPU_AVX2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
        && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
        f |= QF_CPU_AVX512;
    if ((f & QF_CPU_AVX512) && __builtin_cpu_supports("avx512vnni"))
        f |= QF_CPU_AVX512VNNI;
#endif
    return f;
}

/* Identifies the sources and flags the library was built from (checked by quantfish/nnue/kernel/loader.py). The marker
   lets quantfish/nnue/kernel/build.py read it from the file without loading the library. */
static const char qf_build_id_str[] = "QFKERNEL-BUILD-ID:" QF_BUILD_ID ";";

QF_API const char *qf_build_id(void)
{
    return qf_build_id_str + 18;
}

/* The architecture constants this library was compiled with (QF_ARCH_VALUES of qfarch.h, in the order of
   quantfish/nnue/architecture.py's C_CONSTANTS): writes at most n of them to out and returns how many there are.
   quantfish/nnue/kernel/loader.py refuses a library whose constants are not the Python side's. */
QF_API int64_t qf_arch(int64_t *out, int64_t n)
{
    static const int64_t values[] = QF_ARCH_VALUES;
    const int64_t count = (int64_t)(sizeof values / sizeof values[0]);
    for (int64_t i = 0; i < n && i < count; i++)
        out[i] = values[i];
    return count;
}
#endif
