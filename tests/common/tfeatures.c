/*
 * tfeatures.c — parity of the issue-19 inputs between a backend and the
 * reference (tfeatures.h): builds one random problem with the case's
 * features (q, K, V in their dtypes, q8_0 / q4_0 blocks with a random f16
 * scale, pages scattered in a random order through a block table with one
 * page shared by two batches, ALiBi slopes, sinks with one head at -inf,
 * kv_len with an empty batch now and then), runs it on both contexts with
 * every output poisoned, and compares.
 */
#include "tfeatures.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_block(sdpa_dtype dt) { return dt == SDPA_DTYPE_Q8_0 || dt == SDPA_DTYPE_Q4_0; }

static size_t row_bytes(sdpa_dtype dt, int64_t D)
{
    return (size_t)(D / sdpa_dtype_block_elems(dt)) * sdpa_dtype_size(dt);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    ck_assert(p);
    return p;
}

/* n rows of D random elements of dtype dt in [-1, 1) (blocks: an f16 scale
 * in [0.02, 0.05) and random quants). */
static void *rand_rows(trng *r, sdpa_dtype dt, int64_t n, int64_t D)
{
    size_t rb = row_bytes(dt, D);
    unsigned char *p = xcalloc((size_t)n, rb);
    if (!is_block(dt)) {
        for (size_t e = 0; e < (size_t)(n * D); e++) tstore(p, dt, e, 2 * trng_uniform(r) - 1);
        return p;
    }
    size_t ub = sdpa_dtype_size(dt);
    for (size_t b = 0; b < (size_t)n * rb / ub; b++) {
        unsigned char *blk = p + b * ub;
        uint16_t h;
        tstore(&h, SDPA_DTYPE_F16, 0, 0.02 + 0.03 * trng_uniform(r));
        memcpy(blk, &h, 2); /* little-endian hosts only (as ggml) */
        for (size_t t = 2; t < ub; t++) blk[t] = (unsigned char)(trng_next(r) >> 13);
    }
    return p;
}

/* The outputs of one run: host arrays the descriptor and backward tensors
 * point at, poisoned with NaN. */
typedef struct outs {
    void *out, *dq, *dk, *dv;
    float *lse, *stats, dsinks[64];
} outs;

static void outs_make(outs *o, const tfcase *c, int64_t Sq, int64_t Skv, bool backward,
                      sdpa_forward_tensors *t, sdpa_backward_tensors *g)
{
    const int64_t B = c->B, Hq = c->Hq, Hkv = c->Hkv, D = c->D, Dv = c->Dv;
    size_t nout = (size_t)(B * Hq * Sq * Dv), nq = (size_t)(B * Hq * Sq * D);
    size_t nk = (size_t)(B * Hkv * Skv * D), nv = (size_t)(B * Hkv * Skv * Dv);
    memset(o, 0, sizeof *o);
    o->out = xcalloc(nout, sdpa_dtype_size(c->qdt));
    for (size_t e = 0; e < nout; e++) tstore(o->out, c->qdt, e, NAN);
    o->lse = xcalloc((size_t)(B * Hq * Sq), sizeof(float));
    for (size_t e = 0; e < (size_t)(B * Hq * Sq); e++) o->lse[e] = NAN;
    t->out = sdpa_tensor_host(o->out, c->qdt, B, Hq, Sq, Dv);
    t->lse = sdpa_tensor_host(o->lse, SDPA_DTYPE_F32, B, Hq, Sq, 1);
    if (c->stats) {
        o->stats = xcalloc((size_t)(B * Hq * SDPA_STAT_COUNT), sizeof(float));
        for (size_t e = 0; e < (size_t)(B * Hq * SDPA_STAT_COUNT); e++) o->stats[e] = NAN;
        t->stats = sdpa_tensor_host(o->stats, SDPA_DTYPE_F32, B, Hq, 1, SDPA_STAT_COUNT);
    }
    if (!backward) return;
    o->dq = xcalloc(nq, sdpa_dtype_size(c->qdt));
    o->dk = xcalloc(nk, sdpa_dtype_size(c->kvdt));
    o->dv = xcalloc(nv, sdpa_dtype_size(c->kvdt));
    for (size_t e = 0; e < nq; e++) tstore(o->dq, c->qdt, e, NAN);
    for (size_t e = 0; e < nk; e++) tstore(o->dk, c->kvdt, e, NAN);
    for (size_t e = 0; e < nv; e++) tstore(o->dv, c->kvdt, e, NAN);
    g->dq = sdpa_tensor_host(o->dq, c->qdt, B, Hq, Sq, D);
    g->dk = sdpa_tensor_host(o->dk, c->kvdt, B, Hkv, Skv, D);
    g->dv = sdpa_tensor_host(o->dv, c->kvdt, B, Hkv, Skv, Dv);
    if (c->sinks) {
        for (int h = 0; h < 64; h++) o->dsinks[h] = NAN;
        g->dsinks = sdpa_tensor_host(o->dsinks, SDPA_DTYPE_F32, 1, Hq, 1, 1);
    }
}

