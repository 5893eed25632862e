/*
 * naive_attention.h — a second, independent float64 attention written straight
 * from docs/semantics.md and tests/conformance/README.md, plus a small
 * host-memory problem builder, for the reference/gradcheck/merge suites.
 *
 * It exists so the library's reference backend is checked against code that
 * shares nothing with it: loops over (b, h, i, j) with no tiling, no online
 * softmax and no stride tricks. Inputs are contiguous f32 host arrays (the
 * values the library sees); masks and biases have their own (possibly
 * broadcast, extent 1) shapes. Header-only (static functions) so each suite
 * stays one executable; used by test_reference.c, test_gradcheck.c,
 * test_merge.c, and by gen_conformance.c, which writes the expected outputs
 * of the repository's conformance corpus (tests/conformance) from it.
 */
#ifndef SDPA_TEST_NAIVE_ATTENTION_H
#define SDPA_TEST_NAIVE_ATTENTION_H

#include "testutil.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nv_problem {
    int64_t B, Hq, Hkv, Sq, Skv, D, Dv;
    double scale; /* as in the desc: SDPA_SCALE_DEFAULT / _MUP / value */
    sdpa_diagonal diagonal;
    int64_t diagonal_offset, window_left, window_right;
    double softcap;
    sdpa_qk_norm qk_norm;
    double eps, saturation;
    float *q, *k, *v;           /* contiguous (B,Hq,Sq,D) (B,Hkv,Skv,D) (B,Hkv,Skv,Dv) */
    uint8_t *mask;              /* NULL or (mask_shape) */
    int64_t mask_shape[4];
    float *bias;                /* NULL or (bias_shape) */
    int64_t bias_shape[4];
    int32_t *kv_len;            /* NULL or (B) */
    float *q_gain, *k_gain;     /* NULL or (D) */
    float *temperature;         /* NULL or (Hq) */
    bool want_lse, want_stats;
    /* library outputs (poisoned with NaN by nv_poison) */
    float *out, *lse, *stats;
    /* backward */
    float *dout, *dq, *dk, *dv, *dq_gain, *dk_gain, *dtemperature;
} nv_problem;

#define NV_IDX4(s, a, b, c, d) ((((a) * (s)[1] + (b)) * (s)[2] + (c)) * (s)[3] + (d))

static inline float *nv_floats(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}
static inline float *nv_randn(trng *r, size_t n, double sd)
{
    float *p = nv_floats(n);
    for (size_t i = 0; i < n; i++) p[i] = (float)(sd * trng_normal(r));
    return p;
}

/* q, k, v random normal; outputs allocated and NaN; everything else off. */
static inline void nv_make(nv_problem *p, trng *r, int64_t B, int64_t Hq,
                           int64_t Hkv, int64_t Sq, int64_t Skv, int64_t D,
                           int64_t Dv)
{
    memset(p, 0, sizeof *p);
    p->B = B; p->Hq = Hq; p->Hkv = Hkv; p->Sq = Sq; p->Skv = Skv; p->D = D; p->Dv = Dv;
    p->scale = SDPA_SCALE_DEFAULT;
    p->diagonal = SDPA_DIAGONAL_TOP_LEFT;
    p->window_left = p->window_right = -1;
    p->eps = 1e-6;
    p->saturation = 0.99;
    p->q = nv_randn(r, (size_t)(B * Hq * Sq * D), 1.0);
    p->k = nv_randn(r, (size_t)(B * Hkv * Skv * D), 1.0);
    p->v = nv_randn(r, (size_t)(B * Hkv * Skv * Dv), 1.0);
    p->out = nv_floats((size_t)(B * Hq * Sq * Dv));
    p->lse = nv_floats((size_t)(B * Hq * Sq));
    p->stats = nv_floats((size_t)(B * Hq * SDPA_STAT_COUNT));
    p->want_lse = true;
}

/* Random mask of shape (m0, m1, Sq, Skv) with m0 in {1, B}, m1 in {1, Hq}. */
static inline void nv_add_mask(nv_problem *p, trng *r, int64_t m0, int64_t m1,
                               double keep)
{
    int64_t n = m0 * m1 * p->Sq * p->Skv;
    p->mask_shape[0] = m0; p->mask_shape[1] = m1;
    p->mask_shape[2] = p->Sq; p->mask_shape[3] = p->Skv;
    free(p->mask);
    p->mask = malloc((size_t)n);
    ck_assert_ptr_nonnull(p->mask);
    for (int64_t e = 0; e < n; e++) p->mask[e] = trng_uniform(r) < keep ? 1 : 0;
}

