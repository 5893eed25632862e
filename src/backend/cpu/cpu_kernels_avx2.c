/*
 * cpu_kernels_avx2.c — AVX2 + FMA + F16C (x86-64-v3) versions of the fast CPU
 * backend's vector kernels, for the CPUs without AVX-512 (every Intel desktop
 * CPU since 12th gen, AMD before Zen 4). This file alone is compiled with
 * -mavx2 -mfma -mf16c (see meson.build); nothing here runs unless
 * sdpa__cpu_kernels_select() (cpu_kernels_select.c) found those features at
 * run time. Same entry points and behaviour as cpu_kernels_avx512.c, 8 lanes
 * wide: tails use maskload/maskstore (masked-off lanes never touch memory).
 *
 * gemm is a register-blocked micro-kernel of up to 6 rows x 16 columns of C
 * (12 ymm accumulators, 2 for B, 1 broadcast: 15 of the 16 registers), over
 * all of K. exp is 2^(x log2 e) with round-to-nearest range reduction, the
 * degree-6 polynomial of the AVX-512 file, and 2^n added to the polynomial's
 * exponent field: exp(-inf) is exactly 0 (as is every result under 2^-125),
 * overflow gives inf, NaN stays NaN.
 */
#include "cpu_internal.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

#define SDPA_AI static inline __attribute__((always_inline))

/* Lane mask for the first n lanes (n in 1..8). */
SDPA_AI __m256i tail_mask(int n)
{
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n >= 8 ? 8 : n), idx);
}

SDPA_AI __m256 load_m(__m256i m, const float *p) { return _mm256_maskload_ps(p, m); }
/* The same with plain loads and stores when all 8 lanes are in (`full`):
 * masked stores are slow on some CPUs (microcoded on AMD Zen 2). */
SDPA_AI __m256 ldm(int full, __m256i m, const float *p)
{
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m);
}
SDPA_AI void stm(int full, __m256i m, float *p, __m256 x)
{
    if (full)
        _mm256_storeu_ps(p, x);
    else
        _mm256_maskstore_ps(p, m, x);
}

/* C(MR x NV*8) (+)= A(MR x K) B(K x NV*8); last vector masked by `last`
 * unless FULL (every vector has 8 lanes: plain loads and stores, no
 * vmaskmovps, which is microcoded for stores on AMD CPUs: with masked
 * stores and loads of C on every 64-deep call, the forward ran at 38-51 %
 * of the AVX2 peak on a Zen 4). */
SDPA_AI void ukernel(const int MR, const int NV, const int FULL, int K, const float *A,
                     ptrdiff_t a_rs, ptrdiff_t a_cs, const float *B,
                     ptrdiff_t ldb, float *C, ptrdiff_t ldc, __m256i last,
                     int accumulate, const float *c_scale)
{
    const __m256i full = _mm256_set1_epi32(-1);
    __m256 c[6][2];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) c[r][v] = _mm256_setzero_ps();
    /* k unrolled by 2: the loop's counter and address updates (7 of the 27
     * instructions per step of 6 x 2) once per two steps; the forward (B1
     * H8 T1024 D64 causal) ran 1.02-1.05x faster on a Zen 4 host, by 4 no
     * better (0.99-1.10x) */
#pragma GCC unroll 2
    for (int k = 0; k < K; k++) {
        const float *b = B + k * ldb;
        const float *a = A + k * a_cs;
        __m256 bv[2];
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++)
            bv[v] = v == NV - 1 && !FULL ? load_m(last, b + 8 * v) : _mm256_loadu_ps(b + 8 * v);
#pragma GCC unroll 6
        for (int r = 0; r < MR; r++) {
            const __m256 av = _mm256_broadcast_ss(a + r * a_rs);
#pragma GCC unroll 2
            for (int v = 0; v < NV; v++) c[r][v] = _mm256_fmadd_ps(av, bv[v], c[r][v]);
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        float *cr = C + r * ldc;
#pragma GCC unroll 2
        for (int v = 0; v < NV; v++) {
            const int f = FULL || v < NV - 1;
            const __m256i m = f ? full : last;
            __m256 x = c[r][v];
            if (accumulate && c_scale)
                x = _mm256_fmadd_ps(ldm(f, m, cr + 8 * v), _mm256_set1_ps(c_scale[r]), x);
            else if (accumulate)
                x = _mm256_add_ps(x, ldm(f, m, cr + 8 * v));
            stm(f, m, cr + 8 * v, x);
        }
    }
}

typedef void (*ukernel_fn)(int K, const float *A, ptrdiff_t a_rs, ptrdiff_t a_cs,
                           const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc,
                           __m256i last, int accumulate, const float *c_scale);

#define UK(MR, NV, FULL)                                                         \
    static void uk_##MR##_##NV##_##FULL(int K, const float *A, ptrdiff_t a_rs,   \
                                        ptrdiff_t a_cs, const float *B,          \
                                        ptrdiff_t ldb, float *C, ptrdiff_t ldc,  \
                                        __m256i last, int acc, const float *cs)  \
    {                                                                            \
        ukernel(MR, NV, FULL, K, A, a_rs, a_cs, B, ldb, C, ldc, last, acc, cs);  \
    }
#define UK_ROW(MR) UK(MR, 1, 0) UK(MR, 2, 0) UK(MR, 1, 1) UK(MR, 2, 1)
UK_ROW(1) UK_ROW(2) UK_ROW(3) UK_ROW(4) UK_ROW(5) UK_ROW(6)
#define UK_REF(MR) { { uk_##MR##_1_0, uk_##MR##_2_0 }, { uk_##MR##_1_1, uk_##MR##_2_1 } }
/* [rows - 1][last vector full][vectors - 1] */
static const ukernel_fn uk_table[6][2][2] = {
    UK_REF(1), UK_REF(2), UK_REF(3), UK_REF(4), UK_REF(5), UK_REF(6),
};

