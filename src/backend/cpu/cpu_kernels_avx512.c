/*
 * cpu_kernels_avx512.c — AVX-512 versions of the fast CPU backend's vector
 * kernels. This file alone is compiled with -mavx512f -mavx512bw -mavx512dq
 * -mavx512vl -mfma -mf16c (see meson.build); nothing here runs unless
 * sdpa__cpu_kernels_select() found those features at run time.
 *
 * gemm is a register-blocked micro-kernel: a block of 8 rows of C x 32
 * columns (16 zmm accumulators) when the shape allows (tiles of 64), else up
 * to 6 rows x 64 columns (24 accumulators), computed over all of K with one
 * broadcast of A per row and one load of B per 16 columns per k, the last
 * vector masked for N not a multiple of 16 (the 8 x 32 block is as fast as
 * OpenBLAS sgemm here, ~78% of the FMA peak). exp is 2^(x log2 e) with
 * round-to-nearest range reduction, a degree-6 polynomial on [-1/2, 1/2]
 * (error ~1e-7 relative) and scalef, which gives exactly 0 for -inf and keeps
 * NaN.
 */
#include "cpu_internal.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define SDPA_AI static inline __attribute__((always_inline))

SDPA_AI __mmask16 tail_mask(int n) /* n in 1..16 */
{
    return (__mmask16)(n >= 16 ? 0xFFFFu : ((1u << n) - 1u));
}

/* v, kept in a register: without the empty asm, GCC folds the load that
 * made v into each FMA that uses it, loading it once per use. */
SDPA_AI __m512 in_register(__m512 v)
{
    __asm__("" : "+v"(v));
    return v;
}

/* C(MR x NV*16) (+)= A(MR x K) B(K x NV*16); last vector masked by `last`.
 * B's vectors are held in registers for the MR rows (in_register: GCC
 * folded them into the FMAs, loading each once per row, in the kernels of
 * 2 and 3 rows; with one row each has one use, and folding is right). */
SDPA_AI void ukernel(const int MR, const int NV, int K, const float *A,
                     ptrdiff_t a_rs, ptrdiff_t a_cs, const float *B,
                     ptrdiff_t ldb, float *C, ptrdiff_t ldc, __mmask16 last,
                     int accumulate, const float *c_scale)
{
    __m512 c[8][4];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) c[r][v] = _mm512_setzero_ps();
    for (int k = 0; k < K; k++) {
        const float *b = B + k * ldb;
        const float *a = A + k * a_cs;
        __m512 bv[4];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            bv[v] = v == NV - 1 ? _mm512_maskz_loadu_ps(last, b + 16 * v)
                                : _mm512_loadu_ps(b + 16 * v);
            if (MR > 1) bv[v] = in_register(bv[v]);
        }
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            const __m512 av = _mm512_set1_ps(a[r * a_rs]);
#pragma GCC unroll 4
            for (int v = 0; v < NV; v++) c[r][v] = _mm512_fmadd_ps(av, bv[v], c[r][v]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
        float *cr = C + r * ldc;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            const __mmask16 m = v == NV - 1 ? last : (__mmask16)0xFFFF;
            __m512 x = c[r][v];
            if (accumulate && c_scale)
                x = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, cr + 16 * v),
                                    _mm512_set1_ps(c_scale[r]), x);
            else if (accumulate)
                x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(m, cr + 16 * v));
            _mm512_mask_storeu_ps(cr + 16 * v, m, x);
        }
    }
}

typedef void (*ukernel_fn)(int K, const float *A, ptrdiff_t a_rs, ptrdiff_t a_cs,
                           const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc,
                           __mmask16 last, int accumulate, const float *c_scale);

#define UK(MR, NV)                                                               \
    static void uk_##MR##_##NV(int K, const float *A, ptrdiff_t a_rs,            \
                               ptrdiff_t a_cs, const float *B, ptrdiff_t ldb,    \
                               float *C, ptrdiff_t ldc, __mmask16 last, int acc, \
                               const float *cs)                                  \
    {                                                                            \
        ukernel(MR, NV, K, A, a_rs, a_cs, B, ldb, C, ldc, last, acc, cs);        \
    }
#define UK_ROW(MR) UK(MR, 1) UK(MR, 2) UK(MR, 3) UK(MR, 4)
UK_ROW(1) UK_ROW(2) UK_ROW(3) UK_ROW(4) UK_ROW(5) UK_ROW(6)
UK(8, 2)
#define UK_REF(MR) { uk_##MR##_1, uk_##MR##_2, uk_##MR##_3, uk_##MR##_4 }
static const ukernel_fn uk_table[6][4] = {
    UK_REF(1), UK_REF(2), UK_REF(3), UK_REF(4), UK_REF(5), UK_REF(6),
};

