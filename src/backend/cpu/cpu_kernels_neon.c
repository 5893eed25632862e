/*
 * cpu_kernels_neon.c — Advanced SIMD (NEON) versions of the fast CPU
 * backend's vector kernels, for aarch64 (phones, Apple Silicon, Arm servers).
 * Built only when the target is aarch64 (see meson.build; NEON is part of
 * the base AArch64 instruction set, so no extra flags), and chosen at run
 * time by sdpa__cpu_kernels_select() (cpu_kernels_select.c) when
 * getauxval(AT_HWCAP) has HWCAP_ASIMD. Same entry points and behaviour as
 * cpu_kernels_avx2.c, 4 lanes wide: a partial last vector is loaded and
 * stored lane by lane (no lane outside the n given is touched).
 *
 * gemm is a register-blocked micro-kernel over all of K with by-element FMAs
 * (fmla v.4s, v.4s, v.s[lane]: A values stay in lanes, no broadcasts), 16
 * columns of C (4 q registers of B per k) and, by how A is laid out:
 *  - unit row stride (P^T in O += P V, dS^T): 6 rows, 24 accumulators, A of
 *    one k in a q and a d register;
 *  - unit k stride (K rows in S^T = K Q^T): 4 rows, 4 k per step, one q
 *    register of A per row, its lanes the 4 k;
 *  - otherwise, and for the rows and columns left over: up to 4 rows, one
 *    scalar load of A per row and k; a last partial vector of 1..3 columns
 *    is loaded and stored lane by lane.
 * All fit the 32 q registers without spills (docs/cpu.md counts the
 * instructions per FMA of the hot loops).
 * exp: 2^(x log2 e), round-to-nearest range reduction, the degree-6
 * polynomial of the other files, 2^n from two exponent fields (exactly 0
 * for -inf, inf for large x, results down to 2^-149 kept; the AVX2 file now
 * adds n to one field and flushes under 2^-125), NaN put back at the end. f16 <-> f32 by fcvtl/fcvtn (base
 * AArch64, round to nearest even), bf16 by shifts as elsewhere.
 */
#include "cpu_internal.h"

#include <arm_neon.h>
#include <math.h>
#include <string.h>

#define SDPA_AI static inline __attribute__((always_inline))

/* The first n lanes (n >= 4: all) of p; the others 0. */
SDPA_AI float32x4_t ldm(int n, const float *p)
{
    if (n >= 4) return vld1q_f32(p);
    float32x4_t v = vdupq_n_f32(0.0f);
    v = vld1q_lane_f32(p, v, 0);
    if (n > 1) v = vld1q_lane_f32(p + 1, v, 1);
    if (n > 2) v = vld1q_lane_f32(p + 2, v, 2);
    return v;
}
/* The same for int32 (the band's lo/hi, once per column block). */
SDPA_AI int32x4_t ldm_s32(int n, const int32_t *p)
{
    int32_t t[4] = {0, 0, 0, 0};
    memcpy(t, p, (size_t)(n < 4 ? n : 4) * sizeof *p);
    return vld1q_s32(t);
}
/* Stores the first n lanes (n >= 4: all) of x to p. */
SDPA_AI void stm(int n, float *p, float32x4_t x)
{
    if (n >= 4) {
        vst1q_f32(p, x);
        return;
    }
    vst1q_lane_f32(p, x, 0);
    if (n > 1) vst1q_lane_f32(p + 1, x, 1);
    if (n > 2) vst1q_lane_f32(p + 2, x, 2);
}
SDPA_AI float32x4_t as_f32(uint32x4_t m) { return vreinterpretq_f32_u32(m); }
SDPA_AI uint32x4_t as_u32(float32x4_t x) { return vreinterpretq_u32_f32(x); }

/* The B row of one k: NV vectors, the last one ncol lanes wide. */
SDPA_AI void load_b(const int NV, float32x4_t bv[4], const float *b, int ncol)
{
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) bv[v] = ldm(v == NV - 1 ? ncol : 4, b + 4 * v);
}

/* One k, any strides (MR <= 4): c[r][v] += A(r, k) B[k][v], A(r, k) a scalar
 * load each (4 A + 4 B + 16 accumulators: no spills). */
SDPA_AI void step_any(const int MR, const int NV, float32x4_t c[6][4], const float *a,
                      ptrdiff_t a_rs, const float *b, int ncol)
{
    float32x4_t bv[4];
    load_b(NV, bv, b, ncol);
#pragma GCC unroll 4
    for (int r = 0; r < MR; r++) {
        const float av = a[r * a_rs];
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) c[r][v] = vfmaq_n_f32(c[r][v], bv[v], av);
    }
}

/* c[R0 + lane][v] += bv[v] x[lane] for the L lanes of x (by-element FMA;
 * lanes are literals so that -O0 builds compile too). */