static void gemm_avx2(int M, int N, int K, const float *A, ptrdiff_t a_rs,
                      ptrdiff_t a_cs, const float *B, ptrdiff_t ldb, float *C,
                      ptrdiff_t ldc, int accumulate, const float *c_scale)
{
    if (K == 0) {
        sdpa__cpu_gemm_k0(M, N, C, ldc, accumulate, c_scale);
        return;
    }
    for (int n0 = 0; n0 < N; n0 += 16) {
        const int nn = N - n0 < 16 ? N - n0 : 16;
        const int nv = (nn + 7) / 8;
        const __m256i last = tail_mask(nn - (nv - 1) * 8);
        for (int m0 = 0; m0 < M; m0 += 6) {
            const int mr = M - m0 < 6 ? M - m0 : 6;
            uk_table[mr - 1][nn % 8 == 0][nv - 1](K, A + m0 * a_rs, a_rs, a_cs, B + n0, ldb,
                                     C + m0 * ldc + n0, ldc, last, accumulate,
                                     c_scale ? c_scale + m0 : NULL);
        }
    }
}

SDPA_AI float hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static void dots_avx2(int M, int N, int K, const float *A, ptrdiff_t lda,
                      const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc)
{
    const int kv = K / 8, kr = K % 8;
    const __m256i km = tail_mask(kr ? kr : 8);
    for (int j = 0; j < M; j++) {
        const float *a = A + j * lda;
        for (int i = 0; i < N; i++) {
            const float *b = B + i * ldb;
            __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
            int c = 0;
            for (; c + 1 < kv; c += 2) {
                s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + 8 * c), _mm256_loadu_ps(b + 8 * c), s0);
                s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + 8 * c + 8),
                                     _mm256_loadu_ps(b + 8 * c + 8), s1);
            }
            for (; c < kv; c++)
                s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + 8 * c), _mm256_loadu_ps(b + 8 * c), s0);
            if (kr)
                s1 = _mm256_fmadd_ps(load_m(km, a + 8 * kv), load_m(km, b + 8 * kv), s1);
            C[j * ldc + i] = hsum(_mm256_add_ps(s0, s1));
        }
    }
}

static void colmax_avx2(const float *S, ptrdiff_t ld, int nk, int nq, float *m)
{
    for (int i0 = 0; i0 < nq; i0 += 8) {
        const __m256i msk = tail_mask(nq - i0);
        const int full = nq - i0 >= 8;
        /* max(s, x) returns x when s is NaN: NaN never enters the max (it
         * reaches the output through exp instead). Four chains (the max's
         * latency would otherwise bound the loop), m joined last, so a NaN
         * m stays NaN as with one chain; max is exact, so the value is the
         * same. */
        const __m256 ninf = _mm256_set1_ps(-INFINITY);
        __m256 mx[4] = {ninf, ninf, ninf, ninf};
        int j = 0;
        for (; j + 3 < nk; j += 4)
            for (int c = 0; c < 4; c++)
                mx[c] = _mm256_max_ps(ldm(full, msk, S + (j + c) * ld + i0), mx[c]);
        for (; j < nk; j++) mx[0] = _mm256_max_ps(ldm(full, msk, S + j * ld + i0), mx[0]);
        const __m256 t = _mm256_max_ps(_mm256_max_ps(mx[0], mx[1]), _mm256_max_ps(mx[2], mx[3]));
        stm(full, msk, m + i0, _mm256_max_ps(t, ldm(full, msk, m + i0)));
    }
}

SDPA_AI __m256 exp256(__m256 x)
{
    /* t = x log2 e, at most 128 (min returns its second operand, t, when t
     * is NaN: NaN flows through the polynomial and stays NaN). */
    const __m256 t = _mm256_min_ps(_mm256_set1_ps(128.0f),
                                   _mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)));
    const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 f = _mm256_sub_ps(t, n); /* in [-1/2, 1/2] */
    __m256 p = _mm256_set1_ps(1.5403530393381606e-4f);            /* ln2^6/720 */
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.3333558146428443e-3f)); /* ln2^5/120 */
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(9.6181291076284772e-3f)); /* ln2^4/24 */
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(5.5504108664821580e-2f)); /* ln2^3/6 */
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(2.4022650695910071e-1f)); /* ln2^2/2 */
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(6.9314718055994531e-1f)); /* ln2 */
    p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
    /* 2^n p by adding n to p's exponent field: p is in [2^-1/2, 2^1/2], its
     * field 126 or 127, so n in [-125, 128] gives a field in [1, 255]; 255
     * only for n = 128 with f = 0, p = 1 exactly: +inf, as exp overflows.
     * Below t = -125 (x < -86.6, results under 2^-125 ~ 2.4e-38, against a
     * softmax's largest term 1) the result is 0: -inf gives exactly 0.
     * Three integer and logic operations where two exponent fields took
     * eight and a blend restored NaN (the AVX2 forward spent 14 % of its
     * time here). */
    const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    const __m256 r = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
    return _mm256_and_ps(r, _mm256_cmp_ps(t, _mm256_set1_ps(-125.0f), _CMP_NLT_UQ));
}

