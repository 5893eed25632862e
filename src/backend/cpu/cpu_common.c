/*
 * cpu_common.c — small helpers shared by the fast CPU backend's forward and
 * backward drivers: per-call parameters (gains and per-head scales loaded
 * once into the plan's workspace), the QK-norm forward and
 * gradient on one f32 row, and the product that skips zero weights (for
 * operands that hold Inf/NaN). Everything here is O(D) per row; the heavy loops
 * live in the kernels.
 */
#include "cpu_internal.h"

#include <math.h>

void sdpa__cpu_load_params(const sdpa__cpu_plan *pl, const sdpa__problem *p,
                           const sdpa__fwd_args *a, sdpa__cpu_call *call)
{
    float *qg = pl->params, *kg = pl->params + p->D, *sc = pl->params + 2 * p->D;
    call->q_gain = call->k_gain = NULL;
    if (p->has_q_gain) {
        for (int64_t d = 0; d < p->D; d++)
            qg[d] = ((const float *)a->q_gain.mem)[sdpa__at(&a->q_gain, 0, 0, 0, d)];
        call->q_gain = qg;
    }
    if (p->has_k_gain) {
        for (int64_t d = 0; d < p->D; d++)
            kg[d] = ((const float *)a->k_gain.mem)[sdpa__at(&a->k_gain, 0, 0, 0, d)];
        call->k_gain = kg;
    }
    for (int64_t h = 0; h < p->Hq; h++)
        sc[h] = p->has_temperature
                    ? ((const float *)a->temperature.mem)[sdpa__at(&a->temperature, 0, h, 0, 0)]
                    : (float)p->scale;
    call->scale_h = sc;
}

float sdpa__cpu_norm(const sdpa__problem *p, float *x, int64_t D)
{
    const float eps = (float)p->qk_norm_eps;
    float r = 1.0f;
    switch (p->qk_norm) {
    case SDPA_QK_NORM_RMS:
    case SDPA_QK_NORM_L2: {
        float ss = 0.0f;
        for (int64_t d = 0; d < D; d++) ss += x[d] * x[d];
        if (p->qk_norm == SDPA_QK_NORM_RMS) ss /= (float)D;
        r = 1.0f / sqrtf(ss + eps);
        for (int64_t d = 0; d < D; d++) x[d] *= r;
        break;
    }
    case SDPA_QK_NORM_LAYER: {
        float mu = 0.0f, var = 0.0f;
        for (int64_t d = 0; d < D; d++) mu += x[d];
        mu /= (float)D;
        for (int64_t d = 0; d < D; d++) var += (x[d] - mu) * (x[d] - mu);
        var /= (float)D;
        r = 1.0f / sqrtf(var + eps);
        for (int64_t d = 0; d < D; d++) x[d] = (x[d] - mu) * r;
        break;
    }
    default: break;
    }
    return r;
}

void sdpa__cpu_norm_backward(const sdpa__problem *p, const float *xhat, float r,
                             float *dx, int64_t D)
{
    switch (p->qk_norm) {
    case SDPA_QK_NORM_RMS:
    case SDPA_QK_NORM_L2: {
        float dot = 0.0f;
        for (int64_t d = 0; d < D; d++) dot += dx[d] * xhat[d];
        if (p->qk_norm == SDPA_QK_NORM_RMS) dot /= (float)D;
        for (int64_t d = 0; d < D; d++) dx[d] = r * (dx[d] - xhat[d] * dot);
        break;
    }
    case SDPA_QK_NORM_LAYER: {
        float mean = 0.0f, dot = 0.0f;
        for (int64_t d = 0; d < D; d++) {
            mean += dx[d];
            dot += dx[d] * xhat[d];
        }
        mean /= (float)D;
        dot /= (float)D;
        for (int64_t d = 0; d < D; d++) dx[d] = r * (dx[d] - mean - xhat[d] * dot);
        break;
    }
    default: break;
    }
}

void sdpa__cpu_load_qk(const sdpa__cpu_kernels *k, const sdpa__problem *p,
                       const sdpa__cpu_kv *src, int64_t b, int64_t h, int64_t i,
                       const float *gain, float mul, float *dst, float *xhat,
                       float *r_out)
{
    const int64_t D = p->D;
    sdpa__cpu_kv_load(k, src, b, h, i, (int)D, dst);
    const float r = sdpa__cpu_norm(p, dst, D);
    if (r_out) *r_out = r;
    if (xhat)
        for (int64_t d = 0; d < D; d++) xhat[d] = dst[d];
    if (gain) {
        for (int64_t d = 0; d < D; d++) dst[d] *= gain[d] * mul;
    } else if (mul != 1.0f) {
        for (int64_t d = 0; d < D; d++) dst[d] *= mul;
    }
}

void sdpa__cpu_transpose(int R, int C, const float *src, ptrdiff_t lds, float *dst,
                         ptrdiff_t ldd, float mul)
{
    for (int c = 0; c < C; c++)
        for (int r = 0; r < R; r++) dst[c * ldd + r] = src[r * lds + c] * mul;
}

void sdpa__cpu_gemm_skip_zeros(int M, int N, int K, const float *A, ptrdiff_t a_rs,
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
            if (a == 0.0f) continue;
            const float *b = B + k * ldb;
            for (int n = 0; n < N; n++) c[n] += a * b[n];
        }
    }
}