#define FMA_LANES_Q(NV, c, R0, bv, x)                                              \
    do {                                                                           \
        _Pragma("GCC unroll 4") for (int v_ = 0; v_ < (NV); v_++) {                \
            c[R0][v_] = vfmaq_laneq_f32(c[R0][v_], bv[v_], x, 0);                  \
            c[R0 + 1][v_] = vfmaq_laneq_f32(c[R0 + 1][v_], bv[v_], x, 1);          \
            c[R0 + 2][v_] = vfmaq_laneq_f32(c[R0 + 2][v_], bv[v_], x, 2);          \
            c[R0 + 3][v_] = vfmaq_laneq_f32(c[R0 + 3][v_], bv[v_], x, 3);          \
        }                                                                          \
    } while (0)

/* One k, 6 rows of A with unit row stride (P^T, dS^T): A(0..3, k) in one q
 * register, A(4..5, k) in one d register; 24 accumulators + 4 B + 2 A. */
SDPA_AI void step_rs6(const int NV, float32x4_t c[6][4], const float *a, const float *b)
{
    float32x4_t bv[4];
    load_b(NV, bv, b, 4);
    const float32x4_t a03 = vld1q_f32(a);
    const float32x2_t a45 = vld1_f32(a + 4);
    FMA_LANES_Q(NV, c, 0, bv, a03);
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
        c[4][v] = vfmaq_lane_f32(c[4][v], bv[v], a45, 0);
        c[5][v] = vfmaq_lane_f32(c[5][v], bv[v], a45, 1);
    }
}

/* c[r][v] += bv[v] ar[KK] for the 4 rows, ar = A(r, k..k+3). */
#define FMA_K_LANE(NV, c, bv, a0, a1, a2, a3, KK)                                  \
    do {                                                                           \
        _Pragma("GCC unroll 4") for (int v_ = 0; v_ < (NV); v_++) {                \
            c[0][v_] = vfmaq_laneq_f32(c[0][v_], bv[v_], a0, KK);                  \
            c[1][v_] = vfmaq_laneq_f32(c[1][v_], bv[v_], a1, KK);                  \
            c[2][v_] = vfmaq_laneq_f32(c[2][v_], bv[v_], a2, KK);                  \
            c[3][v_] = vfmaq_laneq_f32(c[3][v_], bv[v_], a3, KK);                  \
        }                                                                          \
    } while (0)

/* Four k, 4 rows of A with unit k stride (K rows in S^T = K Q^T): A(r,
 * k..k+3) in one q register per row; 16 accumulators + 4 A + 4 B. */
SDPA_AI void step_cs4(const int NV, float32x4_t c[6][4], const float *a, ptrdiff_t a_rs,
                      const float *b, ptrdiff_t ldb)
{
    const float32x4_t a0 = vld1q_f32(a), a1 = vld1q_f32(a + a_rs);
    const float32x4_t a2 = vld1q_f32(a + 2 * a_rs), a3 = vld1q_f32(a + 3 * a_rs);
    float32x4_t bv[4];
    load_b(NV, bv, b, 4);
    FMA_K_LANE(NV, c, bv, a0, a1, a2, a3, 0);
    load_b(NV, bv, b + ldb, 4);
    FMA_K_LANE(NV, c, bv, a0, a1, a2, a3, 1);
    load_b(NV, bv, b + 2 * ldb, 4);
    FMA_K_LANE(NV, c, bv, a0, a1, a2, a3, 2);
    load_b(NV, bv, b + 3 * ldb, 4);
    FMA_K_LANE(NV, c, bv, a0, a1, a2, a3, 3);
}

/* How a micro-kernel reads A. */
enum { A_ANY, A_RS6, A_CS4 };

/* C(MR x cols) (+)= A(MR x K) B(K x cols), cols = 4*(NV-1) + ncol (ncol in
 * 1..4: 4 with a full NV, or NV = 1 with a partial ncol). MR is 6 for A_RS6,
 * 4 for A_CS4, 1..4 for A_ANY. */