/* Random bias (b0, b1, Sq, Skv); a fraction `neginf` of entries is -inf. */
static inline void nv_add_bias(nv_problem *p, trng *r, int64_t b0, int64_t b1,
                               double neginf)
{
    int64_t n = b0 * b1 * p->Sq * p->Skv;
    p->bias_shape[0] = b0; p->bias_shape[1] = b1;
    p->bias_shape[2] = p->Sq; p->bias_shape[3] = p->Skv;
    free(p->bias);
    p->bias = nv_randn(r, (size_t)n, 1.0);
    for (int64_t e = 0; e < n; e++)
        if (trng_uniform(r) < neginf) p->bias[e] = -INFINITY;
}

static inline void nv_add_gains(nv_problem *p, trng *r)
{
    free(p->q_gain); free(p->k_gain);
    p->q_gain = nv_floats((size_t)p->D);
    p->k_gain = nv_floats((size_t)p->D);
    for (int64_t d = 0; d < p->D; d++) {
        p->q_gain[d] = (float)(1.0 + 0.3 * trng_normal(r));
        p->k_gain[d] = (float)(1.0 + 0.3 * trng_normal(r));
    }
}

static inline void nv_add_temperature(nv_problem *p, trng *r)
{
    free(p->temperature);
    p->temperature = nv_floats((size_t)p->Hq);
    for (int64_t h = 0; h < p->Hq; h++)
        p->temperature[h] = (float)(2.0 + 6.0 * trng_uniform(r));
}

static inline void nv_add_kv_len(nv_problem *p, const int32_t *values)
{
    free(p->kv_len);
    p->kv_len = malloc((size_t)p->B * sizeof *p->kv_len);
    ck_assert_ptr_nonnull(p->kv_len);
    memcpy(p->kv_len, values, (size_t)p->B * sizeof *p->kv_len);
}

/* Backward arrays: dout random, gradients NaN. */
static inline void nv_add_backward(nv_problem *p, trng *r)
{
    p->dout = nv_randn(r, (size_t)(p->B * p->Hq * p->Sq * p->Dv), 1.0);
    p->dq = nv_floats((size_t)(p->B * p->Hq * p->Sq * p->D));
    p->dk = nv_floats((size_t)(p->B * p->Hkv * p->Skv * p->D));
    p->dv = nv_floats((size_t)(p->B * p->Hkv * p->Skv * p->Dv));
    p->dq_gain = nv_floats((size_t)p->D);
    p->dk_gain = nv_floats((size_t)p->D);
    p->dtemperature = nv_floats((size_t)p->Hq);
}

static inline void nv_free(nv_problem *p)
{
    float *f[] = {p->q, p->k, p->v, p->bias, p->q_gain, p->k_gain, p->temperature,
                  p->out, p->lse, p->stats, p->dout, p->dq, p->dk, p->dv,
                  p->dq_gain, p->dk_gain, p->dtemperature};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) free(f[i]);
    free(p->mask);
    free(p->kv_len);
    memset(p, 0, sizeof *p);
}

static inline void nv_fill_nan(float *x, size_t n)
{
    if (x) for (size_t i = 0; i < n; i++) x[i] = NAN;
}
static inline void nv_poison(nv_problem *p)
{
    nv_fill_nan(p->out, (size_t)(p->B * p->Hq * p->Sq * p->Dv));
    nv_fill_nan(p->lse, (size_t)(p->B * p->Hq * p->Sq));
    nv_fill_nan(p->stats, (size_t)(p->B * p->Hq * SDPA_STAT_COUNT));
    nv_fill_nan(p->dq, (size_t)(p->B * p->Hq * p->Sq * p->D));
    nv_fill_nan(p->dk, (size_t)(p->B * p->Hkv * p->Skv * p->D));
    nv_fill_nan(p->dv, (size_t)(p->B * p->Hkv * p->Skv * p->Dv));
    nv_fill_nan(p->dq_gain, (size_t)p->D);
    nv_fill_nan(p->dk_gain, (size_t)p->D);
    nv_fill_nan(p->dtemperature, (size_t)p->Hq);
}