static void expsub_avx2(float *S, ptrdiff_t ld, int nk, int nq, const float *sub,
                        float *sum)
{
    for (int i0 = 0; i0 < nq; i0 += 8) {
        const __m256i msk = tail_mask(nq - i0);
        const int full = nq - i0 >= 8;
        const __m256 sv = ldm(full, msk, sub + i0);
        __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
        int j = 0;
        for (; j + 1 < nk; j += 2) {
            float *s0 = S + j * ld + i0, *s1 = s0 + ld;
            const __m256 e0 = exp256(_mm256_sub_ps(ldm(full, msk, s0), sv));
            const __m256 e1 = exp256(_mm256_sub_ps(ldm(full, msk, s1), sv));
            stm(full, msk, s0, e0);
            stm(full, msk, s1, e1);
            acc0 = _mm256_add_ps(acc0, e0);
            acc1 = _mm256_add_ps(acc1, e1);
        }
        if (j < nk) {
            float *s0 = S + j * ld + i0;
            const __m256 e0 = exp256(_mm256_sub_ps(ldm(full, msk, s0), sv));
            stm(full, msk, s0, e0);
            acc0 = _mm256_add_ps(acc0, e0);
        }
        if (sum)
            stm(full, msk, sum + i0,
                _mm256_add_ps(ldm(full, msk, sum + i0), _mm256_add_ps(acc0, acc1)));
    }
}

static void load_row_avx2(const void *src, sdpa_dtype dtype, int64_t stride, int n,
                          float *dst)
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
    int e = 0;
    for (; e + 8 <= n; e += 8) {
        const __m128i h = _mm_loadu_si128((const __m128i *)(s + e));
        __m256 f;
        if (dtype == SDPA_DTYPE_F16)
            f = _mm256_cvtph_ps(h);
        else
            f = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
        _mm256_storeu_ps(dst + e, f);
    }
    for (; e < n; e++) dst[e] = sdpa__load_float(src, dtype, e);
}

static void dsoft_avx2(const float *P, float *dP, const float *th, ptrdiff_t ld, int nk,
                       int nq, const float *dr)
{
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    for (int i0 = 0; i0 < nq; i0 += 8) {
        const __m256i msk = tail_mask(nq - i0);
        const int full = nq - i0 >= 8;
        const __m256 d = ldm(full, msk, dr + i0);
        for (int j = 0; j < nk; j++) {
            const __m256 p = ldm(full, msk, P + j * ld + i0);
            __m256 x = _mm256_mul_ps(p, _mm256_sub_ps(ldm(full, msk, dP + j * ld + i0), d));
            if (th) {
                const __m256 t = ldm(full, msk, th + j * ld + i0);
                x = _mm256_mul_ps(x, _mm256_fnmadd_ps(t, t, one));
            }
            const __m256 nz = _mm256_cmp_ps(p, zero, _CMP_NEQ_UQ);
            stm(full, msk, dP + j * ld + i0, _mm256_and_ps(nz, x));
        }
    }
}

static void tilestats_avx2(const float *S, const float *P, const float *M, ptrdiff_t ld,
                           int nk, int nq, float *t, ptrdiff_t tld)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY), one = _mm256_set1_ps(1.0f);
    for (int i0 = 0; i0 < nq; i0 += 8) {
        const __m256i msk = tail_mask(nq - i0);
        const int full = nq - i0 >= 8;
        const __m256 m = ldm(full, msk, M + i0);
        __m256 a = _mm256_setzero_ps(), l1 = a, l2 = a, l3 = a, ties = a, cnt = a, sum = a,
               sq = a;
        __m256 mn = _mm256_set1_ps(INFINITY), mx = ninf;
        for (int j = 0; j < nk; j++) {
            const __m256 s = ldm(full, msk, S + j * ld + i0);
            const __m256 e = ldm(full, msk, P + j * ld + i0);
            /* k: kept keys (s > -inf); top: those at the running maximum
             * (counted, not summed); rest: the others. Lanes outside a mask
             * keep the accumulator. */
            const __m256 k = _mm256_cmp_ps(s, ninf, _CMP_GT_OQ);
            const __m256 top = _mm256_and_ps(k, _mm256_cmp_ps(s, m, _CMP_EQ_OQ));
            const __m256 rest = _mm256_andnot_ps(top, k);
            const __m256 e2 = _mm256_mul_ps(e, e);
            a = _mm256_blendv_ps(a, _mm256_fmadd_ps(e, _mm256_sub_ps(s, m), a), rest);
            l1 = _mm256_blendv_ps(l1, _mm256_add_ps(l1, e), rest);
            l2 = _mm256_blendv_ps(l2, _mm256_add_ps(l2, e2), rest);
            l3 = _mm256_blendv_ps(l3, _mm256_fmadd_ps(e2, e, l3), rest);
            ties = _mm256_add_ps(ties, _mm256_and_ps(top, one));
            cnt = _mm256_add_ps(cnt, _mm256_and_ps(k, one));
            sum = _mm256_blendv_ps(sum, _mm256_add_ps(sum, s), k);
            sq = _mm256_blendv_ps(sq, _mm256_fmadd_ps(s, s, sq), k);
            mn = _mm256_blendv_ps(mn, _mm256_min_ps(mn, s), k);
            mx = _mm256_blendv_ps(mx, _mm256_max_ps(mx, s), k);
        }
        stm(full, msk, t + CPU_TS_A * tld + i0, a);
        stm(full, msk, t + CPU_TS_P1 * tld + i0, l1);
        stm(full, msk, t + CPU_TS_P2 * tld + i0, l2);
        stm(full, msk, t + CPU_TS_P3 * tld + i0, l3);
        stm(full, msk, t + CPU_TS_TIES * tld + i0, ties);
        stm(full, msk, t + CPU_TS_CNT * tld + i0, cnt);
        stm(full, msk, t + CPU_TS_SUM * tld + i0, sum);
        stm(full, msk, t + CPU_TS_SUMSQ * tld + i0, sq);
        stm(full, msk, t + CPU_TS_MIN * tld + i0, mn);
        stm(full, msk, t + CPU_TS_MAX * tld + i0, mx);
    }
}