SDPA_AI void ukernel(const int MODE, const int MR, const int NV, int K, const float *A,
                     ptrdiff_t a_rs, ptrdiff_t a_cs, const float *B, ptrdiff_t ldb,
                     float *C, ptrdiff_t ldc, int ncol, int accumulate,
                     const float *c_scale)
{
    float32x4_t c[6][4];
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) c[r][v] = vdupq_n_f32(0.0f);
    int k = 0;
    if (MODE == A_RS6) {
        for (; k < K; k++) step_rs6(NV, c, A + k * a_cs, B + k * ldb);
    } else if (MODE == A_CS4) {
        for (; k + 3 < K; k += 4) step_cs4(NV, c, A + k, a_rs, B + k * ldb, ldb);
        for (; k < K; k++) step_any(4, NV, c, A + k, a_rs, B + k * ldb, 4);
    } else {
        for (; k + 1 < K; k += 2) {
            step_any(MR, NV, c, A + k * a_cs, a_rs, B + k * ldb, ncol);
            step_any(MR, NV, c, A + (k + 1) * a_cs, a_rs, B + (k + 1) * ldb, ncol);
        }
        if (k < K) step_any(MR, NV, c, A + k * a_cs, a_rs, B + k * ldb, ncol);
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; r++) {
        float *cr = C + r * ldc;
#pragma GCC unroll 4
        for (int v = 0; v < NV; v++) {
            const int n = v == NV - 1 ? ncol : 4;
            float32x4_t x = c[r][v];
            if (accumulate && c_scale)
                x = vfmaq_n_f32(x, ldm(n, cr + 4 * v), c_scale[r]);
            else if (accumulate)
                x = vaddq_f32(x, ldm(n, cr + 4 * v));
            stm(n, cr + 4 * v, x);
        }
    }
}

typedef void (*ukernel_fn)(int K, const float *A, ptrdiff_t a_rs, ptrdiff_t a_cs,
                           const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc,
                           int ncol, int accumulate, const float *c_scale);

/* uk_MR_NV: any strides, full vectors; uk_MR_p: one partial vector;
 * uk_rs_NV: 6 rows, unit row stride of A; uk_cs_NV: 4 rows, unit k stride. */
#define UK(NAME, MODE, MR, NV, NCOL)                                               \
    static void NAME(int K, const float *A, ptrdiff_t a_rs, ptrdiff_t a_cs,        \
                     const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc,       \
                     int ncol, int acc, const float *cs)                           \
    {                                                                              \
        (void)ncol;                                                                \
        ukernel(MODE, MR, NV, K, A, a_rs, a_cs, B, ldb, C, ldc, NCOL, acc, cs);    \
    }