/* The library description over the problem's host arrays. */
static inline void nv_desc(const nv_problem *p, sdpa_attention_desc *d)
{
    sdpa_forward_tensors *t = &d->tensors;
    sdpa_attention_desc_init(d);
    d->scale = p->scale;
    d->diagonal = p->diagonal;
    d->diagonal_offset = p->diagonal_offset;
    d->window_left = p->window_left;
    d->window_right = p->window_right;
    d->softcap = p->softcap;
    d->qk_norm = p->qk_norm;
    d->qk_norm_eps = p->eps;
    d->stats_saturation = p->saturation;
    t->q = sdpa_tensor_host(p->q, SDPA_DTYPE_F32, p->B, p->Hq, p->Sq, p->D);
    t->k = sdpa_tensor_host(p->k, SDPA_DTYPE_F32, p->B, p->Hkv, p->Skv, p->D);
    t->v = sdpa_tensor_host(p->v, SDPA_DTYPE_F32, p->B, p->Hkv, p->Skv, p->Dv);
    t->out = sdpa_tensor_host(p->out, SDPA_DTYPE_F32, p->B, p->Hq, p->Sq, p->Dv);
    if (p->mask)
        t->mask = sdpa_tensor_host(p->mask, SDPA_DTYPE_U8, p->mask_shape[0],
                                   p->mask_shape[1], p->mask_shape[2], p->mask_shape[3]);
    if (p->bias)
        t->bias = sdpa_tensor_host(p->bias, SDPA_DTYPE_F32, p->bias_shape[0],
                                   p->bias_shape[1], p->bias_shape[2], p->bias_shape[3]);
    if (p->kv_len)
        t->kv_len = sdpa_tensor_host(p->kv_len, SDPA_DTYPE_I32, p->B, 1, 1, 1);
    if (p->q_gain) t->q_gain = sdpa_tensor_host(p->q_gain, SDPA_DTYPE_F32, 1, 1, 1, p->D);
    if (p->k_gain) t->k_gain = sdpa_tensor_host(p->k_gain, SDPA_DTYPE_F32, 1, 1, 1, p->D);
    if (p->temperature)
        t->temperature = sdpa_tensor_host(p->temperature, SDPA_DTYPE_F32, 1, p->Hq, 1, 1);
    if (p->want_lse) t->lse = sdpa_tensor_host(p->lse, SDPA_DTYPE_F32, p->B, p->Hq, p->Sq, 1);
    if (p->want_stats)
        t->stats = sdpa_tensor_host(p->stats, SDPA_DTYPE_F32, p->B, p->Hq, 1, SDPA_STAT_COUNT);
}

static inline void nv_bwd(const nv_problem *p, sdpa_backward_tensors *g)
{
    memset(g, 0, sizeof *g);
    g->dout = sdpa_tensor_host(p->dout, SDPA_DTYPE_F32, p->B, p->Hq, p->Sq, p->Dv);
    g->dq = sdpa_tensor_host(p->dq, SDPA_DTYPE_F32, p->B, p->Hq, p->Sq, p->D);
    g->dk = sdpa_tensor_host(p->dk, SDPA_DTYPE_F32, p->B, p->Hkv, p->Skv, p->D);
    g->dv = sdpa_tensor_host(p->dv, SDPA_DTYPE_F32, p->B, p->Hkv, p->Skv, p->Dv);
    if (p->q_gain) g->dq_gain = sdpa_tensor_host(p->dq_gain, SDPA_DTYPE_F32, 1, 1, 1, p->D);
    if (p->k_gain) g->dk_gain = sdpa_tensor_host(p->dk_gain, SDPA_DTYPE_F32, 1, 1, 1, p->D);
    if (p->temperature)
        g->dtemperature = sdpa_tensor_host(p->dtemperature, SDPA_DTYPE_F32, 1, p->Hq, 1, 1);
}

/* Forward through the one-call API. */
static inline sdpa_status nv_run(sdpa_context *ctx, nv_problem *p)
{
    sdpa_attention_desc d;
    nv_desc(p, &d);
    return sdpa_attention_forward(ctx, &d);
}