static void gemm_avx512(int M, int N, int K, const float *A, ptrdiff_t a_rs,
                        ptrdiff_t a_cs, const float *B, ptrdiff_t ldb, float *C,
                        ptrdiff_t ldc, int accumulate, const float *c_scale)
{
    if (K == 0) {
        sdpa__cpu_gemm_k0(M, N, C, ldc, accumulate, c_scale);
        return;
    }
    if (M % 8 == 0 && N % 32 == 0) {
        /* 8 rows x 32 columns (16 accumulators): the 64-wide tiles, where
         * 6 x 64 would leave a remainder block of 4 rows */
        for (int n0 = 0; n0 < N; n0 += 32)
            for (int m0 = 0; m0 < M; m0 += 8)
                uk_8_2(K, A + m0 * a_rs, a_rs, a_cs, B + n0, ldb, C + m0 * ldc + n0,
                                ldc, 0xFFFF, accumulate, c_scale ? c_scale + m0 : NULL);
        return;
    }
    for (int n0 = 0; n0 < N; n0 += 64) {
        const int nn = N - n0 < 64 ? N - n0 : 64;
        const int nv = (nn + 15) / 16;
        const __mmask16 last = tail_mask(nn - (nv - 1) * 16);
        for (int m0 = 0; m0 < M; m0 += 6) {
            const int mr = M - m0 < 6 ? M - m0 : 6;
            uk_table[mr - 1][nv - 1](K, A + m0 * a_rs, a_rs, a_cs, B + n0, ldb,
                                     C + m0 * ldc + n0, ldc, last, accumulate,
                                     c_scale ? c_scale + m0 : NULL);
        }
    }
}

static void dots_avx512(int M, int N, int K, const float *A, ptrdiff_t lda,
                        const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc)
{
    const int kv = K / 16, kr = K % 16;
    const __mmask16 km = tail_mask(kr ? kr : 16);
    for (int j = 0; j < M; j++) {
        const float *a = A + j * lda;
        for (int i = 0; i < N; i++) {
            const float *b = B + i * ldb;
            __m512 s0 = _mm512_setzero_ps(), s1 = _mm512_setzero_ps();
            int c = 0;
            for (; c + 1 < kv; c += 2) {
                s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + 16 * c), _mm512_loadu_ps(b + 16 * c), s0);
                s1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + 16 * c + 16),
                                     _mm512_loadu_ps(b + 16 * c + 16), s1);
            }
            for (; c < kv; c++)
                s0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + 16 * c), _mm512_loadu_ps(b + 16 * c), s0);
            if (kr)
                s1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(km, a + 16 * kv),
                                     _mm512_maskz_loadu_ps(km, b + 16 * kv), s1);
            C[j * ldc + i] = _mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
        }
    }
}

static void colmax_avx512(const float *S, ptrdiff_t ld, int nk, int nq, float *m)
{
    for (int i0 = 0; i0 < nq; i0 += 16) {
        const __mmask16 msk = tail_mask(nq - i0);
        /* max(s, x) returns x when s is NaN: NaN never enters the max (it
         * reaches the output through exp instead). Four chains (the max's
         * latency would otherwise bound the loop), m joined last, so a NaN
         * m stays NaN as with one chain; max is exact, so the value is the
         * same. */
        const __m512 ninf = _mm512_set1_ps(-INFINITY);
        __m512 mx[4] = {ninf, ninf, ninf, ninf};
        int j = 0;
        for (; j + 3 < nk; j += 4)
            for (int c = 0; c < 4; c++)
                mx[c] = _mm512_max_ps(_mm512_maskz_loadu_ps(msk, S + (j + c) * ld + i0), mx[c]);
        for (; j < nk; j++)
            mx[0] = _mm512_max_ps(_mm512_maskz_loadu_ps(msk, S + j * ld + i0), mx[0]);
        const __m512 t = _mm512_max_ps(_mm512_max_ps(mx[0], mx[1]), _mm512_max_ps(mx[2], mx[3]));
        _mm512_mask_storeu_ps(m + i0, msk, _mm512_max_ps(t, _mm512_maskz_loadu_ps(msk, m + i0)));
    }
}

SDPA_AI __m512 exp512(__m512 x)
{
    const __m512 t = _mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f));
    const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    /* f = t - n in [-1/2, 1/2]; for t = +-inf it is NaN and becomes -1/2 (max
     * returns its second operand on NaN), so scalef gives 0 or inf. */
    const __m512 f = _mm512_max_ps(_mm512_sub_ps(t, n), _mm512_set1_ps(-0.5f));
    /* 2^f = e^(f ln2): Taylor series to degree 6. */
    __m512 p = _mm512_set1_ps(1.5403530393381606e-4f);            /* ln2^6/720 */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.3333558146428443e-3f)); /* ln2^5/120 */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(9.6181291076284772e-3f)); /* ln2^4/24 */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(5.5504108664821580e-2f)); /* ln2^3/6 */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(2.4022650695910071e-1f)); /* ln2^2/2 */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(6.9314718055994531e-1f)); /* ln2 */
    p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(1.0f));
    return _mm512_scalef_ps(p, n);
}

