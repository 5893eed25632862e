/*
 * test_gradcheck.c — the reference backward against central finite
 * differences of the reference forward. Loss = sum(out * dout) with a random
 * dout; every element of dq, dk, dv (and dq_gain, dk_gain, dtemperature where
 * present) is compared with (L(x + h) - L(x - h)) / 2h, h = 1e-3, inputs in
 * f32 storage, for: plain, causal bottom-right with Sq != Skv, windows,
 * softcap, bias + mask, GQA (dk/dv summed over the heads sharing a KV head),
 * kv_len, QK-norm rms / layer / l2 with gains, temperature, ALiBi (a
 * constant: it moves dq, dk, dv only) and attention sinks (dsinks, and the
 * sink-inclusive probabilities in dq, dk, dv). Rows with no kept
 * key must give exactly zero gradients, never NaN; gradients are poisoned
 * with NaN before each backward.
 *
 * Run time: about a second (a few thousand forwards of tiny problems).
 */
#include "naive_attention.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct gcase {
    nv_problem p;
    sdpa_plan *plan;
    sdpa_attention_desc d;
    sdpa_backward_tensors g;
    float *slopes, *sinks, *dsinks; /* (Hq) each, or NULL: ALiBi, sinks */
} gcase;

static sdpa_context *g_ctx;
static void setup(void) { g_ctx = nv_context(); }
static void teardown(void) { sdpa_context_destroy(g_ctx); g_ctx = NULL; }

static void gc_plan(gcase *c)
{
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = SDPA_PLAN_BACKWARD;
    c->p.want_lse = true;
    nv_desc(&c->p, &c->d);
    nv_bwd(&c->p, &c->g);
    if (c->slopes)
        c->d.tensors.alibi_slopes = sdpa_tensor_host(c->slopes, SDPA_DTYPE_F32, 1, c->p.Hq, 1, 1);
    if (c->sinks) {
        c->d.tensors.sinks = sdpa_tensor_host(c->sinks, SDPA_DTYPE_F32, 1, c->p.Hq, 1, 1);
        c->g.dsinks = sdpa_tensor_host(c->dsinks, SDPA_DTYPE_F32, 1, c->p.Hq, 1, 1);
    }
    ck_assert_int_eq(sdpa_plan_create(g_ctx, &c->d, &po, &c->plan), SDPA_OK);
}

static double gc_loss(gcase *c)
{
    double L = 0;
    size_t n = (size_t)(c->p.B * c->p.Hq * c->p.Sq * c->p.Dv);
    nv_fill_nan(c->p.out, n);
    ck_assert_int_eq(sdpa_plan_forward(c->plan, &c->d.tensors), SDPA_OK);
    for (size_t e = 0; e < n; e++) L += (double)c->p.out[e] * (double)c->p.dout[e];
    return L;
}

static void gc_backward(gcase *c)
{
    nv_poison(&c->p);
    (void)gc_loss(c);
    ck_assert_int_eq(sdpa_plan_backward(c->plan, &c->d.tensors, &c->g), SDPA_OK);
}

/* Compares the analytic gradient `an` of x (n elements) with central
 * differences: per element |fd - an| <= 1e-2 |an| + 2e-3 max|an| + 2e-4, and
 * over the tensor ||fd - an|| <= 1e-2 ||an|| + 2e-4. */
static void gc_check(gcase *c, float *x, const float *an, size_t n, const char *what)
{
    const float h = 1e-3f;
    double amax = 0, num = 0, den = 0;
    double *fd = nv_doubles(n);
    for (size_t e = 0; e < n; e++) {
        ck_assert_msg(isfinite(an[e]), "%s[%zu] = %g", what, e, an[e]);
        amax = fmax(amax, fabs(an[e]));
    }
    for (size_t e = 0; e < n; e++) {
        float x0 = x[e], xp = x0 + h, xm = x0 - h;
        double lp, lm;
        x[e] = xp;
        lp = gc_loss(c);
        x[e] = xm;
        lm = gc_loss(c);
        x[e] = x0;
        fd[e] = (lp - lm) / ((double)xp - (double)xm);
    }
    for (size_t e = 0; e < n; e++) {
        double err = fabs(fd[e] - an[e]);
        ck_assert_msg(err <= 1e-2 * fabs(an[e]) + 2e-3 * amax + 2e-4,
                      "%s[%zu]: analytic %.7g, finite difference %.7g", what, e, an[e], fd[e]);
        num += err * err;
        den += (double)an[e] * an[e];
    }
    ck_assert_msg(sqrt(num) <= 1e-2 * sqrt(den) + 2e-4, "%s: rel l2 error %.3g", what,
                  sqrt(num / fmax(den, 1e-300)));
    free(fd);
}