static void band_avx2(float *S, ptrdiff_t ld, int nk, int nq, const int32_t *lo,
                      const int32_t *hi)
{
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    for (int i0 = 0; i0 < nq; i0 += 8) {
        const __m256i msk = tail_mask(nq - i0);
        const __m256i lv = _mm256_maskload_epi32((const int *)(lo + i0), msk);
        const __m256i hv = _mm256_maskload_epi32((const int *)(hi + i0), msk);
        for (int j = 0; j < nk; j++) {
            const __m256i jv = _mm256_set1_epi32(j);
            /* lanes outside [lo, hi): j < lo or not j < hi */
            const __m256i in = _mm256_andnot_si256(_mm256_cmpgt_epi32(lv, jv),
                                                   _mm256_cmpgt_epi32(hv, jv));
            _mm256_maskstore_ps(S + j * ld + i0, _mm256_andnot_si256(in, msk), ninf);
        }
    }
}

static bool nonfinite_avx2(const float *x, ptrdiff_t ld, int n, int m)
{
    const __m256i expo = _mm256_set1_epi32(0x7f800000);
    __m256i bad = _mm256_setzero_si256();
    for (int j = 0; j < n; j++)
        for (int d = 0; d < m; d += 8) {
            const __m256i u = _mm256_castps_si256(load_m(tail_mask(m - d), x + j * ld + d));
            bad = _mm256_or_si256(bad, _mm256_cmpeq_epi32(_mm256_and_si256(u, expo), expo));
        }
    return !_mm256_testz_si256(bad, bad);
}

static void store_row_avx2(const float *src, float mul, void *dst, sdpa_dtype dtype,
                           int64_t stride, int n)
{
    if (stride != 1) {
        for (int e = 0; e < n; e++) sdpa__store_float(dst, dtype, e * stride, src[e] * mul);
        return;
    }
    const __m256 mv = _mm256_set1_ps(mul);
    for (int e = 0; e < n; e += 8) {
        const int cnt = n - e < 8 ? n - e : 8;
        const __m256i msk = tail_mask(cnt);
        const __m256 x = _mm256_mul_ps(ldm(cnt == 8, msk, src + e), mv);
        if (dtype == SDPA_DTYPE_F32) {
            stm(cnt == 8, msk, (float *)dst + e, x);
            continue;
        }
        __m128i h;
        if (dtype == SDPA_DTYPE_F16) {
            h = _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        } else {
            /* bf16: round to nearest even; NaN stays NaN (quietened). */
            const __m256i u = _mm256_castps_si256(x);
            const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
            __m256i r = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7FFF)));
            const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(x, x, _CMP_UNORD_Q));
            r = _mm256_blendv_epi8(r, _mm256_or_si256(u, _mm256_set1_epi32(0x00400000)), nan);
            r = _mm256_srli_epi32(r, 16);
            /* pack the 8 16-bit values (in-lane pack, then gather the halves) */
            r = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
            h = _mm256_castsi256_si128(r);
        }
        uint16_t *d = (uint16_t *)dst + e;
        if (cnt == 8)
            _mm_storeu_si128((__m128i *)d, h);
        else {
            uint16_t tmp[8];
            _mm_storeu_si128((__m128i *)tmp, h);
            memcpy(d, tmp, (size_t)cnt * sizeof(uint16_t));
        }
    }
}

/* ---- decode: K/V streamed in their storage dtype, converted in registers -- */

/* n (1..8) elements from element e of an f32 / f16 / bf16 row, as f32
 * (lanes past n are 0 and their memory is never read). */
SDPA_AI __m256 load_kv8(const void *base, sdpa_dtype dt, ptrdiff_t e, int n)
{
    if (dt == SDPA_DTYPE_F32)
        return n >= 8 ? _mm256_loadu_ps((const float *)base + e)
                      : load_m(tail_mask(n), (const float *)base + e);
    __m128i h;
    if (n >= 8) {
        h = _mm_loadu_si128((const __m128i *)((const uint16_t *)base + e));
    } else {
        uint16_t t[8] = {0};
        memcpy(t, (const uint16_t *)base + e, (size_t)n * sizeof(uint16_t));
        h = _mm_loadu_si128((const __m128i *)t);
    }
    if (dt == SDPA_DTYPE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

/* The f16 scale of the q8_0 / q4_0 block at blk, broadcast as f32. */
SDPA_AI __m256 block_scale(const unsigned char *blk)
{
    uint16_t dh;
    memcpy(&dh, blk, sizeof dh);
    return _mm256_cvtph_ps(_mm_set1_epi16((short)dh));
}

/* Elements 16 h .. 16 h + 15 (h = 0 or 1) of the q8_0 / q4_0 block at blk,
 * whose scale is d, dequantized in registers into x[0], x[1]: q8_0 sign-
 * extends 8 bytes per vector, converts, times d; q4_0 zero-extends 8 bytes
 * of nibbles per vector, masks the low (h = 0) or shifts down the high
 * nibbles, and forms (q - 8) d as one FMA, q d + (-8 d) (exact product, one
 * rounding: the same value as (q - 8) * d). */
SDPA_AI void load_block16(const unsigned char *blk, sdpa_dtype dt, int h, __m256 d,
                          __m256 x[2])
{
    if (dt == SDPA_DTYPE_Q8_0) {
        const unsigned char *q = blk + 2 + 16 * h;
        x[0] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)q))), d);
        x[1] = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(q + 8)))), d);
        return;
    }
    const __m256 m8 = _mm256_mul_ps(d, _mm256_set1_ps(-8.0f));