static void expsub_avx512(float *S, ptrdiff_t ld, int nk, int nq,
                          const float *sub, float *sum)
{
    for (int i0 = 0; i0 < nq; i0 += 16) {
        const __mmask16 msk = tail_mask(nq - i0);
        const __m512 sv = _mm512_maskz_loadu_ps(msk, sub + i0);
        __m512 acc0 = _mm512_setzero_ps(), acc1 = _mm512_setzero_ps();
        int j = 0;
        for (; j + 1 < nk; j += 2) {
            float *s0 = S + j * ld + i0, *s1 = s0 + ld;
            const __m512 e0 = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(msk, s0), sv));
            const __m512 e1 = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(msk, s1), sv));
            _mm512_mask_storeu_ps(s0, msk, e0);
            _mm512_mask_storeu_ps(s1, msk, e1);
            acc0 = _mm512_add_ps(acc0, e0);
            acc1 = _mm512_add_ps(acc1, e1);
        }
        if (j < nk) {
            float *s0 = S + j * ld + i0;
            const __m512 e0 = exp512(_mm512_sub_ps(_mm512_maskz_loadu_ps(msk, s0), sv));
            _mm512_mask_storeu_ps(s0, msk, e0);
            acc0 = _mm512_add_ps(acc0, e0);
        }
        if (sum)
            _mm512_mask_storeu_ps(sum + i0, msk,
                                  _mm512_add_ps(_mm512_maskz_loadu_ps(msk, sum + i0),
                                                _mm512_add_ps(acc0, acc1)));
    }
}

static void load_row_avx512(const void *src, sdpa_dtype dtype, int64_t stride,
                            int n, float *dst)
{
    if (stride != 1) {
        for (int e = 0; e < n; e++) dst[e] = sdpa__load_float(src, dtype, e * stride);
        return;
    }
    if (dtype == SDPA_DTYPE_F32) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    const uint16_t *s = src;
    for (int e = 0; e < n; e += 16) {
        const __mmask16 msk = tail_mask(n - e);
        const __m256i h = _mm256_maskz_loadu_epi16(msk, s + e);
        __m512 f;
        if (dtype == SDPA_DTYPE_F16)
            f = _mm512_cvtph_ps(h);
        else
            f = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
        _mm512_mask_storeu_ps(dst + e, msk, f);
    }
}

static void dsoft_avx512(const float *P, float *dP, const float *th, ptrdiff_t ld,
                         int nk, int nq, const float *dr)
{
    const __m512 one = _mm512_set1_ps(1.0f);
    for (int i0 = 0; i0 < nq; i0 += 16) {
        const __mmask16 msk = tail_mask(nq - i0);
        const __m512 d = _mm512_maskz_loadu_ps(msk, dr + i0);
        for (int j = 0; j < nk; j++) {
            const __m512 p = _mm512_maskz_loadu_ps(msk, P + j * ld + i0);
            __m512 x = _mm512_mul_ps(p, _mm512_sub_ps(_mm512_maskz_loadu_ps(msk, dP + j * ld + i0), d));
            if (th) {
                const __m512 t = _mm512_maskz_loadu_ps(msk, th + j * ld + i0);
                x = _mm512_mul_ps(x, _mm512_fnmadd_ps(t, t, one));
            }
            const __mmask16 nz = _mm512_cmp_ps_mask(p, _mm512_setzero_ps(), _CMP_NEQ_UQ);
            _mm512_mask_storeu_ps(dP + j * ld + i0, msk, _mm512_maskz_mov_ps(nz, x));
        }
    }
}

static void tilestats_avx512(const float *S, const float *P, const float *M, ptrdiff_t ld,
                             int nk, int nq, float *t, ptrdiff_t tld)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY), one = _mm512_set1_ps(1.0f);
    for (int i0 = 0; i0 < nq; i0 += 16) {
        const __mmask16 msk = tail_mask(nq - i0);
        const __m512 m = _mm512_maskz_loadu_ps(msk, M + i0);
        __m512 a = _mm512_setzero_ps(), l1 = a, l2 = a, l3 = a, ties = a, cnt = a, sum = a,
               sq = a;
        __m512 mn = _mm512_set1_ps(INFINITY), mx = ninf;
        for (int j = 0; j < nk; j++) {
            const __m512 s = _mm512_maskz_loadu_ps(msk, S + j * ld + i0);
            const __m512 e = _mm512_maskz_loadu_ps(msk, P + j * ld + i0);
            const __mmask16 k = _mm512_mask_cmp_ps_mask(msk, s, ninf, _CMP_GT_OQ);
            /* keys at the running maximum are counted, not summed */
            const __mmask16 top = _mm512_mask_cmp_ps_mask(k, s, m, _CMP_EQ_OQ);
            const __mmask16 rest = k & (__mmask16)~top;
            const __m512 e2 = _mm512_mul_ps(e, e);
            /* mask3: lanes outside the mask keep the accumulator */
            a = _mm512_mask3_fmadd_ps(e, _mm512_sub_ps(s, m), a, rest);
            l1 = _mm512_mask_add_ps(l1, rest, l1, e);
            l2 = _mm512_mask_add_ps(l2, rest, l2, e2);
            l3 = _mm512_mask3_fmadd_ps(e2, e, l3, rest);
            ties = _mm512_mask_add_ps(ties, top, ties, one);
            cnt = _mm512_mask_add_ps(cnt, k, cnt, one);
            sum = _mm512_mask_add_ps(sum, k, sum, s);
            sq = _mm512_mask3_fmadd_ps(s, s, sq, k);
            mn = _mm512_mask_min_ps(mn, k, mn, s);
            mx = _mm512_mask_max_ps(mx, k, mx, s);
        }
        _mm512_mask_storeu_ps(t + CPU_TS_A * tld + i0, msk, a);
        _mm512_mask_storeu_ps(t + CPU_TS_P1 * tld + i0, msk, l1);
        _mm512_mask_storeu_ps(t + CPU_TS_P2 * tld + i0, msk, l2);
        _mm512_mask_storeu_ps(t + CPU_TS_P3 * tld + i0, msk, l3);
        _mm512_mask_storeu_ps(t + CPU_TS_TIES * tld + i0, msk, ties);
        _mm512_mask_storeu_ps(t + CPU_TS_CNT * tld + i0, msk, cnt);
        _mm512_mask_storeu_ps(t + CPU_TS_SUM * tld + i0, msk, sum);
        _mm512_mask_storeu_ps(t + CPU_TS_SUMSQ * tld + i0, msk, sq);
        _mm512_mask_storeu_ps(t + CPU_TS_MIN * tld + i0, msk, mn);
        _mm512_mask_storeu_ps(t + CPU_TS_MAX * tld + i0, msk, mx);
    }
}