/* A reference context with quiet logs. */
static inline sdpa_context *nv_context(void)
{
    sdpa_context_options o;
    sdpa_context *ctx = NULL;
    sdpa_context_options_init(&o);
    o.backend = SDPA_BACKEND_REFERENCE;
    o.log_level = SDPA_LOG_ERROR;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    return ctx;
}

/* ---- the oracle -------------------------------------------------------------- */

/* Normalises x (length n) in place per p->qk_norm, then multiplies by gain. */
static inline void nv_normalise(const nv_problem *p, double *x, int64_t n,
                                const float *gain)
{
    double s = 0, s2 = 0, mean, var, den = 1;
    for (int64_t d = 0; d < n; d++) { s += x[d]; s2 += x[d] * x[d]; }
    mean = s / (double)n;
    switch (p->qk_norm) {
    case SDPA_QK_NORM_RMS: den = sqrt(s2 / (double)n + p->eps); mean = 0; break;
    case SDPA_QK_NORM_LAYER:
        var = 0;
        for (int64_t d = 0; d < n; d++) var += (x[d] - mean) * (x[d] - mean);
        var /= (double)n;
        den = sqrt(var + p->eps);
        break;
    case SDPA_QK_NORM_L2: den = sqrt(s2 + p->eps); mean = 0; break;
    default: mean = 0; break;
    }
    for (int64_t d = 0; d < n; d++) x[d] = (x[d] - mean) / den;
    if (gain)
        for (int64_t d = 0; d < n; d++) x[d] *= gain[d];
}

static inline double nv_bcast(const int64_t *shape, int64_t b, int64_t h, int64_t i,
                              int64_t j, const void *base, int is_u8)
{
    int64_t bb = shape[0] == 1 ? 0 : b, hh = shape[1] == 1 ? 0 : h;
    int64_t e = NV_IDX4(shape, bb, hh, i, j);
    return is_u8 ? (double)((const uint8_t *)base)[e] : (double)((const float *)base)[e];
}

/* Scores of row (b, h, i) after steps 1-4, and which keys are kept (step 5).
 * s and keep have Skv entries. Returns the number of kept keys (before -inf
 * scores are counted as dropped; those are marked not kept too). */
static inline int64_t nv_row_scores(const nv_problem *p, int64_t b, int64_t h,
                                    int64_t i, double *s, int *keep)
{
    int64_t hk = h / (p->Hq / p->Hkv), n = 0, D = p->D;
    int64_t kvl = p->kv_len ? p->kv_len[b] : p->Skv, off = 0;
    double scale = p->scale;
    double *qv = malloc((size_t)D * sizeof *qv), *kv = malloc((size_t)D * sizeof *kv);
    ck_assert(qv && kv);
    if (scale == SDPA_SCALE_DEFAULT) scale = 1.0 / sqrt((double)D);
    else if (scale == SDPA_SCALE_MUP) scale = 1.0 / (double)D;
    if (p->temperature) scale = p->temperature[h];
    if (p->diagonal == SDPA_DIAGONAL_BOTTOM_RIGHT) off = kvl - p->Sq;
    else if (p->diagonal == SDPA_DIAGONAL_EXPLICIT) off = p->diagonal_offset;
    for (int64_t d = 0; d < D; d++)
        qv[d] = p->q[((b * p->Hq + h) * p->Sq + i) * D + d];
    if (p->qk_norm != SDPA_QK_NORM_NONE) nv_normalise(p, qv, D, p->q_gain);
    for (int64_t j = 0; j < p->Skv; j++) {
        double dot = 0;
        for (int64_t d = 0; d < D; d++)
            kv[d] = p->k[((b * p->Hkv + hk) * p->Skv + j) * D + d];
        if (p->qk_norm != SDPA_QK_NORM_NONE) nv_normalise(p, kv, D, p->k_gain);
        for (int64_t d = 0; d < D; d++) dot += qv[d] * kv[d];
        s[j] = scale * dot;
        if (p->softcap > 0) s[j] = p->softcap * tanh(s[j] / p->softcap);
        if (p->bias) s[j] += nv_bcast(p->bias_shape, b, h, i, j, p->bias, 0);
        keep[j] = j < kvl;
        if (p->window_left >= 0 && j < i + off - p->window_left) keep[j] = 0;
        if (p->window_right >= 0 && j > i + off + p->window_right) keep[j] = 0;
        if (p->mask && nv_bcast(p->mask_shape, b, h, i, j, p->mask, 1) == 0) keep[j] = 0;
        if (s[j] == -INFINITY) keep[j] = 0;
        n += keep[j];
    }
    free(qv);
    free(kv);
    return n;
}