static void outs_free(outs *o)
{
    free(o->out); free(o->dq); free(o->dk); free(o->dv); free(o->lse); free(o->stats);
}

void tfeatures_run(sdpa_context *ctx, sdpa_attention_desc *d, sdpa_backward_tensors *g,
                   bool backward, const sdpa_plan_options *opts, sdpa_plan_info *info,
                   const char *name)
{
    sdpa_plan_options o;
    if (opts) o = *opts;
    else sdpa_plan_options_init(&o);
    if (backward) o.flags |= SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(ctx, d, &o, &plan);
    sdpa_error_info ei;
    memset(&ei, 0, sizeof ei);
    sdpa_context_last_error(ctx, &ei);
    ck_assert_msg(st == SDPA_OK, "%s on %s: plan: %s: %s", name,
                  sdpa_backend_name(sdpa_context_backend(ctx)), sdpa_status_name(st),
                  ei.message ? ei.message : "");
    if (info) {
        memset(info, 0, sizeof *info);
        info->struct_size = sizeof *info;
        ck_assert_int_eq(sdpa_plan_get_info(plan, info), SDPA_OK);
    }
    st = sdpa_plan_forward(plan, &d->tensors);
    sdpa_context_last_error(ctx, &ei);
    ck_assert_msg(st == SDPA_OK, "%s: forward: %s: %s", name, sdpa_status_name(st),
                  ei.message ? ei.message : "");
    if (backward) {
        st = sdpa_plan_backward(plan, &d->tensors, g);
        sdpa_context_last_error(ctx, &ei);
        ck_assert_msg(st == SDPA_OK, "%s: backward: %s: %s", name, sdpa_status_name(st),
                      ei.message ? ei.message : "");
    }
    ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    sdpa_plan_destroy(plan);
}

void tfeatures_parity(sdpa_context *ctx, sdpa_context *ref, const tfcase *c, int64_t Sq,
                      int64_t Skv, bool backward, const sdpa_plan_options *opts, uint64_t seed)
{
    tfeatures_parity_info(ctx, ref, c, Sq, Skv, backward, opts, seed, NULL);
}