/* Runs the whole check on a prepared problem (inputs set, features on). */
static void gc_run(gcase *c, const char *name)
{
    nv_problem *p = &c->p;
    char what[96];
    size_t nq = (size_t)(p->B * p->Hq * p->Sq * p->D);
    size_t nk = (size_t)(p->B * p->Hkv * p->Skv * p->D);
    size_t nv = (size_t)(p->B * p->Hkv * p->Skv * p->Dv);
    gc_plan(c);
    gc_backward(c);
    /* analytic gradients are overwritten by nothing below: the FD loop only
     * runs forwards */
    snprintf(what, sizeof what, "%s dq", name);
    gc_check(c, p->q, p->dq, nq, what);
    snprintf(what, sizeof what, "%s dk", name);
    gc_check(c, p->k, p->dk, nk, what);
    snprintf(what, sizeof what, "%s dv", name);
    gc_check(c, p->v, p->dv, nv, what);
    if (p->q_gain) {
        snprintf(what, sizeof what, "%s dq_gain", name);
        gc_check(c, p->q_gain, p->dq_gain, (size_t)p->D, what);
        snprintf(what, sizeof what, "%s dk_gain", name);
        gc_check(c, p->k_gain, p->dk_gain, (size_t)p->D, what);
    }
    if (p->temperature) {
        snprintf(what, sizeof what, "%s dtemperature", name);
        gc_check(c, p->temperature, p->dtemperature, (size_t)p->Hq, what);
    }
    if (c->sinks) {
        snprintf(what, sizeof what, "%s dsinks", name);
        gc_check(c, c->sinks, c->dsinks, (size_t)p->Hq, what);
    }
}

static void gc_free(gcase *c)
{
    sdpa_plan_destroy(c->plan);
    nv_free(&c->p);
    free(c->slopes);
    free(c->sinks);
    free(c->dsinks);
}

/* ALiBi slopes and sinks for every query head (the sink values spread
 * around the scores' range so that p_sink is neither 0 nor 1). */
static void gc_add_alibi(gcase *c, float first)
{
    c->slopes = nv_floats((size_t)c->p.Hq);
    for (int64_t h = 0; h < c->p.Hq; h++) c->slopes[h] = first / (float)(1 << h);
}
static void gc_add_sinks(gcase *c, trng *r)
{
    c->sinks = nv_floats((size_t)c->p.Hq);
    c->dsinks = nv_floats((size_t)c->p.Hq);
    for (int64_t h = 0; h < c->p.Hq; h++) c->sinks[h] = (float)(trng_normal(r) * 0.8);
}

static void gc_make(gcase *c, uint64_t seed, int64_t B, int64_t Hq, int64_t Hkv,
                    int64_t Sq, int64_t Skv, int64_t D, int64_t Dv, trng *r)
{
    memset(c, 0, sizeof *c);
    trng_seed(r, seed);
    nv_make(&c->p, r, B, Hq, Hkv, Sq, Skv, D, Dv);
    nv_add_backward(&c->p, r);
}

START_TEST(plain)
{
    gcase c;
    trng r;
    gc_make(&c, 1, 2, 2, 2, 3, 5, 4, 3, &r);
    gc_run(&c, "plain");
    /* the default backward is deterministic: a second run is bit-identical */
    {
        size_t nq = 2 * 2 * 3 * 4;
        float *first = nv_floats(nq);
        memcpy(first, c.p.dq, nq * 4);
        gc_backward(&c);
        ck_assert_mem_eq(first, c.p.dq, nq * 4);
        free(first);
    }
    gc_free(&c);
}
END_TEST

START_TEST(causal_bottom_right)
{
    gcase c;
    trng r;
    gc_make(&c, 2, 1, 2, 1, 3, 6, 4, 3, &r);
    c.p.window_right = 0;
    c.p.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    gc_run(&c, "causal_br");
    gc_free(&c);
    /* Sq > Skv: the first rows are empty */
    gc_make(&c, 3, 1, 2, 2, 6, 4, 4, 3, &r);
    c.p.window_right = 0;
    c.p.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    gc_run(&c, "causal_br Sq>Skv");
    for (int64_t h = 0; h < 2; h++)
        for (int64_t i = 0; i < 2; i++)
            for (int64_t d = 0; d < 4; d++)
                ck_assert(c.p.dq[((h * 6) + i) * 4 + d] == 0.0f);
    gc_free(&c);
}
END_TEST