/* out (B,Hq,Sq,Dv), lse (B,Hq,Sq), stats (B,Hq,11), all float64; any may be NULL. */
static inline void nv_forward(const nv_problem *p, double *out, double *lse,
                              double *stats)
{
    double *s = malloc((size_t)p->Skv * sizeof *s), *pr = malloc((size_t)p->Skv * sizeof *pr);
    int *keep = malloc((size_t)p->Skv * sizeof *keep);
    ck_assert(s && pr && keep);
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t h = 0; h < p->Hq; h++) {
            int64_t hk = h / (p->Hq / p->Hkv);
            double ls = 0, ls2 = 0, lmin = INFINITY, lmax = -INFINITY, nlog = 0;
            double ent = 0, entmin = INFINITY, pmax_sum = 0, sat = 0, jac = 0, sink = 0;
            int64_t rows = 0, empty = 0;
            for (int64_t i = 0; i < p->Sq; i++) {
                int64_t row = (b * p->Hq + h) * p->Sq + i;
                int64_t n = nv_row_scores(p, b, h, i, s, keep);
                double m = -INFINITY, l = 0, L, e = 0, pmax = 0, sp2 = 0, sp3 = 0;
                if (n == 0) {
                    empty++;
                    if (out) for (int64_t c = 0; c < p->Dv; c++) out[row * p->Dv + c] = 0;
                    if (lse) lse[row] = -INFINITY;
                    continue;
                }
                for (int64_t j = 0; j < p->Skv; j++)
                    if (keep[j] && s[j] > m) m = s[j];
                for (int64_t j = 0; j < p->Skv; j++)
                    if (keep[j]) l += exp(s[j] - m);
                L = m + log(l);
                if (lse) lse[row] = L;
                for (int64_t j = 0; j < p->Skv; j++) pr[j] = keep[j] ? exp(s[j] - L) : 0;
                if (out)
                    for (int64_t c = 0; c < p->Dv; c++) {
                        double acc = 0;
                        for (int64_t j = 0; j < p->Skv; j++)
                            if (keep[j]) acc += pr[j] * p->v[((b * p->Hkv + hk) * p->Skv + j) * p->Dv + c];
                        out[row * p->Dv + c] = acc;
                    }
                rows++;
                for (int64_t j = 0; j < p->Skv; j++) {
                    if (!keep[j]) continue;
                    ls += s[j]; ls2 += s[j] * s[j]; nlog += 1;
                    if (s[j] < lmin) lmin = s[j];
                    if (s[j] > lmax) lmax = s[j];
                    if (pr[j] > 0) e -= pr[j] * log(pr[j]);
                    if (pr[j] > pmax) pmax = pr[j];
                    sp2 += pr[j] * pr[j];
                    sp3 += pr[j] * pr[j] * pr[j];
                }
                ent += e;
                if (e < entmin) entmin = e;
                pmax_sum += pmax;
                if (pmax > p->saturation) sat += 1;
                jac += sqrt(fmax(0.0, sp2 - 2 * sp3 + sp2 * sp2));
                sink += keep[0] ? pr[0] : 0;
            }
            if (stats) {
                double *st = stats + (b * p->Hq + h) * SDPA_STAT_COUNT;
                for (int c = 0; c < SDPA_STAT_COUNT; c++) st[c] = 0;
                if (rows > 0) {
                    double mean = ls / nlog;
                    st[SDPA_STAT_LOGIT_MEAN] = mean;
                    st[SDPA_STAT_LOGIT_STD] = sqrt(fmax(0.0, ls2 / nlog - mean * mean));
                    st[SDPA_STAT_LOGIT_MIN] = lmin;
                    st[SDPA_STAT_LOGIT_MAX] = lmax;
                    st[SDPA_STAT_ENTROPY_MEAN] = ent / (double)rows;
                    st[SDPA_STAT_ENTROPY_MIN] = entmin;
                    st[SDPA_STAT_PMAX_MEAN] = pmax_sum / (double)rows;
                    st[SDPA_STAT_SATURATED_FRAC] = sat / (double)rows;
                    st[SDPA_STAT_JACOBIAN_FRO_MEAN] = jac / (double)rows;
                    st[SDPA_STAT_SINK_MASS] = sink / (double)rows;
                }
                st[SDPA_STAT_EMPTY_ROWS] = (double)empty;
            }
        }
    free(s);
    free(pr);
    free(keep);
}