static void band_avx512(float *S, ptrdiff_t ld, int nk, int nq, const int32_t *lo,
                        const int32_t *hi)
{
    const __m512 ninf = _mm512_set1_ps(-INFINITY);
    for (int i0 = 0; i0 < nq; i0 += 16) {
        const __mmask16 msk = tail_mask(nq - i0);
        const __m512i lv = _mm512_maskz_loadu_epi32(msk, lo + i0);
        const __m512i hv = _mm512_maskz_loadu_epi32(msk, hi + i0);
        for (int j = 0; j < nk; j++) {
            const __m512i jv = _mm512_set1_epi32(j);
            /* lanes outside [lo, hi) */
            const __mmask16 out = _mm512_mask_cmplt_epi32_mask(msk, jv, lv) |
                                  _mm512_mask_cmpge_epi32_mask(msk, jv, hv);
            _mm512_mask_storeu_ps(S + j * ld + i0, out, ninf);
        }
    }
}

static bool nonfinite_avx512(const float *x, ptrdiff_t ld, int n, int m)
{
    const __m512i expo = _mm512_set1_epi32(0x7f800000);
    __mmask16 bad = 0;
    for (int j = 0; j < n; j++)
        for (int d = 0; d < m; d += 16) {
            const __m512i u = _mm512_maskz_loadu_epi32(tail_mask(m - d), x + j * ld + d);
            bad |= _mm512_cmpeq_epi32_mask(_mm512_and_si512(u, expo), expo);
        }
    return bad != 0;
}

static void store_row_avx512(const float *src, float mul, void *dst, sdpa_dtype dtype,
                             int64_t stride, int n)
{
    if (stride != 1) {
        for (int e = 0; e < n; e++) sdpa__store_float(dst, dtype, e * stride, src[e] * mul);
        return;
    }
    const __m512 mv = _mm512_set1_ps(mul);
    for (int e = 0; e < n; e += 16) {
        const __mmask16 msk = tail_mask(n - e);
        const __m512 x = _mm512_mul_ps(_mm512_maskz_loadu_ps(msk, src + e), mv);
        if (dtype == SDPA_DTYPE_F32) {
            _mm512_mask_storeu_ps((float *)dst + e, msk, x);
        } else if (dtype == SDPA_DTYPE_F16) {
            _mm256_mask_storeu_epi16((uint16_t *)dst + e, msk,
                                     _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
        } else {
            /* bf16: round to nearest even; NaN stays NaN (quietened). */
            const __m512i u = _mm512_castps_si512(x);
            const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
            __m512i r = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7FFF)));
            const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
            r = _mm512_mask_or_epi32(r, nan, u, _mm512_set1_epi32(0x00400000));
            _mm256_mask_storeu_epi16((uint16_t *)dst + e, msk,
                                     _mm512_cvtepi32_epi16(_mm512_srli_epi32(r, 16)));
        }
    }
}

/* ---- decode: K/V streamed in their storage dtype, converted in registers -- */