START_TEST(windows)
{
    gcase c;
    trng r;
    gc_make(&c, 4, 1, 2, 2, 6, 6, 4, 3, &r);
    c.p.window_left = 2;
    c.p.window_right = 1;
    gc_run(&c, "window (2,1)");
    gc_free(&c);
    gc_make(&c, 5, 1, 1, 1, 4, 7, 4, 3, &r);
    c.p.window_left = 1;
    c.p.window_right = 0;
    c.p.diagonal = SDPA_DIAGONAL_EXPLICIT;
    c.p.diagonal_offset = 2;
    gc_run(&c, "window (1,0) offset 2");
    gc_free(&c);
}
END_TEST

START_TEST(softcap)
{
    gcase c;
    trng r;
    gc_make(&c, 6, 1, 2, 2, 3, 5, 4, 3, &r);
    for (size_t e = 0; e < 2 * 3 * 4; e++) c.p.q[e] *= 2.0f;
    c.p.softcap = 1.5;
    gc_run(&c, "softcap");
    gc_free(&c);
}
END_TEST

START_TEST(bias_and_mask)
{
    gcase c;
    trng r;
    gc_make(&c, 7, 2, 2, 1, 4, 5, 4, 3, &r);
    nv_add_mask(&c.p, &r, 2, 1, 0.7);
    nv_add_bias(&c.p, &r, 1, 2, 0.15);
    c.p.softcap = 3.0;
    gc_run(&c, "bias+mask");
    gc_free(&c);
}
END_TEST

START_TEST(gqa)
{
    gcase c;
    trng r;
    gc_make(&c, 8, 1, 4, 2, 3, 5, 4, 3, &r);
    gc_run(&c, "gqa 4/2");
    gc_free(&c);
    gc_make(&c, 9, 1, 3, 1, 2, 4, 4, 2, &r);
    c.p.window_right = 0;
    c.p.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    gc_run(&c, "gqa 3/1 causal");
    gc_free(&c);
}
END_TEST

START_TEST(kv_len)
{
    gcase c;
    trng r;
    const int32_t lens[2] = {3, 5};
    gc_make(&c, 10, 2, 2, 2, 3, 5, 4, 3, &r);
    nv_add_kv_len(&c.p, lens);
    c.p.window_right = 0;
    c.p.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    gc_run(&c, "kv_len");
    /* keys at or past kv_len get no gradient */
    for (int64_t h = 0; h < 2; h++)
        for (int64_t j = 3; j < 5; j++) {
            for (int64_t d = 0; d < 4; d++) ck_assert(c.p.dk[(h * 5 + j) * 4 + d] == 0.0f);
            for (int64_t d = 0; d < 3; d++) ck_assert(c.p.dv[(h * 5 + j) * 3 + d] == 0.0f);
        }
    gc_free(&c);
}
END_TEST

START_TEST(qk_norm)
{
    const sdpa_qk_norm kinds[3] = {SDPA_QK_NORM_RMS, SDPA_QK_NORM_LAYER, SDPA_QK_NORM_L2};
    const char *names[3] = {"rms", "layer", "l2"};
    for (int k = 0; k < 3; k++) {
        gcase c;
        trng r;
        gc_make(&c, 20 + (uint64_t)k, 1, 2, 1, 3, 5, 6, 3, &r);
        c.p.qk_norm = kinds[k];
        c.p.eps = 1e-3;
        if (kinds[k] == SDPA_QK_NORM_L2) c.p.scale = 4.0;
        nv_add_gains(&c.p, &r);
        gc_run(&c, names[k]);
        gc_free(&c);
    }
}
END_TEST