#define UK_ROW(MR)                                                                 \
    UK(uk_##MR##_1, A_ANY, MR, 1, 4) UK(uk_##MR##_2, A_ANY, MR, 2, 4)              \
    UK(uk_##MR##_3, A_ANY, MR, 3, 4) UK(uk_##MR##_4, A_ANY, MR, 4, 4)              \
    UK(uk_##MR##_p, A_ANY, MR, 1, ncol)
UK_ROW(1) UK_ROW(2) UK_ROW(3) UK_ROW(4)
UK(uk_rs_1, A_RS6, 6, 1, 4) UK(uk_rs_2, A_RS6, 6, 2, 4)
UK(uk_rs_3, A_RS6, 6, 3, 4) UK(uk_rs_4, A_RS6, 6, 4, 4)
UK(uk_cs_1, A_CS4, 4, 1, 4) UK(uk_cs_2, A_CS4, 4, 2, 4)
UK(uk_cs_3, A_CS4, 4, 3, 4) UK(uk_cs_4, A_CS4, 4, 4, 4)
#define UK_REF(MR) { uk_##MR##_1, uk_##MR##_2, uk_##MR##_3, uk_##MR##_4, uk_##MR##_p }
static const ukernel_fn uk_table[4][5] = {UK_REF(1), UK_REF(2), UK_REF(3), UK_REF(4)};
static const ukernel_fn uk_rs[4] = {uk_rs_1, uk_rs_2, uk_rs_3, uk_rs_4};
static const ukernel_fn uk_cs[4] = {uk_cs_1, uk_cs_2, uk_cs_3, uk_cs_4};

static void gemm_neon(int M, int N, int K, const float *A, ptrdiff_t a_rs, ptrdiff_t a_cs,
                      const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc,
                      int accumulate, const float *c_scale)
{
    if (K == 0) {
        sdpa__cpu_gemm_k0(M, N, C, ldc, accumulate, c_scale);
        return;
    }
#define UK_CALL(f, m0)                                                                   \
    f(K, A + (m0) * a_rs, a_rs, a_cs, B + c0, ldb, C + (m0) * ldc + c0, ldc, ncol,        \
      accumulate, c_scale ? c_scale + (m0) : NULL)
    for (int n0 = 0; n0 < N; n0 += 16) {
        const int nn = N - n0 < 16 ? N - n0 : 16;
        /* full vectors first, then the 1..3 columns left, if any */
        for (int part = 0; part < 2; part++) {
            const int nv = part ? 1 : nn / 4, ncol = part ? nn % 4 : 4;
            const int c0 = n0 + (part ? nn / 4 * 4 : 0);
            if (nv == 0 || ncol == 0) continue;
            int m0 = 0;
            if (!part && a_rs == 1)
                for (; m0 + 6 <= M; m0 += 6) UK_CALL(uk_rs[nv - 1], m0);
            else if (!part && a_cs == 1)
                for (; m0 + 4 <= M; m0 += 4) UK_CALL(uk_cs[nv - 1], m0);
            for (; m0 < M; m0 += 4) {
                const int mr = M - m0 < 4 ? M - m0 : 4;
                UK_CALL(uk_table[mr - 1][part ? 4 : nv - 1], m0);
            }
        }
    }
#undef UK_CALL
}

static void dots_neon(int M, int N, int K, const float *A, ptrdiff_t lda, const float *B,
                      ptrdiff_t ldb, float *C, ptrdiff_t ldc)
{
    const int kv = K / 4, kr = K % 4;
    for (int j = 0; j < M; j++) {
        const float *a = A + j * lda;
        for (int i = 0; i < N; i++) {
            const float *b = B + i * ldb;
            float32x4_t s0 = vdupq_n_f32(0.0f), s1 = s0, s2 = s0, s3 = s0;
            int c = 0;
            for (; c + 3 < kv; c += 4) {
                s0 = vfmaq_f32(s0, vld1q_f32(a + 4 * c), vld1q_f32(b + 4 * c));
                s1 = vfmaq_f32(s1, vld1q_f32(a + 4 * c + 4), vld1q_f32(b + 4 * c + 4));
                s2 = vfmaq_f32(s2, vld1q_f32(a + 4 * c + 8), vld1q_f32(b + 4 * c + 8));
                s3 = vfmaq_f32(s3, vld1q_f32(a + 4 * c + 12), vld1q_f32(b + 4 * c + 12));
            }
            for (; c < kv; c++) s0 = vfmaq_f32(s0, vld1q_f32(a + 4 * c), vld1q_f32(b + 4 * c));
            if (kr) s1 = vfmaq_f32(s1, ldm(kr, a + 4 * kv), ldm(kr, b + 4 * kv));
            C[j * ldc + i] = vaddvq_f32(vaddq_f32(vaddq_f32(s0, s1), vaddq_f32(s2, s3)));
        }
    }
}

static void colmax_neon(const float *S, ptrdiff_t ld, int nk, int nq, float *m)
{
    for (int i0 = 0; i0 < nq; i0 += 4) {
        const int n = nq - i0;
        float32x4_t mx = ldm(n, m + i0);
        for (int j = 0; j < nk; j++) {
            /* s > m ? s : m: a NaN never enters the max (it reaches the
             * output through exp instead) */
            const float32x4_t s = ldm(n, S + j * ld + i0);
            mx = vbslq_f32(vcgtq_f32(s, mx), s, mx);
        }
        stm(n, m + i0, mx);
    }
}

SDPA_AI float32x4_t exp4(float32x4_t x)
{
    /* t clamped to [-151, 129]: beyond, the result is 0 or inf anyway (a NaN
     * is restored below) */
    float32x4_t t = vmulq_n_f32(x, 1.44269504088896341f);
    t = vminq_f32(vmaxq_f32(t, vdupq_n_f32(-151.0f)), vdupq_n_f32(129.0f));
    const float32x4_t n = vrndnq_f32(t);
    const float32x4_t f = vsubq_f32(t, n); /* in [-1/2, 1/2] */
    float32x4_t p = vdupq_n_f32(1.5403530393381606e-4f);              /* ln2^6/720 */
    p = vfmaq_f32(vdupq_n_f32(1.3333558146428443e-3f), p, f);         /* ln2^5/120 */
    p = vfmaq_f32(vdupq_n_f32(9.6181291076284772e-3f), p, f);         /* ln2^4/24 */
    p = vfmaq_f32(vdupq_n_f32(5.5504108664821580e-2f), p, f);         /* ln2^3/6 */
    p = vfmaq_f32(vdupq_n_f32(2.4022650695910071e-1f), p, f);         /* ln2^2/2 */
    p = vfmaq_f32(vdupq_n_f32(6.9314718055994531e-1f), p, f);         /* ln2 */
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, f);
    /* 2^n = 2^n1 2^n2, n1 = floor(n/2), both in [-76, 65]: normal floats */
    const int32x4_t ni = vcvtq_s32_f32(n);
    const int32x4_t n1 = vshrq_n_s32(ni, 1), n2 = vsubq_s32(ni, n1);
    const int32x4_t bias = vdupq_n_s32(127);
    const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
    const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
    const float32x4_t r = vmulq_f32(vmulq_f32(p, s1), s2);
    return vbslq_f32(vceqq_f32(x, x), r, x);
}

static void expsub_neon(float *S, ptrdiff_t ld, int nk, int nq, const float *sub,
                        float *sum)
{
    for (int i0 = 0; i0 < nq; i0 += 4) {
        const int n = nq - i0;
        const float32x4_t sv = ldm(n, sub + i0);
        float32x4_t acc0 = vdupq_n_f32(0.0f), acc1 = acc0;
        int j = 0;
        for (; j + 1 < nk; j += 2) {
            float *s0 = S + j * ld + i0, *s1 = s0 + ld;
            const float32x4_t e0 = exp4(vsubq_f32(ldm(n, s0), sv));
            const float32x4_t e1 = exp4(vsubq_f32(ldm(n, s1), sv));
            stm(n, s0, e0);
            stm(n, s1, e1);
            acc0 = vaddq_f32(acc0, e0);
            acc1 = vaddq_f32(acc1, e1);
        }
        if (j < nk) {
            float *s0 = S + j * ld + i0;
            const float32x4_t e0 = exp4(vsubq_f32(ldm(n, s0), sv));
            stm(n, s0, e0);
            acc0 = vaddq_f32(acc0, e0);
        }
        if (sum) stm(n, sum + i0, vaddq_f32(ldm(n, sum + i0), vaddq_f32(acc0, acc1)));
    }
}

static void load_row_neon(const void *src, sdpa_dtype dtype, int64_t stride, int n,
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
        const uint16x8_t h = vld1q_u16(s + e);
        float32x4_t lo, hi;
        if (dtype == SDPA_DTYPE_F16) {
            const float16x8_t hf = vreinterpretq_f16_u16(h);
            lo = vcvt_f32_f16(vget_low_f16(hf));
            hi = vcvt_high_f32_f16(hf);
        } else {
            lo = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
            hi = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
        }
        vst1q_f32(dst + e, lo);
        vst1q_f32(dst + e + 4, hi);
    }
    for (; e < n; e++) dst[e] = sdpa__load_float(src, dtype, e);
}

static void dsoft_neon(const float *P, float *dP, const float *th, ptrdiff_t ld, int nk,
                       int nq, const float *dr)
{
    const float32x4_t one = vdupq_n_f32(1.0f), zero = vdupq_n_f32(0.0f);
    for (int i0 = 0; i0 < nq; i0 += 4) {
        const int n = nq - i0;
        const float32x4_t d = ldm(n, dr + i0);
        for (int j = 0; j < nk; j++) {
            const float32x4_t p = ldm(n, P + j * ld + i0);
            float32x4_t x = vmulq_f32(p, vsubq_f32(ldm(n, dP + j * ld + i0), d));
            if (th) {
                const float32x4_t t = ldm(n, th + j * ld + i0);
                x = vmulq_f32(x, vfmsq_f32(one, t, t));
            }
            /* exactly 0 where P is 0 (a NaN P keeps x) */
            stm(n, dP + j * ld + i0, as_f32(vbicq_u32(as_u32(x), vceqq_f32(p, zero))));
        }
    }
}

static void tilestats_neon(const float *S, const float *P, const float *M, ptrdiff_t ld,
                           int nk, int nq, float *t, ptrdiff_t tld)
{
    const float32x4_t ninf = vdupq_n_f32(-INFINITY);
    const uint32x4_t one = as_u32(vdupq_n_f32(1.0f));
    for (int i0 = 0; i0 < nq; i0 += 4) {
        const int n = nq - i0;
        const float32x4_t m = ldm(n, M + i0);
        float32x4_t a = vdupq_n_f32(0.0f), l1 = a, l2 = a, l3 = a, ties = a, cnt = a, sum = a,
                    sq = a;
        float32x4_t mn = vdupq_n_f32(INFINITY), mx = ninf;
        for (int j = 0; j < nk; j++) {
            const float32x4_t s = ldm(n, S + j * ld + i0);
            const float32x4_t e = ldm(n, P + j * ld + i0);
            /* k: kept keys (s > -inf); top: those at the running maximum
             * (counted, not summed); rest: the others. Lanes outside a mask
             * keep the accumulator. */
            const uint32x4_t k = vcgtq_f32(s, ninf);
            const uint32x4_t top = vandq_u32(k, vceqq_f32(s, m));
            const uint32x4_t rest = vbicq_u32(k, top);
            const float32x4_t e2 = vmulq_f32(e, e);
            a = vbslq_f32(rest, vfmaq_f32(a, e, vsubq_f32(s, m)), a);
            l1 = vbslq_f32(rest, vaddq_f32(l1, e), l1);
            l2 = vbslq_f32(rest, vaddq_f32(l2, e2), l2);
            l3 = vbslq_f32(rest, vfmaq_f32(l3, e2, e), l3);
            ties = vaddq_f32(ties, as_f32(vandq_u32(top, one)));
            cnt = vaddq_f32(cnt, as_f32(vandq_u32(k, one)));
            sum = vbslq_f32(k, vaddq_f32(sum, s), sum);
            sq = vbslq_f32(k, vfmaq_f32(sq, s, s), sq);
            mn = vbslq_f32(k, vminq_f32(mn, s), mn);
            mx = vbslq_f32(k, vmaxq_f32(mx, s), mx);
        }
        stm(n, t + CPU_TS_A * tld + i0, a);
        stm(n, t + CPU_TS_P1 * tld + i0, l1);
        stm(n, t + CPU_TS_P2 * tld + i0, l2);
        stm(n, t + CPU_TS_P3 * tld + i0, l3);
        stm(n, t + CPU_TS_TIES * tld + i0, ties);
        stm(n, t + CPU_TS_CNT * tld + i0, cnt);
        stm(n, t + CPU_TS_SUM * tld + i0, sum);
        stm(n, t + CPU_TS_SUMSQ * tld + i0, sq);
        stm(n, t + CPU_TS_MIN * tld + i0, mn);
        stm(n, t + CPU_TS_MAX * tld + i0, mx);
    }
}

static void band_neon(float *S, ptrdiff_t ld, int nk, int nq, const int32_t *lo,
                      const int32_t *hi)
{
    const float32x4_t ninf = vdupq_n_f32(-INFINITY);
    for (int i0 = 0; i0 < nq; i0 += 4) {
        const int n = nq - i0;
        const int32x4_t lv = ldm_s32(n, lo + i0), hv = ldm_s32(n, hi + i0);
        for (int j = 0; j < nk; j++) {
            const int32x4_t jv = vdupq_n_s32(j);
            /* lanes inside [lo, hi) keep their score */
            const uint32x4_t in = vandq_u32(vcgeq_s32(jv, lv), vcltq_s32(jv, hv));
            float *row = S + j * ld + i0;
            stm(n, row, vbslq_f32(in, ldm(n, row), ninf));
        }
    }
}

static bool nonfinite_neon(const float *x, ptrdiff_t ld, int n, int m)
{
    const uint32x4_t expo = vdupq_n_u32(0x7f800000u);
    uint32x4_t bad = vdupq_n_u32(0);
    for (int j = 0; j < n; j++)
        for (int d = 0; d < m; d += 4) {
            const uint32x4_t u = as_u32(ldm(m - d, x + j * ld + d));
            bad = vorrq_u32(bad, vceqq_u32(vandq_u32(u, expo), expo));
        }
    return vmaxvq_u32(bad) != 0;
}

static void store_row_neon(const float *src, float mul, void *dst, sdpa_dtype dtype,
                           int64_t stride, int n)
{
    if (stride != 1) {
        for (int e = 0; e < n; e++) sdpa__store_float(dst, dtype, e * stride, src[e] * mul);
        return;
    }
    for (int e = 0; e < n; e += 4) {
        const int cnt = n - e < 4 ? n - e : 4;
        const float32x4_t x = vmulq_n_f32(ldm(cnt, src + e), mul);
        if (dtype == SDPA_DTYPE_F32) {
            stm(cnt, (float *)dst + e, x);
            continue;
        }
        uint16x4_t h;
        if (dtype == SDPA_DTYPE_F16) {
            h = vreinterpret_u16_f16(vcvt_f16_f32(x)); /* fcvtn: nearest even */
        } else {
            /* bf16: round to nearest even; NaN stays NaN (quietened). */
            const uint32x4_t u = as_u32(x);
            const uint32x4_t lsb = vandq_u32(vshrq_n_u32(u, 16), vdupq_n_u32(1));
            uint32x4_t r = vaddq_u32(u, vaddq_u32(lsb, vdupq_n_u32(0x7FFF)));
            const uint32x4_t num = vceqq_f32(x, x);
            r = vbslq_u32(num, r, vorrq_u32(u, vdupq_n_u32(0x00400000)));
            h = vshrn_n_u32(r, 16);
        }
        uint16_t *d = (uint16_t *)dst + e;
        if (cnt == 4) {
            vst1_u16(d, h);
        } else {
            uint16_t tmp[4];
            vst1_u16(tmp, h);
            memcpy(d, tmp, (size_t)cnt * sizeof(uint16_t));
        }
    }
}

/* ---- decode: K/V streamed in their storage dtype, converted in registers -- */

/* Elements 16 h .. 16 h + 15 (h = 0 or 1) of the q8_0 / q4_0 block at blk
 * (its f16 scale d, then 32 int8, or 16 bytes whose low (h = 0) or high
 * nibbles minus 8 they are) as 4 x 4 f32 d * q. */
SDPA_AI void load_q16(const unsigned char *blk, sdpa_dtype dt, int h, float32x4_t x[4])
{
    uint16_t dh;
    memcpy(&dh, blk, sizeof dh);
    const float d = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(dh))), 0);
    int8x16_t q;
    if (dt == SDPA_DTYPE_Q8_0) {
        q = vld1q_s8((const int8_t *)blk + 2 + 16 * h);
    } else {
        const uint8x16_t b = vld1q_u8(blk + 2);
        const uint8x16_t nib = h ? vshrq_n_u8(b, 4) : vandq_u8(b, vdupq_n_u8(15));
        q = vsubq_s8(vreinterpretq_s8_u8(nib), vdupq_n_s8(8));
    }
    const int16x8_t lo = vmovl_s8(vget_low_s8(q)), hi = vmovl_high_s8(q);
    x[0] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(lo))), d);
    x[1] = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(lo)), d);
    x[2] = vmulq_n_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(hi))), d);
    x[3] = vmulq_n_f32(vcvtq_f32_s32(vmovl_high_s16(hi)), d);
}

