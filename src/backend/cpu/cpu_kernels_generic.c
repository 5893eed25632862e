/*
 * cpu_kernels_generic.c — portable versions of the fast CPU backend's vector
 * kernels (see sdpa__cpu_kernels in cpu_internal.h), written as plain loops
 * the compiler can vectorise for whatever CPU it targets. They define the
 * behaviour the AVX-512 and AVX2 versions must match: exp(-inf) = 0 exactly, NaN
 * propagates, accumulation in f32.
 *
 * sdpa__cpu_kernels_select() (cpu_kernels_select.c) picks AVX-512 or AVX2 when
 * the CPU has it, unless SDPA_CPU_KERNELS says otherwise.
 */
#include "cpu_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void dots_generic(int M, int N, int K, const float *A, ptrdiff_t lda,
                         const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc)
{
    for (int j = 0; j < M; j++)
        for (int i = 0; i < N; i++) {
            const float *a = A + j * lda, *b = B + i * ldb;
            float s = 0.0f;
            for (int k = 0; k < K; k++) s += a[k] * b[k];
            C[j * ldc + i] = s;
        }
}

static void colmax_generic(const float *S, ptrdiff_t ld, int nk, int nq, float *m)
{
    for (int j = 0; j < nk; j++)
        for (int i = 0; i < nq; i++) {
            const float s = S[j * ld + i];
            m[i] = s > m[i] ? s : m[i];
        }
}

static void expsub_generic(float *S, ptrdiff_t ld, int nk, int nq,
                           const float *sub, float *sum)
{
    for (int j = 0; j < nk; j++)
        for (int i = 0; i < nq; i++) {
            const float e = expf(S[j * ld + i] - sub[i]);
            S[j * ld + i] = e;
            if (sum) sum[i] += e;
        }
}

static void load_row_generic(const void *src, sdpa_dtype dtype, int64_t stride,
                             int n, float *dst)
{
    if (dtype == SDPA_DTYPE_F32 && stride == 1) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    for (int e = 0; e < n; e++) dst[e] = sdpa__load_float(src, dtype, e * stride);
}

static void dsoft_generic(const float *P, float *dP, const float *th, ptrdiff_t ld,
                          int nk, int nq, const float *dr)
{
    for (int j = 0; j < nk; j++) {
        const float *pp = P + j * ld;
        float *dp = dP + j * ld;
        for (int r = 0; r < nq; r++) dp[r] = pp[r] == 0.0f ? 0.0f : pp[r] * (dp[r] - dr[r]);
        if (th)
            for (int r = 0; r < nq; r++)
                if (pp[r] != 0.0f) dp[r] *= 1.0f - th[j * ld + r] * th[j * ld + r];
    }
}

static void tilestats_generic(const float *S, const float *P, const float *M, ptrdiff_t ld,
                              int nk, int nq, float *t, ptrdiff_t tld)
{
    for (int i = 0; i < nq; i++) {
        float a = 0, l1 = 0, l2 = 0, l3 = 0, ties = 0, cnt = 0, sum = 0, sumsq = 0;
        float mn = INFINITY, mx = -INFINITY;
        for (int j = 0; j < nk; j++) {
            const float s = S[j * ld + i], e = P[j * ld + i];
            if (!(s > -INFINITY)) continue;
            if (s == M[i]) {
                ties += 1;
            } else {
                a += e * (s - M[i]);
                l1 += e;
                l2 += e * e;
                l3 += e * e * e;
            }
            cnt += 1;
            sum += s;
            sumsq += s * s;
            mn = s < mn ? s : mn;
            mx = s > mx ? s : mx;
        }
        t[CPU_TS_A * tld + i] = a;
        t[CPU_TS_P1 * tld + i] = l1;
        t[CPU_TS_P2 * tld + i] = l2;
        t[CPU_TS_P3 * tld + i] = l3;
        t[CPU_TS_TIES * tld + i] = ties;
        t[CPU_TS_CNT * tld + i] = cnt;
        t[CPU_TS_SUM * tld + i] = sum;
        t[CPU_TS_SUMSQ * tld + i] = sumsq;
        t[CPU_TS_MIN * tld + i] = mn;
        t[CPU_TS_MAX * tld + i] = mx;
    }
}