START_TEST(temperature)
{
    gcase c;
    trng r;
    /* cosine attention: l2 norm, gains, per-head temperature, causal */
    gc_make(&c, 30, 1, 2, 1, 4, 4, 4, 3, &r);
    c.p.qk_norm = SDPA_QK_NORM_L2;
    c.p.window_right = 0;
    nv_add_gains(&c.p, &r);
    nv_add_temperature(&c.p, &r);
    gc_run(&c, "cosine temperature");
    gc_free(&c);
    /* temperature without a norm (a learned per-head scale) */
    gc_make(&c, 31, 2, 2, 2, 3, 5, 4, 3, &r);
    nv_add_temperature(&c.p, &r);
    for (int64_t h = 0; h < 2; h++) c.p.temperature[h] *= 0.1f;
    gc_run(&c, "temperature");
    gc_free(&c);
}
END_TEST

/* ALiBi alone, sinks alone and both, with causal bands, an explicit
 * diagonal, softcap, GQA and kv_len: every gradient, dsinks included,
 * against finite differences. */
START_TEST(alibi_and_sinks)
{
    gcase c;
    trng r;
    gc_make(&c, 40, 2, 4, 2, 3, 5, 4, 3, &r);
    c.p.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    c.p.window_right = 0;
    gc_add_alibi(&c, 0.5f);
    gc_run(&c, "alibi causal");
    gc_free(&c);
    gc_make(&c, 41, 2, 4, 2, 3, 5, 4, 3, &r);
    gc_add_sinks(&c, &r);
    gc_run(&c, "sinks");
    gc_free(&c);
    gc_make(&c, 42, 2, 4, 2, 4, 6, 4, 3, &r);
    c.p.diagonal = SDPA_DIAGONAL_EXPLICIT;
    c.p.diagonal_offset = 3;
    c.p.window_left = 2;
    c.p.softcap = 3.0;
    const int32_t lens[2] = {6, 4};
    nv_add_kv_len(&c.p, lens);
    gc_add_alibi(&c, 0.7f);
    gc_add_sinks(&c, &r);
    gc_run(&c, "alibi sinks explicit window softcap kv_len");
    gc_free(&c);
}
END_TEST

/* A -inf sink is no sink: the same gradients as without one and dsinks
 * exactly 0; rows with no kept key give 0 to dsinks (their output is 0
 * whatever the sink) and zero gradients elsewhere. */
START_TEST(sinks_limits)
{
    gcase c, ref;
    trng r;
    gc_make(&ref, 43, 1, 2, 1, 3, 4, 4, 3, &r);
    gc_plan(&ref);
    gc_backward(&ref);
    gc_make(&c, 43, 1, 2, 1, 3, 4, 4, 3, &r);
    gc_add_sinks(&c, &r);
    c.sinks[0] = c.sinks[1] = -INFINITY;
    gc_plan(&c);
    gc_backward(&c);
    ck_assert(c.dsinks[0] == 0.0f && c.dsinks[1] == 0.0f);
    ck_assert_mem_eq(c.p.dq, ref.p.dq, 2 * 3 * 4 * sizeof(float));
    ck_assert_mem_eq(c.p.dk, ref.p.dk, 1 * 4 * 4 * sizeof(float));
    gc_free(&c);
    gc_free(&ref);
    /* batch 1 has no key: its rows add nothing to dsinks */
    gc_make(&c, 44, 2, 2, 1, 3, 4, 4, 3, &r);
    const int32_t lens[2] = {4, 0};
    nv_add_kv_len(&c.p, lens);
    gc_add_sinks(&c, &r);
    gc_run(&c, "sinks with an empty batch");
    for (size_t e = 3 * 2 * 4; e < 2 * 3 * 2 * 4; e++) ck_assert(c.p.dq[e] == 0.0f);
    gc_free(&c);
}
END_TEST

/* Fully masked rows: zero gradients flowing through them, exactly; keys no
 * row can see get exactly zero dk and dv; nothing is NaN. */