/* 16 (masked: m) elements from element e of an f32 / f16 / bf16 row, as f32. */
SDPA_AI __m512 load_kv16(const void *base, sdpa_dtype dt, ptrdiff_t e, __mmask16 m)
{
    if (dt == SDPA_DTYPE_F32) return _mm512_maskz_loadu_ps(m, (const float *)base + e);
    const __m256i h = _mm256_maskz_loadu_epi16(m, (const uint16_t *)base + e);
    if (dt == SDPA_DTYPE_F16) return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

/* One q8_0 / q4_0 block at blk (the f16 scale d, then 32 int8 or 16 bytes
 * of nibbles) dequantized in registers: elements 0..15 in *lo, 16..31 in
 * *hi. The scale is converted once per block; q8_0: sign-extend 16 bytes
 * per half, convert, times d; q4_0: one zero-extension of the 16 bytes and
 * a table of the 16 values (q - 8) d (exact products, as (q - 8) * d),
 * indexed by the low nibbles and by the high ones shifted down: no convert,
 * no mask, 4 instructions per block besides the scale. */
SDPA_AI void load_block(const unsigned char *blk, sdpa_dtype dt, __m512 *lo, __m512 *hi)
{
    uint16_t dh;
    memcpy(&dh, blk, sizeof dh);
    const __m512 d = _mm512_cvtph_ps(_mm256_set1_epi16((short)dh)); /* broadcast, convert */
    if (dt == SDPA_DTYPE_Q8_0) {
        const __m512i a = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2)));
        const __m512i b = _mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)(blk + 18)));
        *lo = _mm512_mul_ps(_mm512_cvtepi32_ps(a), d);
        *hi = _mm512_mul_ps(_mm512_cvtepi32_ps(b), d);
        return;
    }
    const __m512i x = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(blk + 2)));
    /* the 16 values (q - 8) d, looked up by vpermps (it reads the index's
     * low 4 bits: the low nibble as is, the high one after a shift) */
    const __m512 lut = _mm512_mul_ps(d, _mm512_setr_ps(-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2,
                                                       3, 4, 5, 6, 7));
    *lo = _mm512_permutexvar_ps(x, lut);
    *hi = _mm512_permutexvar_ps(_mm512_srli_epi32(x, 4), lut);
}

/* The 16 sums of v[0..15] in one vector, lane n = sum of v[n]: a transpose
 * tree (45 shuffles and adds instead of 16 horizontal reductions). */