#pragma GCC unroll 2
    for (int v = 0; v < 2; v++) {
        __m256i n = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(blk + 2 + 8 * v)));
        n = h ? _mm256_srli_epi32(n, 4) : _mm256_and_si256(n, _mm256_set1_epi32(15));
        x[v] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(n), d, m8);
    }
}

/* The 8 sums of v[0..7] in one vector, lane n = sum of v[n]. */
SDPA_AI __m256 hsum8(const __m256 v[8])
{
    const __m256 t0 = _mm256_hadd_ps(_mm256_hadd_ps(v[0], v[1]), _mm256_hadd_ps(v[2], v[3]));
    const __m256 t1 = _mm256_hadd_ps(_mm256_hadd_ps(v[4], v[5]), _mm256_hadd_ps(v[6], v[7]));
    /* each 128-bit half of t0: the sums of that half of v[0..3]; t1: v[4..7] */
    return _mm256_add_ps(_mm256_permute2f128_ps(t0, t1, 0x20), _mm256_permute2f128_ps(t0, t1, 0x31));
}

/* v, kept in a register: without the empty asm, GCC folds the load that
 * made v into each FMA that uses it, loading it once per use. */
SDPA_AI __m256 in_register(__m256 v)
{
    __asm__("" : "+x"(v));
    return v;
}

/* Elements 8c .. 8c + n - 1 (n <= 8) of NK (1 or 2) K rows times NI query
 * rows of B into s[4e + i] (row e, query row i): each query vector loaded
 * once for the NK rows (with one row, folded into its FMA). */
SDPA_AI void dots_kv8_keys(const int NI, const int NK, const unsigned char *const row[2],
                           sdpa_dtype dt, const float *B, ptrdiff_t ldb, int c, int n,
                           __m256 s[8])
{
    __m256 kv[2];
#pragma GCC unroll 2
    for (int e = 0; e < NK; e++) kv[e] = load_kv8(row[e], dt, 8 * c, n);
#pragma GCC unroll 4
    for (int i = 0; i < NI; i++) {
        const float *p = B + i * ldb + 8 * c;
        const __m256 b0 = n >= 8 ? _mm256_loadu_ps(p) : load_m(tail_mask(n), p);
        const __m256 b = NK > 1 ? in_register(b0) : b0;
#pragma GCC unroll 2
        for (int e = 0; e < NK; e++) s[4 * e + i] = _mm256_fmadd_ps(kv[e], b, s[4 * e + i]);
    }
}

/* NI (<= 4) query rows against M key rows, 2 keys at a time: each K row is
 * loaded and converted once and multiplied into NI accumulators, the 8 sums
 * of the 2 keys reduced together by hsum8. f32 reads the first row whole,
 * then the second (address order: reading the two alternately, 32 bytes at
 * a time, made contiguous decode 1.02-1.32x slower on a Zen 4 host; paged,
 * 0.89-1.17x). f16 / bf16, whose K rows are prefetched ahead (below), read
 * the two alternately, each query vector loaded once, into a register
 * (in_register), for both keys (dots_kv8_keys with NK 2): 6 loads per 8 FMAs instead of
 * 10 (docs/cpu.md has the figures). Both prefetch the keys' V rows
 * (sdpa__cpu_rows_prefetch_next) and, for contiguous f32 caches, the K row
 * `far` rows on (sdpa__cpu_rows_prefetch_far, into L2; pv_rows_keys does
 * the same for V); the block types step through both rows a
 * whole block (32 elements, one scale) at a time. Rows come from A's table
 * (across pages). */