/* 4 elements (the first n, 1..4; the other lanes 0, their memory never
 * read) of an f32 / f16 / bf16 row from element e, as f32. */
SDPA_AI float32x4_t load_kv4(const void *base, sdpa_dtype dt, ptrdiff_t e, int n)
{
    if (dt == SDPA_DTYPE_F32) return ldm(n, (const float *)base + e);
    uint16x4_t h;
    if (n >= 4) {
        h = vld1_u16((const uint16_t *)base + e);
    } else {
        uint16_t t[4] = {0, 0, 0, 0};
        memcpy(t, (const uint16_t *)base + e, (size_t)n * sizeof(uint16_t));
        h = vld1_u16(t);
    }
    if (dt == SDPA_DTYPE_F16) return vcvt_f32_f16(vreinterpret_f16_u16(h));
    return vreinterpretq_f32_u32(vshll_n_u16(h, 16));
}

/* Elements c .. c + 15 of a row at byte address row (the first n; the others
 * 0) as 4 x 4 f32. The block types dequantize in registers (c is then a
 * multiple of 16 and n >= 16); FULL (n >= 16 known) loads whole vectors. */
SDPA_AI void load_kv16(const int FULL, const unsigned char *row, sdpa_dtype dt, int c, int n,
                       float32x4_t x[4])
{
    if (dt == SDPA_DTYPE_Q8_0 || dt == SDPA_DTYPE_Q4_0) {
        load_q16(row + (size_t)(c / 32) * sdpa__cpu_unit_bytes(dt), dt, (c >> 4) & 1, x);
        return;
    }
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++)
        x[v] = FULL ? load_kv4(row, dt, c + 4 * v, 4)
               : n > 4 * v ? load_kv4(row, dt, c + 4 * v, n - 4 * v) : vdupq_n_f32(0.0f);
}