SDPA_AI __m512 hsum16(const __m512 v[16])
{
    __m512 u[4];
    for (int m = 0; m < 4; m++) {
        /* quarters [v_m, v_m+4, v_m+8, v_m+12], each 4 lanes of partial sums */
        const __m512 t0 = _mm512_add_ps(_mm512_shuffle_f32x4(v[m], v[m + 4], 0x44),
                                        _mm512_shuffle_f32x4(v[m], v[m + 4], 0xEE));
        const __m512 t1 = _mm512_add_ps(_mm512_shuffle_f32x4(v[m + 8], v[m + 12], 0x44),
                                        _mm512_shuffle_f32x4(v[m + 8], v[m + 12], 0xEE));
        u[m] = _mm512_add_ps(_mm512_shuffle_f32x4(t0, t1, 0x88),
                             _mm512_shuffle_f32x4(t0, t1, 0xDD));
    }
    /* per quarter p: lane m = the sum of quarter p of u[m] */
    const __m512 s01 = _mm512_add_ps(_mm512_unpacklo_ps(u[0], u[1]), _mm512_unpackhi_ps(u[0], u[1]));
    const __m512 s23 = _mm512_add_ps(_mm512_unpacklo_ps(u[2], u[3]), _mm512_unpackhi_ps(u[2], u[3]));
    return _mm512_add_ps(_mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
}

/* Rows k .. k + NK - 1 (NK 1 or 4) of a block of 4 keys (K elements, f32 /
 * f16 / bf16) times NI query rows of B into the accumulators s[4(k + e) +
 * i]: vector c of each row, then c + 1 (whole vectors unmasked, then the
 * tail masked), so that each of B's vectors is loaded once for the NK keys.
 * Each sum gets the same products in the same order whatever NK. */
SDPA_AI void dots_kv_keys(const int NI, const int NK, const unsigned char *const row[4],
                          sdpa_dtype dt, int K, const float *B, ptrdiff_t ldb, int k,
                          __m512 s[16])
{
    __m512 kv[4];
    int c = 0;
    for (; c + 16 <= K; c += 16) {
#pragma GCC unroll 4
        for (int e = 0; e < NK; e++) kv[e] = load_kv16(row[e], dt, c, (__mmask16)0xFFFF);
#pragma GCC unroll 4
        for (int i = 0; i < NI; i++) {
            const __m512 b0 = _mm512_loadu_ps(B + i * ldb + c);
            const __m512 b = NK > 1 ? in_register(b0) : b0; /* one use: folded */
#pragma GCC unroll 4
            for (int e = 0; e < NK; e++)
                s[4 * (k + e) + i] = _mm512_fmadd_ps(kv[e], b, s[4 * (k + e) + i]);
        }
    }
    if (c < K) {
        const __mmask16 m = tail_mask(K - c);
#pragma GCC unroll 4
        for (int e = 0; e < NK; e++) kv[e] = load_kv16(row[e], dt, c, m);
#pragma GCC unroll 4
        for (int i = 0; i < NI; i++) {
            const __m512 b = _mm512_maskz_loadu_ps(m, B + i * ldb + c);
#pragma GCC unroll 4
            for (int e = 0; e < NK; e++)
                s[4 * (k + e) + i] = _mm512_fmadd_ps(kv[e], b, s[4 * (k + e) + i]);
        }
    }
}

/* NI (<= 4) query rows against M key rows, 4 keys at a time: each K row is
 * loaded and converted once and multiplied into NI accumulators (16
 * independent FMA chains), the 16 sums reduced together by hsum16. Rows
 * come from A's table (any 4 keys, across pages).
 *
 * f32: the 4 rows are read one after the other, each in address order.
 * Reading them interleaved (vector c of each of the 4 rows, then c + 1)
 * computes the same sums in the same order, but on a Zen 4 host streamed K
 * from memory at a third of a plain read's speed (the hardware prefetchers
 * do not follow it), row order at 0.8-0.9 in a scratch loop; with two rows
 * interleaved, decode ran 0.78-0.86x. f16 / bf16 (their K rows prefetched
 * ahead, below): the 4 rows interleaved (dots_kv_keys with NK 4), each of
 * B's vectors loaded once, into a register (in_register), for the 4 keys:
 * 8 loads per 16 FMAs instead of 20, so that the loop is bound by its FMAs
 * (docs/cpu.md has the figures).
 * The block types (rows of 136 or 72 bytes, bound by dequantizing) keep the
 * interleaved order, a whole block (32 elements, one scale) per step: a
 * build reading them in row order was not faster.
 *
 * Prefetch: paged rows and the block types' rows `ahead` rows on into L1
 * (sdpa__cpu_rows_prefetch); contiguous f16 / bf16 rows into L2 (into L1
 * ran 0.87x in a scratch loop), beside the next tile's K that pv_kv prefetches
 * (cpu_forward.c's decode_next_k, which has the figures: neither helped
 * alone); contiguous f32 rows `far` rows on into L2, whole
 * (sdpa__cpu_rows_prefetch_far; pv_kv does the same for V in its first
 * pass; cpu_forward.c's DECODE_FAR_BYTES has the figures). */
SDPA_AI void dots_kv_block(const int NI, int M, int K, const sdpa__cpu_rows *A, sdpa_dtype dt,
                           const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc)
{
    const bool blocks = sdpa__cpu_unit_elems(dt) > 1;
    const size_t usz = sdpa__cpu_unit_bytes(dt);
    const size_t rowb = (size_t)K / sdpa__cpu_unit_elems(dt) * usz;
    const int ahead = sdpa__cpu_kv_ahead(rowb);
    const __mmask8 out_mask = (__mmask8)((1u << NI) - 1u);
    /* contiguous 16-bit rows: K `ahead` rows on into L2 (above) */
    const bool ahead_l2 = sdpa__cpu_k_ahead_l2(A, dt);
    for (int j = 0; j < M; j += 4) {
        for (int t = j + ahead; t < j + ahead + 4; t++) sdpa__cpu_rows_prefetch(A, t, dt, 0, rowb);
        if (ahead_l2)
            for (int t = j + ahead; t < j + ahead + 4; t++) sdpa__cpu_rows_prefetch_l2(A, t, rowb);
        __m512 s[16];
#pragma GCC unroll 16
        for (int n = 0; n < 16; n++) s[n] = _mm512_setzero_ps();
        if (blocks) {
            /* rows past M repeat row j (their sums are not stored) */
            const unsigned char *row[4];
            for (int k = 0; k < 4; k++) row[k] = sdpa__cpu_rows_at(A, j + k < M ? j + k : j);
            for (int c = 0; c < K; c += 32) {
                const size_t off = (size_t)c / 32 * usz;
#pragma GCC unroll 4
                for (int k = 0; k < 4; k++) {
                    __m512 lo, hi;
                    load_block(row[k] + off, dt, &lo, &hi);
#pragma GCC unroll 4
                    for (int i = 0; i < NI; i++) {
                        s[4 * k + i] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(B + i * ldb + c), s[4 * k + i]);
                        s[4 * k + i] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(B + i * ldb + c + 16), s[4 * k + i]);
                    }
                }
            }
        } else if (dt != SDPA_DTYPE_F32 && j + 4 <= M) { /* four keys per step (above) */
            const unsigned char *const row[4] = {sdpa__cpu_rows_at(A, j), sdpa__cpu_rows_at(A, j + 1),
                                                 sdpa__cpu_rows_at(A, j + 2), sdpa__cpu_rows_at(A, j + 3)};
            for (int k = 0; k < 4; k++) sdpa__cpu_rows_prefetch_next(A, j + k);
            dots_kv_keys(NI, 4, row, dt, K, B, ldb, 0, s);
        } else {
            /* rows past M are not read (their sums stay 0 and are not stored) */
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++)
                if (j + k < M) {
                    const unsigned char *const row[4] = {sdpa__cpu_rows_at(A, j + k), NULL, NULL, NULL};
                    sdpa__cpu_rows_prefetch_next(A, j + k);
                    sdpa__cpu_rows_prefetch_far(A, j + k);
                    dots_kv_keys(NI, 1, row, dt, K, B, ldb, k, s);
                }
        }
        const __m512 w = hsum16(s); /* lane 4k + i: key j + k, row i */
        _mm_mask_storeu_ps(C + j * ldc, out_mask, _mm512_castps512_ps128(w));
        if (j + 1 < M) _mm_mask_storeu_ps(C + (j + 1) * ldc, out_mask, _mm512_extractf32x4_ps(w, 1));
        if (j + 2 < M) _mm_mask_storeu_ps(C + (j + 2) * ldc, out_mask, _mm512_extractf32x4_ps(w, 2));
        if (j + 3 < M) _mm_mask_storeu_ps(C + (j + 3) * ldc, out_mask, _mm512_extractf32x4_ps(w, 3));
    }
}