SDPA_AI void dots_kv_block(const int NI, int M, int K, const sdpa__cpu_rows *A, sdpa_dtype dt,
                           const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc)
{
    const bool blocks = sdpa__cpu_unit_elems(dt) > 1;
    const size_t usz = sdpa__cpu_unit_bytes(dt), rowb = (size_t)K / sdpa__cpu_unit_elems(dt) * usz;
    const int ahead = sdpa__cpu_kv_ahead(rowb);
    const int nv = (K + 7) / 8;
    const __m128i out_mask = _mm_cmpgt_epi32(_mm_set1_epi32(NI), _mm_setr_epi32(0, 1, 2, 3));
    /* K `ahead` rows on: contiguous 16-bit rows into L2 (the AVX-512
     * dots_kv_block's rule; here f16 decode then ran 0.98-1.13x, median
     * 1.06x, at Skv 32768 and 0.98-1.02x at 4096), the others into L1 */
    const bool ahead_l2 = sdpa__cpu_k_ahead_l2(A, dt);
    for (int j = 0; j < M; j += 2) {
        for (int t = j + ahead; t < j + ahead + 2 && t < A->n; t++)
            if (ahead_l2)
                sdpa__cpu_rows_prefetch_l2(A, t, rowb);
            else
                for (size_t o = 0; o < rowb; o += 64)
                    _mm_prefetch(sdpa__cpu_rows_at(A, t) + o, _MM_HINT_T0);
        /* a row past M repeats row j (its sums are not stored) */
        const unsigned char *const row[2] = {sdpa__cpu_rows_at(A, j),
                                             sdpa__cpu_rows_at(A, j + 1 < M ? j + 1 : j)};
        __m256 s[8];
#pragma GCC unroll 8
        for (int n = 0; n < 8; n++) s[n] = _mm256_setzero_ps();
        if (blocks) {
            for (int c = 0; c < K; c += 32) {
                const size_t off = (size_t)c / 32 * usz;
#pragma GCC unroll 2
                for (int k = 0; k < 2; k++) {
                    const __m256 d = block_scale(row[k] + off);
#pragma GCC unroll 2
                    for (int h = 0; h < 2; h++) {
                        __m256 x[2];
                        load_block16(row[k] + off, dt, h, d, x);
#pragma GCC unroll 4
                        for (int i = 0; i < NI; i++) {
                            const float *b = B + i * ldb + c + 16 * h;
                            s[4 * k + i] = _mm256_fmadd_ps(x[0], _mm256_loadu_ps(b), s[4 * k + i]);
                            s[4 * k + i] = _mm256_fmadd_ps(x[1], _mm256_loadu_ps(b + 8), s[4 * k + i]);
                        }
                    }
                }
            }
        } else if (dt != SDPA_DTYPE_F32 && j + 1 < M) {
            sdpa__cpu_rows_prefetch_next(A, j);
            sdpa__cpu_rows_prefetch_next(A, j + 1);
            int c = 0;
            for (; c < K / 8; c++) dots_kv8_keys(NI, 2, row, dt, B, ldb, c, 8, s);
            if (c < nv) dots_kv8_keys(NI, 2, row, dt, B, ldb, c, K - 8 * c, s);
        } else {
            /* each row whole, in address order (the query vectors come from
             * L1 again for the second): whole vectors, then the tail */
#pragma GCC unroll 2
            for (int k = 0; k < 2; k++) {
                if (k == 0 || j + 1 < M) {
                    sdpa__cpu_rows_prefetch_next(A, j + k);
                    sdpa__cpu_rows_prefetch_far(A, j + k);
                }
                const unsigned char *const one[2] = {row[k], NULL};
                int c = 0;
                for (; c < K / 8; c++) dots_kv8_keys(NI, 1, one, dt, B, ldb, c, 8, s + 4 * k);
                if (c < nv) dots_kv8_keys(NI, 1, one, dt, B, ldb, c, K - 8 * c, s + 4 * k);
            }
        }
        const __m256 w = hsum8(s); /* lane 4k + i: key j + k, row i */
        _mm_maskstore_ps(C + j * ldc, out_mask, _mm256_castps256_ps128(w));
        if (j + 1 < M) _mm_maskstore_ps(C + (j + 1) * ldc, out_mask, _mm256_extractf128_ps(w, 1));
    }
}

/* acc[r] += sum_k P[r + k*ldp] V(k, n columns from byte coff) over keys
 * k0 .. k1 - 1 (FULL: n = 16), prefetching pfb bytes of the row ahead keys
 * on (pfb 0: none). */
SDPA_AI void pv_kv_keys(const int NR, const int FULL, int k0, int k1, int n, size_t coff,
                        int half, const float *P, ptrdiff_t ldp, const sdpa__cpu_rows *V,
                        sdpa_dtype dt, size_t pfb, int ahead, __m256 acc[4][2])
{
    const int n0 = FULL ? 8 : n, n1 = FULL ? 8 : n - 8; /* n1 <= 0: no second vector */
    for (int k = k0; k < k1; k++) {
        const unsigned char *vr = sdpa__cpu_rows_at(V, k) + coff;
        for (size_t o = 0; o < pfb; o += 64)
            _mm_prefetch((const char *)sdpa__cpu_rows_at(V, k + ahead) + o, _MM_HINT_T0);
        __m256 v[2];
        if (sdpa__cpu_unit_elems(dt) > 1) {
            load_block16(vr, dt, half, block_scale(vr), v);
        } else {
            v[0] = load_kv8(vr, dt, 0, n0);
            v[1] = n1 > 0 ? load_kv8(vr, dt, 8, n1) : _mm256_setzero_ps();
        }
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            const __m256 p = _mm256_broadcast_ss(P + r + k * ldp);
            acc[r][0] = _mm256_fmadd_ps(p, v[0], acc[r][0]);
            acc[r][1] = _mm256_fmadd_ps(p, v[1], acc[r][1]);
        }
    }
}

/* C (NR rows x 16 columns from c0) = C * c_scale + P^T V over K keys (rows
 * of V from its table, Dv columns), for the block types q8_0 / q4_0: each V
 * row chunk (half a block, c0 a multiple of 16) is dequantized once for the
 * NR rows. n = columns (1..16). */