static void band_generic(float *S, ptrdiff_t ld, int nk, int nq, const int32_t *lo,
                         const int32_t *hi)
{
    for (int j = 0; j < nk; j++) {
        float *row = S + j * ld;
        for (int i = 0; i < nq; i++) row[i] = (j >= lo[i] && j < hi[i]) ? row[i] : -INFINITY;
    }
}

static bool nonfinite_generic(const float *x, ptrdiff_t ld, int n, int m)
{
    uint32_t bad = 0;
    for (int j = 0; j < n; j++) {
        const float *row = x + j * ld;
        for (int d = 0; d < m; d++) {
            uint32_t u;
            memcpy(&u, &row[d], sizeof u);
            bad |= (u & 0x7f800000u) == 0x7f800000u;
        }
    }
    return bad != 0;
}

static void store_row_generic(const float *src, float mul, void *dst, sdpa_dtype dtype,
                              int64_t stride, int n)
{
    if (dtype == SDPA_DTYPE_F32) {
        float *d = dst;
        for (int e = 0; e < n; e++) d[e * stride] = src[e] * mul;
        return;
    }
    for (int e = 0; e < n; e++) sdpa__store_float(dst, dtype, e * stride, src[e] * mul);
}

/* ---- decode: K/V read in place in their storage dtype (cpu_decode_tables.h) */

/* Element e of a K/V row of dtype dt (blocks dequantized). */
static inline float kv_elem(const void *row, sdpa_dtype dt, ptrdiff_t e)
{
    return sdpa__cpu_unit_elems(dt) > 1 ? sdpa__cpu_block_elem(row, dt, e)
                                         : sdpa__load_float(row, dt, e);
}

static inline __attribute__((always_inline)) void
dots_kv_block(const int NI, int M, int K, const sdpa__cpu_rows *A, sdpa_dtype dt,
              const float *B, ptrdiff_t ldb, float *C, ptrdiff_t ldc)
{
    /* no prefetch here */
    for (int j = 0; j < M; j++)
        for (int i = 0; i < NI; i++) {
            float acc = 0.0f;
            for (int k = 0; k < K; k++)
                acc += kv_elem(sdpa__cpu_rows_at(A, j), dt, k) * B[i * ldb + k];
            C[j * ldc + i] = acc;
        }
}

static inline __attribute__((always_inline)) void
pv_kv_block(const int NR, int N, int c0, int Dv, int K, const float *P, ptrdiff_t ldp,
            const sdpa__cpu_rows *V, sdpa_dtype dt, float *C, ptrdiff_t ldc,
            const float *c_scale)
{
    (void)Dv;
    for (int r = 0; r < NR; r++) {
        float *c = C + r * ldc;
        const float sc = c_scale ? c_scale[r] : 1.0f;
        for (int n = 0; n < N; n++) c[n] *= sc;
        for (int k = 0; k < K; k++) {
            const float pk = P[r + k * ldp];
            for (int n = 0; n < N; n++) c[n] += pk * kv_elem(sdpa__cpu_rows_at(V, k), dt, c0 + n);
        }
    }
}

#define PV_KV_COLS 64
#include "cpu_decode_tables.h"

const sdpa__cpu_kernels sdpa__cpu_kernels_generic = {
    .name = "generic",
    .gemm = sdpa__cpu_gemm_skip_zeros, /* the portable product (cpu_common.c) */
    .dots = dots_generic,
    .colmax = colmax_generic,
    .expsub = expsub_generic,
    .load_row = load_row_generic,
    .store_row = store_row_generic,
    .transpose = sdpa__cpu_transpose,
    .dsoft = dsoft_generic,
    .nonfinite = nonfinite_generic,
    .band = band_generic,
    .tilestats = tilestats_generic,
    .dots_kv = decode_dots_kv,
    .pv_kv = decode_pv_kv,
};