void tfeatures_parity_info(sdpa_context *ctx, sdpa_context *ref, const tfcase *c, int64_t Sq,
                           int64_t Skv, bool backward, const sdpa_plan_options *opts,
                           uint64_t seed, sdpa_plan_info *info)
{
    ck_assert(c->Hq <= 64);
    trng r;
    trng_seed(&r, seed);
    const int64_t B = c->B, Hq = c->Hq, Hkv = c->Hkv, D = c->D, Dv = c->Dv;
    const bool paged = c->page > 0;
    int64_t maxp = 0, pages = 0, rows = B * Hkv * Skv; /* K/V rows in storage */
    if (paged) {
        maxp = (Skv + c->page - 1) / c->page;
        Skv = maxp * c->page;
        pages = B * maxp + 2; /* two pages nobody uses */
        rows = pages * Hkv * c->page;
    }
    char name[160];
    snprintf(name, sizeof name, "%s Sq%lld Skv%lld%s", c->name, (long long)Sq, (long long)Skv,
             backward ? " (backward)" : "");

    void *q = rand_rows(&r, c->qdt, B * Hq * Sq, D);
    void *k = rand_rows(&r, c->kvdt, rows, D), *v = rand_rows(&r, c->kvdt, rows, Dv);
    void *dout = rand_rows(&r, c->qdt, B * Hq * Sq, Dv);
    int32_t *kv_len = xcalloc((size_t)B, sizeof *kv_len), *table = NULL;
    for (int64_t b = 0; b < B; b++) /* batch 0 any count (0 too), the others >= Skv / 2 */
        kv_len[b] = (int32_t)(b == 0 ? (int64_t)(trng_next(&r) % (uint64_t)(Skv + 1))
                                     : Skv - (int64_t)(trng_next(&r) % (uint64_t)(Skv / 2 + 1)));
    if (paged) { /* a random permutation of the pool; batch 1 shares batch 0's first page */
        int32_t *perm = xcalloc((size_t)pages, sizeof *perm);
        for (int64_t i = 0; i < pages; i++) perm[i] = (int32_t)i;
        for (int64_t i = pages - 1; i > 0; i--) {
            int64_t j = (int64_t)(trng_next(&r) % (uint64_t)(i + 1));
            int32_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        table = xcalloc((size_t)(B * maxp), sizeof *table);
        memcpy(table, perm, (size_t)(B * maxp) * sizeof *table);
        if (B > 1) table[maxp] = table[0];
        free(perm);
    }
    float slopes[64], sinks[64];
    for (int64_t h = 0; h < Hq; h++) {
        slopes[h] = (float)((double)(h + 1) * 0.05 * (0.5 + trng_uniform(&r)));
        sinks[h] = h == 1 ? -INFINITY : (float)(3 * trng_uniform(&r) - 1);
    }

    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    d.diagonal = c->diagonal;
    d.diagonal_offset = c->offset;
    d.window_left = c->wl;
    d.window_right = c->wr;
    d.softcap = c->softcap;
    sdpa_forward_tensors *t = &d.tensors;
    t->q = sdpa_tensor_host(q, c->qdt, B, Hq, Sq, D);
    if (paged) {
        t->k_pages = sdpa_tensor_host(k, c->kvdt, pages, Hkv, c->page, D);
        t->v_pages = sdpa_tensor_host(v, c->kvdt, pages, Hkv, c->page, Dv);
        t->block_table = sdpa_tensor_host(table, SDPA_DTYPE_I32, B, 1, 1, maxp);
    } else {
        t->k = sdpa_tensor_host(k, c->kvdt, B, Hkv, Skv, D);
        t->v = sdpa_tensor_host(v, c->kvdt, B, Hkv, Skv, Dv);
    }
    if (paged || c->kv_len) t->kv_len = sdpa_tensor_host(kv_len, SDPA_DTYPE_I32, B, 1, 1, 1);
    if (c->alibi) t->alibi_slopes = sdpa_tensor_host(slopes, SDPA_DTYPE_F32, 1, Hq, 1, 1);
    if (c->sinks) t->sinks = sdpa_tensor_host(sinks, SDPA_DTYPE_F32, 1, Hq, 1, 1);

    outs got, want;
    sdpa_backward_tensors g[2];
    memset(g, 0, sizeof g);
    for (int w = 0; w < 2; w++) {
        g[w].dout = sdpa_tensor_host(dout, c->qdt, B, Hq, Sq, Dv);
        outs_make(w ? &want : &got, c, Sq, Skv, backward, t, &g[w]);
        tfeatures_run(w ? ref : ctx, &d, &g[w], backward, w ? NULL : opts, w ? NULL : info,
                      name);
    }

    const double b = tbound(c->qdt);
    texpect_close(name, "out", got.out, want.out, c->qdt, (size_t)(B * Hq * Sq * Dv), b);
    texpect_close(name, "lse", got.lse, want.lse, SDPA_DTYPE_F32, (size_t)(B * Hq * Sq), 1e-4);
    if (c->stats)
        texpect_close(name, "stats", got.stats, want.stats, SDPA_DTYPE_F32,
                      (size_t)(B * Hq * SDPA_STAT_COUNT), 2e-3);
    if (backward) {
        double gq = c->qdt == SDPA_DTYPE_F32 ? 1e-3 : 4 * b;
        double gk = c->kvdt == SDPA_DTYPE_F32 ? 1e-3 : 4 * tbound(c->kvdt);
        texpect_close(name, "dq", got.dq, want.dq, c->qdt, (size_t)(B * Hq * Sq * D), gq);
        texpect_close(name, "dk", got.dk, want.dk, c->kvdt, (size_t)(B * Hkv * Skv * D), gk);
        texpect_close(name, "dv", got.dv, want.dv, c->kvdt, (size_t)(B * Hkv * Skv * Dv), gk);
        if (c->sinks)
            texpect_close(name, "dsinks", got.dsinks, want.dsinks, SDPA_DTYPE_F32, (size_t)Hq,
                          1e-3);
    }
    outs_free(&got);
    outs_free(&want);
    free(q); free(k); free(v); free(dout); free(kv_len); free(table);
}