SDPA_AI void pv_kv_block16(const int NR, int n, int c0, int Dv, int K, const float *P,
                         ptrdiff_t ldp, const sdpa__cpu_rows *V, sdpa_dtype dt, float *C,
                         ptrdiff_t ldc, const float *c_scale)
{
    const bool blocks = sdpa__cpu_unit_elems(dt) > 1;
    const size_t usz = sdpa__cpu_unit_bytes(dt);
    const int ahead = sdpa__cpu_kv_ahead((size_t)Dv / sdpa__cpu_unit_elems(dt) * usz);
    /* column c0's byte offset in a row: the block holding it, or the element */
    const size_t coff = (size_t)c0 / sdpa__cpu_unit_elems(dt) * usz;
    const int half = (c0 & 31) >> 4;
    const int n1 = n - 8; /* columns of the second vector (<= 0: none) */
    const __m256i m0 = tail_mask(n), m1 = tail_mask(n1 > 0 ? n1 : 1);
    __m256 acc[4][2];
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) {
        const __m256 sc = _mm256_set1_ps(c_scale ? c_scale[r] : 1.0f);
        acc[r][0] = _mm256_mul_ps(ldm(n >= 8, m0, C + r * ldc), sc);
        acc[r][1] = n1 > 0 ? _mm256_mul_ps(ldm(n1 >= 8, m1, C + r * ldc + 8), sc)
                           : _mm256_setzero_ps();
    }
    /* the first chunk's pass prefetches whole rows (decode_pv_kv's later
     * chunks find them in L1): keys below kpf, whose row ahead exists */
    const size_t rowb = (size_t)Dv / sdpa__cpu_unit_elems(dt) * usz;
    int kpf = c0 ? 0 : V->n - ahead;
    kpf = kpf < 0 ? 0 : kpf > K ? K : kpf;
    if (n == 16 && !blocks) { /* whole vectors */
        pv_kv_keys(NR, 1, 0, kpf, 16, coff, half, P, ldp, V, dt, rowb, ahead, acc);
        pv_kv_keys(NR, 1, kpf, K, 16, coff, half, P, ldp, V, dt, 0, ahead, acc);
    } else {
        pv_kv_keys(NR, 0, 0, kpf, n, coff, half, P, ldp, V, dt, rowb, ahead, acc);
        pv_kv_keys(NR, 0, kpf, K, n, coff, half, P, ldp, V, dt, 0, ahead, acc);
    }
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) {
        stm(n >= 8, m0, C + r * ldc, acc[r][0]);
        if (n1 > 0) stm(n1 >= 8, m1, C + r * ldc + 8, acc[r][1]);
    }
}

/* pv_kv_rows' step: keys k .. k + NK - 1 (NK 1 or 2) added into the NR rows
 * of C, 8 columns at a time (nf whole vectors, then nt columns under m):
 * each sum is loaded once, gets the keys' products in key order, and is
 * stored once; each key's row prefetched `ahead` keys on, the row V's
 * table names with it (sdpa__cpu_rows_prefetch_next), and the row `far`
 * keys on (sdpa__cpu_rows_prefetch_far: contiguous f32, first walk). */
SDPA_AI void pv_rows_keys(const int NR, const int NK, int k, int nf, int nt, __m256i m,
                          const float *P, ptrdiff_t ldp, const sdpa__cpu_rows *V,
                          sdpa_dtype dt, size_t coff, size_t len, int ahead, float *C,
                          ptrdiff_t ldc)
{
    const unsigned char *v[2];
    __m256 p[2][4], x[2];
#pragma GCC unroll 2
    for (int e = 0; e < NK; e++) {
        sdpa__cpu_rows_prefetch(V, k + e + ahead, dt, coff, len);
        sdpa__cpu_rows_prefetch_next(V, k + e);
        sdpa__cpu_rows_prefetch_far(V, k + e);
        v[e] = sdpa__cpu_rows_at(V, k + e) + coff;
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) p[e][r] = _mm256_broadcast_ss(P + r + (k + e) * ldp);
    }
    for (int c = 0; c < nf; c++) {
#pragma GCC unroll 2
        for (int e = 0; e < NK; e++) x[e] = load_kv8(v[e], dt, 8 * c, 8);
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            float *o = C + r * ldc + 8 * c;
            __m256 a = _mm256_loadu_ps(o);
#pragma GCC unroll 2
            for (int e = 0; e < NK; e++) a = _mm256_fmadd_ps(p[e][r], x[e], a);
            _mm256_storeu_ps(o, a);
        }
    }
    if (nt) {
#pragma GCC unroll 2
        for (int e = 0; e < NK; e++) x[e] = load_kv8(v[e], dt, 8 * nf, nt);
#pragma GCC unroll 4
        for (int r = 0; r < NR; r++) {
            float *o = C + r * ldc + 8 * nf;
            __m256 a = load_m(m, o);
#pragma GCC unroll 2
            for (int e = 0; e < NK; e++) a = _mm256_fmadd_ps(p[e][r], x[e], a);
            _mm256_maskstore_ps(o, m, a);
        }
    }
}

/* C (NR rows x N <= 128 columns from c0) = C * c_scale + P^T V over K keys,
 * f32 / f16 / bf16: one walk over the keys, one key at a time (two for f16
 * / bf16, see below), reading its row's N columns whole and in address
 * order, 8 at a time, each added into
 * the NR rows of C, which holds the sums (at most 2 KiB: L1); 16 ymm
 * registers could not keep a row of 128 columns. Each sum takes the keys in
 * order, as in the register-blocked kernels. On a Zen 4 host the register-
 * blocked passes of 16 columns (8 passes over a row of 128 f32, each
 * reading 32 bytes of every row) ran decode at about 3x a plain read's
 * time. A walk taking 2 keys per step (their rows read alternately, 32
 * bytes at a time, each sum loaded and stored once for both) made
 * contiguous f32 decode 1.39-1.81x slower than this one (0.65-0.70x
 * again on 2026-12-03), but f16 / bf16 decode 1.15-1.29x faster (B1 Hq32
 * Hkv8 D128, Skv 4096 and 32768, builds alternated in one process): their
 * rows are half as long, and each key's 8 columns cost a load and a store
 * of every row's sums beside one FMA, so they ran short of load / store
 * slots, not of memory; so f16 / bf16 take 2 keys per step (4 ran 0.94-
 * 1.05x of 2), f32 one. Rows through a block table are prefetched
 * (sdpa__cpu_rows_prefetch), and with each key the row V's table names
 * (sdpa__cpu_rows_prefetch_next: the next tile's K). */
