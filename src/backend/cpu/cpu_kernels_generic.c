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

static void gemm_generic(int M, int N, int K, const float *A, ptrdiff_t a_rs,
                         ptrdiff_t a_cs, const float *B, ptrdiff_t ldb, float *C,
                         ptrdiff_t ldc, int accumulate, const float *c_scale)
{
    for (int r = 0; r < M; r++) {
        float *c = C + r * ldc;
        if (!accumulate)
            for (int n = 0; n < N; n++) c[n] = 0.0f;
        else if (c_scale)
            for (int n = 0; n < N; n++) c[n] *= c_scale[r];
        for (int k = 0; k < K; k++) {
            const float a = A[r * a_rs + k * a_cs];
            const float *b = B + k * ldb;
            for (int n = 0; n < N; n++) c[n] += a * b[n];
        }
    }
}

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
            for (int r = 0; r < nq; r++) dp[r] *= 1.0f - th[j * ld + r] * th[j * ld + r];
    }
}

static void tilestats_generic(const float *S, const float *P, ptrdiff_t ld, int nk,
                              int nq, float *t, ptrdiff_t tld)
{
    for (int i = 0; i < nq; i++) {
        float a = 0, l2 = 0, l3 = 0, cnt = 0, sum = 0, sumsq = 0;
        float mn = INFINITY, mx = -INFINITY;
        for (int j = 0; j < nk; j++) {
            const float s = S[j * ld + i], e = P[j * ld + i];
            if (!(s > -INFINITY)) continue;
            a += e * s;
            l2 += e * e;
            l3 += e * e * e;
            cnt += 1;
            sum += s;
            sumsq += s * s;
            mn = s < mn ? s : mn;
            mx = s > mx ? s : mx;
        }
        t[0 * tld + i] = a;
        t[1 * tld + i] = l2;
        t[2 * tld + i] = l3;
        t[3 * tld + i] = cnt;
        t[4 * tld + i] = sum;
        t[5 * tld + i] = sumsq;
        t[6 * tld + i] = mn;
        t[7 * tld + i] = mx;
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

const sdpa__cpu_kernels sdpa__cpu_kernels_generic = {
    .name = "generic",
    .gemm = gemm_generic,
    .dots = dots_generic,
    .colmax = colmax_generic,
    .expsub = expsub_generic,
    .load_row = load_row_generic,
    .store_row = store_row_generic,
    .dsoft = dsoft_generic,
    .nonfinite = nonfinite_generic,
    .band = band_generic,
    .tilestats = tilestats_generic,
};