/* Backward of the oracle in float64: dq (B,Hq,Sq,D), dk (B,Hkv,Skv,D) and
 * dv (B,Hkv,Skv,Dv), summed over the query heads that share a KV head, from
 * p->dout. Straight from the chain rule per row: P = softmax over kept keys,
 * dP_j = dout . v_j, dS_j = P_j (dP_j - sum_k P_k dP_k), through softcap
 * (1 - tanh^2) and the scale to q and k. Empty rows give no gradient. Covers
 * scale, softcap, bias, mask, kv_len, windows and GQA; not QK-norm, gains or
 * temperature (those go through finite differences in test_gradcheck.c). */
static inline void nv_backward(const nv_problem *p, double *dq, double *dk, double *dv)
{
    int64_t D = p->D, Dv = p->Dv, Skv = p->Skv;
    double scale = p->scale;
    double *s = malloc((size_t)Skv * sizeof *s), *pr = malloc((size_t)Skv * sizeof *pr);
    double *dp = malloc((size_t)Skv * sizeof *dp);
    int *keep = malloc((size_t)Skv * sizeof *keep);
    ck_assert(s && pr && dp && keep);
    ck_assert_msg(p->qk_norm == SDPA_QK_NORM_NONE && !p->temperature,
                  "nv_backward: no QK-norm or temperature");
    if (scale == SDPA_SCALE_DEFAULT) scale = 1.0 / sqrt((double)D);
    else if (scale == SDPA_SCALE_MUP) scale = 1.0 / (double)D;
    memset(dq, 0, (size_t)(p->B * p->Hq * p->Sq * D) * sizeof *dq);
    memset(dk, 0, (size_t)(p->B * p->Hkv * Skv * D) * sizeof *dk);
    memset(dv, 0, (size_t)(p->B * p->Hkv * Skv * Dv) * sizeof *dv);
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t h = 0; h < p->Hq; h++) {
            int64_t hk = h / (p->Hq / p->Hkv);
            for (int64_t i = 0; i < p->Sq; i++) {
                int64_t row = (b * p->Hq + h) * p->Sq + i;
                const float *qr = p->q + row * D, *go = p->dout + row * Dv;
                if (nv_row_scores(p, b, h, i, s, keep) == 0) continue;
                double m = -INFINITY, l = 0, L, dsum = 0;
                for (int64_t j = 0; j < Skv; j++)
                    if (keep[j] && s[j] > m) m = s[j];
                for (int64_t j = 0; j < Skv; j++)
                    if (keep[j]) l += exp(s[j] - m);
                L = m + log(l);
                for (int64_t j = 0; j < Skv; j++) {
                    const float *vr = p->v + ((b * p->Hkv + hk) * Skv + j) * Dv;
                    pr[j] = keep[j] ? exp(s[j] - L) : 0;
                    dp[j] = 0;
                    for (int64_t c = 0; c < Dv; c++) dp[j] += go[c] * (double)vr[c];
                    dsum += pr[j] * dp[j];
                }
                for (int64_t j = 0; j < Skv; j++) {
                    if (!keep[j]) continue;
                    const float *kr = p->k + ((b * p->Hkv + hk) * Skv + j) * D;
                    double *dkr = dk + ((b * p->Hkv + hk) * Skv + j) * D;
                    double *dvr = dv + ((b * p->Hkv + hk) * Skv + j) * Dv;
                    double ds = pr[j] * (dp[j] - dsum), dot = 0;
                    for (int64_t c = 0; c < Dv; c++) dvr[c] += pr[j] * go[c];
                    for (int64_t d = 0; d < D; d++) dot += (double)qr[d] * kr[d];
                    if (p->softcap > 0) {
                        double t = tanh(scale * dot / p->softcap);
                        ds *= 1 - t * t;
                    }
                    for (int64_t d = 0; d < D; d++) {
                        dq[row * D + d] += ds * scale * kr[d];
                        dkr[d] += ds * scale * qr[d];
                    }
                }
            }
        }
    free(s);
    free(pr);
    free(dp);
    free(keep);
}