/* 16 elements from c of two K rows times NI query rows of B into s. */
SDPA_AI void dots_kv16(const int NI, const int FULL, const unsigned char *const row[2],
                       sdpa_dtype dt, int c, int n, const float *B, ptrdiff_t ldb,
                       float32x4_t s[2][4])
{
    float32x4_t kv[2][4];
    load_kv16(FULL, row[0], dt, c, n, kv[0]);
    load_kv16(FULL, row[1], dt, c, n, kv[1]);
#pragma GCC unroll 4
    for (int v = 0; v < 4; v++) {
        if (!FULL && n <= 4 * v) break;
#pragma GCC unroll 4
        for (int i = 0; i < NI; i++) {
            const float32x4_t q = ldm(FULL ? 4 : n - 4 * v, B + i * ldb + c + 4 * v);
            s[0][i] = vfmaq_f32(s[0][i], kv[0][v], q);
            s[1][i] = vfmaq_f32(s[1][i], kv[1][v], q);
        }
    }
}

/* NI (<= 4) query rows against M key rows, 2 keys at a time: each 16
 * elements of a K row are loaded and converted once and multiplied into NI
 * accumulators per key (8 independent FMA chains), reduced by pairwise adds.
 * Rows come from A's table (across pages). */
SDPA_AI void dots_kv_block(const int NI, int M, int K, const sdpa__cpu_rows *A, sdpa_dtype dt,
                           const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc)
{
    const size_t usz = sdpa__cpu_unit_bytes(dt), rowb = (size_t)K / sdpa__cpu_unit_elems(dt) * usz;
    const int ahead = sdpa__cpu_kv_ahead(rowb);
    const int kfull = K / 16 * 16;
    for (int j = 0; j < M; j += 2) {
        for (int t = j + ahead; t < j + ahead + 2 && t < A->n; t++)
            for (size_t o = 0; o < rowb; o += 64) __builtin_prefetch(sdpa__cpu_rows_at(A, t) + o);
        /* a row past M repeats row j (its sums are not stored) */
        const unsigned char *const row[2] = {sdpa__cpu_rows_at(A, j),
                                             sdpa__cpu_rows_at(A, j + 1 < M ? j + 1 : j)};
        float32x4_t s[2][4];
#pragma GCC unroll 4
        for (int i = 0; i < 4; i++) s[0][i] = s[1][i] = vdupq_n_f32(0.0f);
        int c = 0;
        if (sdpa__cpu_unit_elems(dt) > 1) { /* whole blocks: K % 32 == 0 */
            for (; c < K; c += 32) {
                dots_kv16(NI, 1, row, dt, c, 16, B, ldb, s);
                dots_kv16(NI, 1, row, dt, c + 16, 16, B, ldb, s);
            }
        } else {
            for (; c < kfull; c += 16) dots_kv16(NI, 1, row, dt, c, 16, B, ldb, s);
            if (c < K) dots_kv16(NI, 0, row, dt, c, K - c, B, ldb, s);
        }
#pragma GCC unroll 2
        for (int k = 0; k < 2; k++) {
            if (j + k >= M) break;
            /* lane i: the sum of s[k][i] */
            const float32x4_t w = vpaddq_f32(vpaddq_f32(s[k][0], s[k][1]),
                                             vpaddq_f32(s[k][2], s[k][3]));
            stm(NI, C + (j + k) * ldc, w);
        }
    }
}