/* acc[r] += sum_k P[r + k*ldp] V(k, the N columns from byte coff) over K
 * keys, NV vectors of 16 columns (FULL: N = 16 NV, no masks; else the
 * lanes of m); with each key, the row V's table names is prefetched
 * (sdpa__cpu_rows_prefetch_next: the next tile's K, in pv_kv_block's first
 * pass only). */
SDPA_AI void pv_kv_keys(const int NR, const int NV, const int FULL, int N, size_t coff, int K,
                        const float *P, ptrdiff_t ldp, const sdpa__cpu_rows *V, sdpa_dtype dt,
                        int ahead, const __mmask16 m[8], __m512 acc[4][8])
{
    const size_t usz = sdpa__cpu_unit_bytes(dt);
    const size_t chunkb =
        (size_t)(N + sdpa__cpu_unit_elems(dt) - 1) / sdpa__cpu_unit_elems(dt) * usz;
    for (int k = 0; k < K; k++) {
        const unsigned char *vr = sdpa__cpu_rows_at(V, k) + coff;
        sdpa__cpu_rows_prefetch(V, k + ahead, dt, coff, chunkb); /* this chunk's lines */
        sdpa__cpu_rows_prefetch_next(V, k);
        sdpa__cpu_rows_prefetch_far(V, k);
        __m512 v[8];
        if (sdpa__cpu_unit_elems(dt) > 1) { /* N is a multiple of 32 */
#pragma GCC unroll 4
            for (int q = 0; q < NV; q += 2) {
                if (N > 16 * q) load_block(vr + (size_t)q / 2 * usz, dt, &v[q], &v[q + 1]);
                else v[q] = v[q + 1] = _mm512_setzero_ps();
            }
        } else {
#pragma GCC unroll 8
            for (int q = 0; q < NV; q++)
                v[q] = load_kv16(vr, dt, 16 * q, FULL ? (__mmask16)0xFFFF : m[q]);
        }
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            const __m512 p = _mm512_set1_ps(P[r + k * ldp]);
#pragma GCC unroll 8
            for (int q = 0; q < NV; q++) acc[r][q] = _mm512_fmadd_ps(p, v[q], acc[r][q]);
        }
    }
}

/* C (NR rows x NV*16 columns, N of them, from c0) = C * c_scale + P^T V
 * over K keys: one pass over the keys, each V row chunk loaded and
 * converted once for the NR rows (NR * NV <= 16 accumulators). */
SDPA_AI void pv_kv_pass(const int NR, const int NV, int N, int c0, int Dv, int K,
                        const float *P, ptrdiff_t ldp, const sdpa__cpu_rows *V, sdpa_dtype dt,
                        float *C, ptrdiff_t ldc, const float *c_scale)
{
    const bool blocks = sdpa__cpu_unit_elems(dt) > 1;
    const size_t usz = sdpa__cpu_unit_bytes(dt);
    const int ahead = sdpa__cpu_kv_ahead((size_t)Dv / sdpa__cpu_unit_elems(dt) * usz);
    /* the byte offset of column c0 in a row */
    const size_t coff = (size_t)c0 / sdpa__cpu_unit_elems(dt) * usz;
    __mmask16 m[8];
    for (int q = 0; q < NV; q++) m[q] = N > 16 * q ? tail_mask(N - 16 * q) : 0;
    __m512 acc[4][8];
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) {
        const __m512 sc = _mm512_set1_ps(c_scale ? c_scale[r] : 1.0f);
#pragma GCC unroll 8
        for (int q = 0; q < NV; q++)
            acc[r][q] = _mm512_mul_ps(_mm512_maskz_loadu_ps(m[q], C + r * ldc + 16 * q), sc);
    }
    if (N == 16 * NV && !blocks) /* whole vectors: unmasked loads */
        pv_kv_keys(NR, NV, 1, N, coff, K, P, ldp, V, dt, ahead, m, acc);
    else
        pv_kv_keys(NR, NV, 0, N, coff, K, P, ldp, V, dt, ahead, m, acc);
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 8
        for (int q = 0; q < NV; q++) _mm512_mask_storeu_ps(C + r * ldc + 16 * q, m[q], acc[r][q]);
}

/* C (NR rows x N <= 128 columns from c0) = C * c_scale + P^T V over K keys
 * (rows of V from its table, Dv columns; the block types: whole blocks, c0
 * a multiple of 128). Up to 64 columns: one pass for the NR rows. Wider,
 * f32: passes of 2 rows x 128 columns, so that each pass reads whole rows
 * of up to 128 columns in address order; passes of 64 columns over rows of
 * 128 read every other 256 bytes, which streamed from memory at half a
 * plain read's speed on a Zen 4 host (the rows one pass brought in are
 * still in L1 / L2 for the next: decode_pv_kv walks 64 keys at a time).
 * Wider, the other types: two passes of 64 columns for all NR rows, which
 * convert (dequantize) each row once; converting it once per 2 rows ran
 * slower. */