/* Worst |got - want| / (atol + rtol |want|) over n entries; non-finite wants
 * must match exactly (same infinity, NaN for NaN). Fails the test with the
 * index when above 1. */
static inline void nv_expect_close(const char *what, const float *got,
                                   const double *want, size_t n, double atol,
                                   double rtol)
{
    for (size_t e = 0; e < n; e++) {
        double g = got[e], w = want[e];
        if (isnan(w)) {
            ck_assert_msg(isnan(g), "%s[%zu]: got %g, want NaN", what, e, g);
        } else if (isinf(w)) {
            ck_assert_msg(g == w, "%s[%zu]: got %g, want %g", what, e, g, w);
        } else {
            ck_assert_msg(isfinite(g) && fabs(g - w) <= atol + rtol * fabs(w),
                          "%s[%zu]: got %.9g, want %.9g (diff %.3g)", what, e, g,
                          w, g - w);
        }
    }
}

static inline double *nv_doubles(size_t n)
{
    double *p = malloc((n ? n : 1) * sizeof *p);
    ck_assert_ptr_nonnull(p);
    for (size_t i = 0; i < n; i++) p[i] = NAN;
    return p;
}

/* Runs the library forward and compares out, lse (and stats if requested)
 * with the oracle. f32 outputs of a float64 computation: tight bounds. */
static inline void nv_check_forward(sdpa_context *ctx, nv_problem *p, const char *what)
{
    size_t no = (size_t)(p->B * p->Hq * p->Sq * p->Dv), nl = (size_t)(p->B * p->Hq * p->Sq);
    size_t ns = (size_t)(p->B * p->Hq * SDPA_STAT_COUNT);
    double *out = nv_doubles(no), *lse = nv_doubles(nl), *st = nv_doubles(ns);
    char buf[128];
    nv_poison(p);
    ck_assert_int_eq(nv_run(ctx, p), SDPA_OK);
    nv_forward(p, out, lse, st);
    snprintf(buf, sizeof buf, "%s: out", what);
    nv_expect_close(buf, p->out, out, no, 2e-6, 2e-6);
    if (p->want_lse) {
        snprintf(buf, sizeof buf, "%s: lse", what);
        nv_expect_close(buf, p->lse, lse, nl, 2e-6, 2e-6);
    }
    if (p->want_stats) {
        snprintf(buf, sizeof buf, "%s: stats", what);
        nv_expect_close(buf, p->stats, st, ns, 1e-5, 1e-5);
    }
    free(out);
    free(lse);
    free(st);
}

/* f16 / bf16 storage conversions (round to nearest even), written here so
 * the tests share no code with the library. */
static inline uint16_t to_f16(float f)
{
    uint32_t x, ax, sign, e, m, h, rem;
    memcpy(&x, &f, 4);
    sign = (x >> 16) & 0x8000u;
    ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0));
    if (ax >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) {
        float a;
        memcpy(&a, &ax, 4);
        return (uint16_t)(sign | (uint32_t)nearbyintf(a * 16777216.0f));
    }
    e = (ax >> 23) - 127 + 15;
    m = ax & 0x7fffffu;
    h = (e << 10) | (m >> 13);
    rem = m & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}
static inline float from_f16(uint16_t h)
{
    uint32_t s = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    float f;
    if (e == 0) { f = ldexpf((float)m, -24); return s ? -f : f; }
    x = s | (e == 31 ? 0x7f800000u | (m << 13) : ((e + 112) << 23) | (m << 13));
    memcpy(&f, &x, 4);
    return f;
}
static inline uint16_t to_bf16(float f)
{
    uint32_t x;
    memcpy(&x, &f, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (uint16_t)(x >> 16);
}
static inline float from_bf16(uint16_t b)
{
    uint32_t x = (uint32_t)b << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}

#endif /* SDPA_TEST_NAIVE_ATTENTION_H */