/* acc += P^T V over K keys for NR rows and 16 columns from c0 (the first n;
 * FULL: n = 16 known), rows of V from its table. */
SDPA_AI void pv_kv_loop(const int NR, const int FULL, int n, int c0, int K, const float *P,
                        ptrdiff_t ldp, const sdpa__cpu_rows *V, sdpa_dtype dt, int ahead,
                        float32x4_t acc[4][4])
{
    /* the element, or for the block types the block, holding column c0 */
    const bool blocks = sdpa__cpu_unit_elems(dt) > 1;
    const size_t cb = (size_t)c0 / sdpa__cpu_unit_elems(dt) * sdpa__cpu_unit_bytes(dt);
    for (int k = 0; k < K; k++) {
        const unsigned char *vr = sdpa__cpu_rows_at(V, k);
        if (k + ahead < V->n) __builtin_prefetch(sdpa__cpu_rows_at(V, k + ahead) + cb);
        float32x4_t v[4];
        if (blocks)
            load_q16(vr + cb, dt, (c0 >> 4) & 1, v);
        else
            load_kv16(FULL, vr, dt, c0, n, v);
        const float32x4_t p = ldm(NR, P + k * ldp); /* lane r: row r's p */
#pragma GCC unroll 4
        for (int q = 0; q < 4; q++) {
            if (!FULL && n <= 4 * q) break;
            acc[0][q] = vfmaq_laneq_f32(acc[0][q], v[q], p, 0);
            if (NR > 1) acc[1][q] = vfmaq_laneq_f32(acc[1][q], v[q], p, 1);
            if (NR > 2) acc[2][q] = vfmaq_laneq_f32(acc[2][q], v[q], p, 2);
            if (NR > 3) acc[3][q] = vfmaq_laneq_f32(acc[3][q], v[q], p, 3);
        }
    }
}