SDPA_AI void pv_kv_block(const int NR, int N, int c0, int Dv, int K, const float *P,
                         ptrdiff_t ldp, const sdpa__cpu_rows *V, sdpa_dtype dt, float *C,
                         ptrdiff_t ldc, const float *c_scale)
{
    if (N <= 64) {
        pv_kv_pass(NR, 4, N, c0, Dv, K, P, ldp, V, dt, C, ldc, c_scale);
        return;
    }
    sdpa__cpu_rows rest = *V; /* the later passes: no `next` or `far` prefetch */
    rest.next = NULL;
    rest.far = 0;
    if (dt != SDPA_DTYPE_F32) { /* convert each row's chunk once: 64 columns */
        pv_kv_pass(NR, 4, 64, c0, Dv, K, P, ldp, V, dt, C, ldc, c_scale);
        pv_kv_pass(NR, 4, N - 64, c0 + 64, Dv, K, P, ldp, &rest, dt, C + 64, ldc, c_scale);
        return;
    }
#pragma GCC unroll 2
    for (int r0 = 0; r0 < NR; r0 += 2) {
        const float *cs = c_scale ? c_scale + r0 : NULL;
        const sdpa__cpu_rows *v = r0 == 0 ? V : &rest;
        if (NR - r0 >= 2)
            pv_kv_pass(2, 8, N, c0, Dv, K, P + r0, ldp, v, dt, C + r0 * ldc, ldc, cs);
        else
            pv_kv_pass(1, 8, N, c0, Dv, K, P + r0, ldp, v, dt, C + r0 * ldc, ldc, cs);
    }
}

#define PV_KV_COLS 128
#include "cpu_decode_tables.h"

/* Q rows transposed, 16 x 16 floats at a time in registers: unpack pairs of
 * rows, shuffle within 128-bit lanes (4 x 4 blocks), then move 128-bit lanes
 * twice; rows past R read as 0 and columns past C are neither loaded nor
 * stored (masks). Times mul on load. */
static void transpose_avx512(int R, int C, const float *src, ptrdiff_t lds, float *dst,
                             ptrdiff_t ldd, float mul)
{
    const __m512 mv = _mm512_set1_ps(mul);
    for (int c0 = 0; c0 < C; c0 += 16) {
        const int nc = C - c0 < 16 ? C - c0 : 16;
        const __mmask16 lm = tail_mask(nc);
        for (int r0 = 0; r0 < R; r0 += 16) {
            const int nr = R - r0 < 16 ? R - r0 : 16;
            __m512 x[16], t[16];
#pragma GCC unroll 16
            for (int i = 0; i < 16; i++)
                x[i] = i < nr ? _mm512_mul_ps(_mm512_maskz_loadu_ps(lm, src + (r0 + i) * lds + c0), mv)
                              : _mm512_setzero_ps();
#pragma GCC unroll 8
            for (int k = 0; k < 8; k++) {
                t[2 * k] = _mm512_unpacklo_ps(x[2 * k], x[2 * k + 1]);
                t[2 * k + 1] = _mm512_unpackhi_ps(x[2 * k], x[2 * k + 1]);
            }
            /* x[4m + c], lane L: column 4L + c of rows 4m..4m+3 */
#pragma GCC unroll 4
            for (int m = 0; m < 4; m++) {
                x[4 * m] = _mm512_shuffle_ps(t[4 * m], t[4 * m + 2], 0x44);
                x[4 * m + 1] = _mm512_shuffle_ps(t[4 * m], t[4 * m + 2], 0xEE);
                x[4 * m + 2] = _mm512_shuffle_ps(t[4 * m + 1], t[4 * m + 3], 0x44);
                x[4 * m + 3] = _mm512_shuffle_ps(t[4 * m + 1], t[4 * m + 3], 0xEE);
            }
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                const __m512 v = _mm512_shuffle_f32x4(x[c], x[4 + c], 0x88);
                const __m512 w = _mm512_shuffle_f32x4(x[c], x[4 + c], 0xDD);
                const __m512 v2 = _mm512_shuffle_f32x4(x[8 + c], x[12 + c], 0x88);
                const __m512 w2 = _mm512_shuffle_f32x4(x[8 + c], x[12 + c], 0xDD);
                t[c] = _mm512_shuffle_f32x4(v, v2, 0x88);
                t[c + 8] = _mm512_shuffle_f32x4(v, v2, 0xDD);
                t[c + 4] = _mm512_shuffle_f32x4(w, w2, 0x88);
                t[c + 12] = _mm512_shuffle_f32x4(w, w2, 0xDD);
            }
            const __mmask16 rm = tail_mask(nr);
#pragma GCC unroll 16
            for (int j = 0; j < 16; j++)
                if (j < nc) _mm512_mask_storeu_ps(dst + (c0 + j) * ldd + r0, rm, t[j]);
        }
    }
}

const sdpa__cpu_kernels sdpa__cpu_kernels_avx512 = {
    .name = "avx512",
    .gemm = gemm_avx512,
    .dots = dots_avx512,
    .colmax = colmax_avx512,
    .expsub = expsub_avx512,
    .load_row = load_row_avx512,
    .store_row = store_row_avx512,
    .transpose = transpose_avx512,
    .dsoft = dsoft_avx512,
    .nonfinite = nonfinite_avx512,
    .band = band_avx512,
    .tilestats = tilestats_avx512,
    .dots_kv = decode_dots_kv,
    .pv_kv = decode_pv_kv,
};