START_TEST(empty_rows_zero_gradients)
{
    gcase c;
    trng r;
    nv_problem *p;
    gc_make(&c, 40, 1, 2, 1, 5, 6, 4, 3, &r);
    p = &c.p;
    nv_add_mask(p, &r, 1, 2, 0.8);
    for (int64_t j = 0; j < 6; j++) {
        p->mask[(0 * 5 + 1) * 6 + j] = 0; /* head 0 row 1: empty by the mask */
        for (int64_t i = 0; i < 5; i++) p->mask[(1 * 5 + i) * 6 + j] = 1;
    }
    for (int64_t i = 0; i < 5; i++) p->mask[(0 * 5 + i) * 6 + 5] = 0; /* key 5, head 0 */
    nv_add_bias(p, &r, 1, 2, 0.0);
    for (int64_t j = 0; j < 6; j++) p->bias[(1 * 5 + 3) * 6 + j] = -INFINITY; /* head 1 row 3 */
    /* explicit offset -2 with causal: rows 0-1 empty in both heads; key 5 is
     * then reachable only from head 1 rows >= 7, i.e. never */
    p->diagonal = SDPA_DIAGONAL_EXPLICIT;
    p->diagonal_offset = -2;
    p->window_right = 0;
    nv_add_gains(p, &r);
    p->qk_norm = SDPA_QK_NORM_RMS;
    gc_run(&c, "empty rows");
    for (int64_t h = 0; h < 2; h++)
        for (int64_t i = 0; i < 5; i++) {
            int empty = i < 2 || (h == 0 && i == 1) || (h == 1 && i == 3);
            if (!empty) continue;
            ck_assert(p->lse[h * 5 + i] == -INFINITY);
            for (int64_t d = 0; d < 4; d++)
                ck_assert_msg(p->dq[(h * 5 + i) * 4 + d] == 0.0f, "dq h%lld i%lld = %g",
                              (long long)h, (long long)i, p->dq[(h * 5 + i) * 4 + d]);
        }
    for (int64_t d = 0; d < 4; d++) ck_assert(p->dk[5 * 4 + d] == 0.0f);
    for (int64_t d = 0; d < 3; d++) ck_assert(p->dv[5 * 3 + d] == 0.0f);
    gc_free(&c);

    /* everything masked: all gradients are exactly zero */
    gc_make(&c, 41, 1, 2, 1, 3, 4, 4, 3, &r);
    p = &c.p;
    nv_add_mask(p, &r, 1, 1, -1.0);
    nv_add_gains(p, &r);
    nv_add_temperature(p, &r);
    p->qk_norm = SDPA_QK_NORM_L2;
    gc_plan(&c);
    gc_backward(&c);
    for (int64_t e = 0; e < 2 * 3 * 4; e++) ck_assert(p->dq[e] == 0.0f);
    for (int64_t e = 0; e < 4 * 4; e++) ck_assert(p->dk[e] == 0.0f);
    for (int64_t e = 0; e < 4 * 3; e++) ck_assert(p->dv[e] == 0.0f);
    for (int64_t e = 0; e < 4; e++) ck_assert(p->dq_gain[e] == 0.0f && p->dk_gain[e] == 0.0f);
    for (int64_t e = 0; e < 2; e++) ck_assert(p->dtemperature[e] == 0.0f);
    for (int64_t e = 0; e < 2 * 3 * 3; e++) ck_assert(p->out[e] == 0.0f);
    gc_free(&c);
}
END_TEST

/* ---- layouts and storage types ------------------------------------------------ */

static void bshd(sdpa_tensor *t, void *mem)
{
    int64_t H = t->shape[1], S = t->shape[2], X = t->shape[3];
    t->host = mem;
    t->stride[0] = S * H * X;
    t->stride[1] = X;
    t->stride[2] = H * X;
    t->stride[3] = 1;
}
/* (B,H,S,X) contiguous -> (B,S,H,X) */
static float *to_bshd(const float *x, int64_t B, int64_t H, int64_t S, int64_t X)
{
    float *y = nv_floats((size_t)(B * H * S * X));
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++)
                memcpy(y + ((b * S + s) * H + h) * X, x + ((b * H + h) * S + s) * X,
                       (size_t)X * sizeof *y);
    return y;
}
static void expect_bshd_equal(const float *got_bshd, const float *want, int64_t B, int64_t H,
                              int64_t S, int64_t X, const char *what)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t s = 0; s < S; s++)
                for (int64_t x = 0; x < X; x++) {
                    float g = got_bshd[((b * S + s) * H + h) * X + x];
                    float w = want[((b * H + h) * S + s) * X + x];
                    ck_assert_msg(fabsf(g - w) <= 1e-6f * (1 + fabsf(w)), "%s: %g vs %g",
                                  what, g, w);
                }
}

/* The same plan run with BSHD strides on every (B,H,S,X) tensor and a mask
 * broadcast by stride 0 gives the contiguous run's gradients. */