/* C (NR rows x n <= 16 columns from c0) = C * c_scale + P^T V over K keys:
 * each 16 columns of a V row are loaded and converted once for the NR rows,
 * whose P values of a key are the lanes of one vector (by-element FMAs). */
SDPA_AI void pv_kv_block(const int NR, int n, int c0, int Dv, int K, const float *P,
                         ptrdiff_t ldp, const sdpa__cpu_rows *V, sdpa_dtype dt, float *C,
                         ptrdiff_t ldc, const float *c_scale)
{
    const int ahead = sdpa__cpu_kv_ahead((size_t)Dv / sdpa__cpu_unit_elems(dt) *
                                         sdpa__cpu_unit_bytes(dt));
    float32x4_t acc[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++) {
        const float sc = c_scale ? c_scale[r] : 1.0f;
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            acc[r][v] = n > 4 * v ? vmulq_n_f32(ldm(n - 4 * v, C + r * ldc + 4 * v), sc)
                                  : vdupq_n_f32(0.0f);
    }
    if (n >= 16)
        pv_kv_loop(NR, 1, 16, c0, K, P, ldp, V, dt, ahead, acc);
    else
        pv_kv_loop(NR, 0, n, c0, K, P, ldp, V, dt, ahead, acc);
#pragma GCC unroll 4
    for (int r = 0; r < NR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < 4; v++)
            if (n > 4 * v) stm(n - 4 * v, C + r * ldc + 4 * v, acc[r][v]);
}

#define PV_KV_COLS 16
#include "cpu_decode_tables.h"

const sdpa__cpu_kernels sdpa__cpu_kernels_neon = {
    .name = "neon",
    .gemm = gemm_neon,
    .dots = dots_neon,
    .colmax = colmax_neon,
    .expsub = expsub_neon,
    .load_row = load_row_neon,
    .store_row = store_row_neon,
    .transpose = sdpa__cpu_transpose,
    .dsoft = dsoft_neon,
    .nonfinite = nonfinite_neon,
    .band = band_neon,
    .tilestats = tilestats_neon,
    .dots_kv = decode_dots_kv,
    .pv_kv = decode_pv_kv,
};