SDPA_AI void pv_kv_rows(const int NR, int N, int c0, int Dv, int K, const float *P,
                        ptrdiff_t ldp, const sdpa__cpu_rows *V, sdpa_dtype dt, float *C,
                        ptrdiff_t ldc, const float *c_scale)
{
    const size_t usz = sdpa__cpu_unit_bytes(dt), coff = (size_t)c0 * usz, len = (size_t)N * usz;
    const int ahead = sdpa__cpu_kv_ahead((size_t)Dv * usz);
    const int nf = N / 8, nt = N % 8;
    const __m256i m = tail_mask(nt ? nt : 1);
    if (c_scale)
        for (int r = 0; r < NR; r++) {
            const __m256 sc = _mm256_set1_ps(c_scale[r]);
            float *o = C + r * ldc;
            for (int c = 0; c < nf; c++)
                _mm256_storeu_ps(o + 8 * c, _mm256_mul_ps(_mm256_loadu_ps(o + 8 * c), sc));
            if (nt) _mm256_maskstore_ps(o + 8 * nf, m, _mm256_mul_ps(load_m(m, o + 8 * nf), sc));
        }
    int k = 0;
    if (dt != SDPA_DTYPE_F32) /* f16 / bf16: two keys per step */
        for (; k + 1 < K; k += 2)
            pv_rows_keys(NR, 2, k, nf, nt, m, P, ldp, V, dt, coff, len, ahead, C, ldc);
    for (; k < K; k++) pv_rows_keys(NR, 1, k, nf, nt, m, P, ldp, V, dt, coff, len, ahead, C, ldc);
}

/* C (NR rows x N <= 128 columns from c0) = C * c_scale + P^T V over K keys:
 * pv_kv_rows for f32 / f16 / bf16, 16-column chunks of pv_kv_block16 for
 * the block types, whose chunk of a row is half a block (each chunk
 * rescales its own columns). */
SDPA_AI void pv_kv_block(const int NR, int N, int c0, int Dv, int K, const float *P,
                         ptrdiff_t ldp, const sdpa__cpu_rows *V, sdpa_dtype dt, float *C,
                         ptrdiff_t ldc, const float *c_scale)
{
    if (sdpa__cpu_unit_elems(dt) == 1) {
        pv_kv_rows(NR, N, c0, Dv, K, P, ldp, V, dt, C, ldc, c_scale);
        return;
    }
    for (int n0 = 0; n0 < N; n0 += 16)
        pv_kv_block16(NR, N - n0 < 16 ? N - n0 : 16, c0 + n0, Dv, K, P, ldp, V, dt, C + n0, ldc,
                      c_scale);
}

#define PV_KV_COLS 128
#include "cpu_decode_tables.h"

/* Q rows transposed, 8 x 8 floats at a time in registers (unpack pairs of
 * rows, shuffle within 128-bit lanes, swap lanes); the ragged edges (rows
 * or columns not a multiple of 8) as plain loops. */
static void transpose_avx2(int R, int C, const float *src, ptrdiff_t lds, float *dst,
                           ptrdiff_t ldd, float mul)
{
    const __m256 mv = _mm256_set1_ps(mul);
    const int R8 = R & ~7, C8 = C & ~7;
    for (int r0 = 0; r0 < R8; r0 += 8)
        for (int c0 = 0; c0 < C8; c0 += 8) {
            __m256 x[8], t[8];
#pragma GCC unroll 8
            for (int i = 0; i < 8; i++)
                x[i] = _mm256_mul_ps(_mm256_loadu_ps(src + (r0 + i) * lds + c0), mv);
#pragma GCC unroll 4
            for (int k = 0; k < 4; k++) {
                t[2 * k] = _mm256_unpacklo_ps(x[2 * k], x[2 * k + 1]);
                t[2 * k + 1] = _mm256_unpackhi_ps(x[2 * k], x[2 * k + 1]);
            }
            /* x[4m + c], lane L: column 4L + c of rows 4m..4m+3 */
#pragma GCC unroll 2
            for (int m = 0; m < 2; m++) {
                x[4 * m] = _mm256_shuffle_ps(t[4 * m], t[4 * m + 2], 0x44);
                x[4 * m + 1] = _mm256_shuffle_ps(t[4 * m], t[4 * m + 2], 0xEE);
                x[4 * m + 2] = _mm256_shuffle_ps(t[4 * m + 1], t[4 * m + 3], 0x44);
                x[4 * m + 3] = _mm256_shuffle_ps(t[4 * m + 1], t[4 * m + 3], 0xEE);
            }
#pragma GCC unroll 4
            for (int c = 0; c < 4; c++) {
                _mm256_storeu_ps(dst + (c0 + c) * ldd + r0,
                                 _mm256_permute2f128_ps(x[c], x[4 + c], 0x20));
                _mm256_storeu_ps(dst + (c0 + c + 4) * ldd + r0,
                                 _mm256_permute2f128_ps(x[c], x[4 + c], 0x31));
            }
        }
    if (C8 < C) sdpa__cpu_transpose(R8, C - C8, src + C8, lds, dst + C8 * ldd, ldd, mul);
    if (R8 < R) sdpa__cpu_transpose(R - R8, C, src + R8 * lds, lds, dst + R8, ldd, mul);
}

const sdpa__cpu_kernels sdpa__cpu_kernels_avx2 = {
    .name = "avx2",
    .gemm = gemm_avx2,
    .dots = dots_avx2,
    .colmax = colmax_avx2,
    .expsub = expsub_avx2,
    .load_row = load_row_avx2,
    .store_row = store_row_avx2,
    .transpose = transpose_avx2,
    .dsoft = dsoft_avx2,
    .nonfinite = nonfinite_avx2,
    .band = band_avx2,
    .tilestats = tilestats_avx2,
    .dots_kv = decode_dots_kv,
    .pv_kv = decode_pv_kv,
};