START_TEST(strided_backward)
{
    gcase c;
    trng r;
    nv_problem *p = &c.p;
    enum { Bn = 2, Hq = 4, Hk = 2, Sq = 5, Sk = 7, Dd = 8, Dv = 6 };
    uint8_t small[Sq * Sk];
    float *q, *k, *v, *o, *dout, *dq, *dk, *dv;
    sdpa_attention_desc d;
    sdpa_backward_tensors g;
    gc_make(&c, 50, Bn, Hq, Hk, Sq, Sk, Dd, Dv, &r);
    nv_add_mask(p, &r, Bn, Hq, 1.0);
    for (int e = 0; e < Sq * Sk; e++) small[e] = trng_uniform(&r) < 0.7;
    for (int bh = 0; bh < Bn * Hq; bh++) memcpy(p->mask + bh * Sq * Sk, small, sizeof small);
    p->window_right = 0;
    p->diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    gc_plan(&c);
    gc_backward(&c);

    q = to_bshd(p->q, Bn, Hq, Sq, Dd);
    k = to_bshd(p->k, Bn, Hk, Sk, Dd);
    v = to_bshd(p->v, Bn, Hk, Sk, Dv);
    dout = to_bshd(p->dout, Bn, Hq, Sq, Dv);
    o = nv_floats(Bn * Hq * Sq * Dv);
    dq = nv_floats(Bn * Hq * Sq * Dd);
    dk = nv_floats(Bn * Hk * Sk * Dd);
    dv = nv_floats(Bn * Hk * Sk * Dv);
    d = c.d;
    g = c.g;
    bshd(&d.tensors.q, q);
    bshd(&d.tensors.k, k);
    bshd(&d.tensors.v, v);
    bshd(&d.tensors.out, o);
    d.tensors.mask.host = small;
    d.tensors.mask.stride[0] = d.tensors.mask.stride[1] = 0;
    bshd(&g.dout, dout);
    bshd(&g.dq, dq);
    bshd(&g.dk, dk);
    bshd(&g.dv, dv);
    ck_assert_int_eq(sdpa_plan_forward(c.plan, &d.tensors), SDPA_OK);
    ck_assert_int_eq(sdpa_plan_backward(c.plan, &d.tensors, &g), SDPA_OK);
    expect_bshd_equal(o, p->out, Bn, Hq, Sq, Dv, "out");
    expect_bshd_equal(dq, p->dq, Bn, Hq, Sq, Dd, "dq");
    expect_bshd_equal(dk, p->dk, Bn, Hk, Sk, Dd, "dk");
    expect_bshd_equal(dv, p->dv, Bn, Hk, Sk, Dv, "dv");
    free(q); free(k); free(v); free(o); free(dout); free(dq); free(dk); free(dv);
    gc_free(&c);
}
END_TEST

/* f16 / bf16 storage: the backward on rounded inputs matches the f32
 * backward of the same (rounded) values within the output rounding. */
START_TEST(half_storage_backward)
{
    const sdpa_dtype dts[2] = {SDPA_DTYPE_F16, SDPA_DTYPE_BF16};
    for (int t = 0; t < 2; t++) {
        sdpa_dtype dt = dts[t];
        double tol = dt == SDPA_DTYPE_F16 ? 2e-3 : 1.6e-2;
        gcase c;
        trng r;
        nv_problem *p = &c.p;
        float **in[4];
        size_t n[4], ng[3];
        uint16_t *h[4], *hg[3], *ho;
        float *grads[3];
        sdpa_attention_desc d;
        sdpa_backward_tensors g;
        gc_make(&c, 60 + (uint64_t)t, 1, 4, 2, 9, 17, 32, 16, &r);
        p->window_right = 0;
        p->qk_norm = SDPA_QK_NORM_RMS;
        nv_add_gains(p, &r);
        in[0] = &p->q; in[1] = &p->k; in[2] = &p->v; in[3] = &p->dout;
        n[0] = 4 * 9 * 32; n[1] = 2 * 17 * 32; n[2] = 2 * 17 * 16; n[3] = 4 * 9 * 16;
        for (int a = 0; a < 4; a++) {
            h[a] = malloc(n[a] * 2);
            ck_assert_ptr_nonnull(h[a]);
            for (size_t e = 0; e < n[a]; e++) {
                h[a][e] = dt == SDPA_DTYPE_F16 ? to_f16((*in[a])[e]) : to_bf16((*in[a])[e]);
                (*in[a])[e] = dt == SDPA_DTYPE_F16 ? from_f16(h[a][e]) : from_bf16(h[a][e]);
            }
        }
        gc_plan(&c);
        gc_backward(&c); /* f32 on the rounded values */
        grads[0] = p->dq; grads[1] = p->dk; grads[2] = p->dv;
        ng[0] = n[0]; ng[1] = n[1]; ng[2] = n[2];
        for (int a = 0; a < 3; a++) {
            hg[a] = malloc(ng[a] * 2);
            memset(hg[a], 0xff, ng[a] * 2);
        }
        ho = malloc(n[3] * 2);
        memset(ho, 0xff, n[3] * 2);
        d = c.d;
        g = c.g;
        d.tensors.q.host = h[0]; d.tensors.k.host = h[1]; d.tensors.v.host = h[2];
        d.tensors.out.host = ho;
        g.dout.host = h[3];
        g.dq.host = hg[0]; g.dk.host = hg[1]; g.dv.host = hg[2];
        d.tensors.q.dtype = d.tensors.k.dtype = d.tensors.v.dtype = d.tensors.out.dtype = dt;
        g.dout.dtype = g.dq.dtype = g.dk.dtype = g.dv.dtype = dt;
        {
            sdpa_plan *hp = NULL;
            sdpa_plan_options po;
            float dqg32[32];
            memcpy(dqg32, p->dq_gain, sizeof dqg32);
            sdpa_plan_options_init(&po);
            po.flags = SDPA_PLAN_BACKWARD;
            ck_assert_int_eq(sdpa_plan_create(g_ctx, &d, &po, &hp), SDPA_OK);
            ck_assert_int_eq(sdpa_plan_forward(hp, &d.tensors), SDPA_OK);
            nv_fill_nan(p->dq_gain, 32);
            ck_assert_int_eq(sdpa_plan_backward(hp, &d.tensors, &g), SDPA_OK);
            sdpa_plan_destroy(hp);
            /* gain gradients are f32 outputs accumulated from the same
             * values, except D = rowsum(dout o out), which reads out as
             * stored: here in 16 bits, in the f32 run in 32 (docs/
             * semantics.md, "Backward"); so within the storage's bound */
            float gmax = 0;
            for (int e = 0; e < 32; e++) gmax = fmaxf(gmax, fabsf(dqg32[e]));
            for (int e = 0; e < 32; e++)
                ck_assert_float_eq_tol(p->dq_gain[e], dqg32[e],
                                       tol * (fabsf(dqg32[e]) + 0.05f * gmax));
        }
        for (int a = 0; a < 3; a++) {
            double amax = 0;
            for (size_t e = 0; e < ng[a]; e++) amax = fmax(amax, fabs(grads[a][e]));
            for (size_t e = 0; e < ng[a]; e++) {
                double got = dt == SDPA_DTYPE_F16 ? from_f16(hg[a][e]) : from_bf16(hg[a][e]);
                /* 0.25 amax: D reads out in 16 bits here, in 32 in the f32
                 * run (above); dq and dk moved up to 0.15 tol amax by it */
                ck_assert_msg(fabs(got - grads[a][e]) <= tol * (fabs(grads[a][e]) + 0.25 * amax),
                              "%s grad %d [%zu]: %g vs %g", sdpa_dtype_name(dt), a, e, got,
                              grads[a][e]);
            }
            free(hg[a]);
        }
        for (int a = 0; a < 4; a++) free(h[a]);
        free(ho);
        gc_free(&c);
    }
}
END_TEST

static Suite *gradcheck_suite(void)
{
    Suite *s = suite_create("gradcheck");
    TCase *t = tcase_create("finite_differences");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, plain);
    tcase_add_test(t, causal_bottom_right);
    tcase_add_test(t, windows);
    tcase_add_test(t, softcap);
    tcase_add_test(t, bias_and_mask);
    tcase_add_test(t, gqa);
    tcase_add_test(t, kv_len);
    tcase_add_test(t, qk_norm);
    tcase_add_test(t, temperature);
    tcase_add_test(t, empty_rows_zero_gradients);
    tcase_add_test(t, alibi_and_sinks);
    tcase_add_test(t, sinks_limits);
    suite_add_tcase(s, t);
    t = tcase_create("layouts");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, strided_backward);
    tcase_add_test(t, half_storage_backward);
    suite_add_tcase(s, t);
    return s;
}

int main(void) { return trun_suite(gradcheck_suite()); }
