/*
 * featparity.c — the issue-19 feature parity check of featparity.h: one
 * problem with ALiBi, sinks, K/V of their own dtype (blocks included) and
 * pages as the case asks, run on a backend and on the reference backend
 * with the same inputs, outputs compared.
 */
#include "featparity.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes of one K/V row of `dim` elements in dtype dt. */
static size_t row_bytes(sdpa_dtype dt, int64_t dim)
{
    int64_t be = sdpa_dtype_block_elems(dt);
    return (size_t)(dim / be) * sdpa_dtype_size(dt);
}

/* `rows` K/V rows of `dim` elements: random values in (-1, 1), or, for the
 * block types, blocks with a random f16 scale in [0.01, 0.05) and random
 * integers (q8_0: -127..127; q4_0: nibbles 0..15). */
static void *fill_kv(sdpa_dtype dt, int64_t rows, int64_t dim, trng *r)
{
    const size_t rb = row_bytes(dt, dim);
    unsigned char *p = malloc((size_t)rows * rb);
    ck_assert_ptr_nonnull(p);
    if (dt == SDPA_DTYPE_Q8_0 || dt == SDPA_DTYPE_Q4_0) {
        const size_t bb = sdpa_dtype_size(dt);
        const size_t nb = (size_t)rows * (size_t)(dim / 32);
        for (size_t b = 0; b < nb; b++) {
            unsigned char *blk = p + b * bb;
            tstore(blk, SDPA_DTYPE_F16, 0, 0.01 + 0.04 * trng_uniform(r));
            for (size_t t = 2; t < bb; t++)
                blk[t] = dt == SDPA_DTYPE_Q8_0 ? (unsigned char)(int8_t)(trng_next(r) % 255 - 127)
                                               : (unsigned char)(trng_next(r) & 0xff);
        }
        return p;
    }
    for (size_t e = 0; e < (size_t)(rows * dim); e++)
        tstore(p, dt, e, (2.0 * trng_uniform(r) - 1.0) * 0.999 + 1e-3);
    return p;
}

static void *filled(sdpa_dtype dt, size_t n, double v)
{
    void *p = malloc(n * sdpa_dtype_size(dt) + 1);
    ck_assert_ptr_nonnull(p);
    for (size_t e = 0; e < n; e++) tstore(p, dt, e, v);
    return p;
}

/* One side's outputs (got: ctx, want: ref). */
typedef struct fpout {
    void *out, *dq, *dk, *dv;
    float *lse, *stats, *dsinks;
} fpout;

void fp_run(sdpa_context *ctx, sdpa_attention_desc *d, sdpa_backward_tensors *g,
            bool backward, const sdpa_plan_options *po, sdpa_plan_info *info, const char *name)
{
    sdpa_plan_options o;
    if (po) o = *po;
    else sdpa_plan_options_init(&o);
    if (backward) o.flags |= SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(ctx, d, &o, &plan);
    sdpa_error_info ei;
    memset(&ei, 0, sizeof ei);
    sdpa_context_last_error(ctx, &ei);
    ck_assert_msg(st == SDPA_OK, "%s on %s: plan: %s (%s)", name,
                  sdpa_backend_name(sdpa_context_backend(ctx)), sdpa_status_name(st),
                  ei.message);
    if (info) {
        memset(info, 0, sizeof *info);
        info->struct_size = sizeof *info;
        ck_assert_int_eq(sdpa_plan_get_info(plan, info), SDPA_OK);
    }
    st = sdpa_plan_forward(plan, &d->tensors);
    sdpa_context_last_error(ctx, &ei);
    ck_assert_msg(st == SDPA_OK, "%s: forward: %s (%s)", name, sdpa_status_name(st), ei.message);
    if (backward) {
        st = sdpa_plan_backward(plan, &d->tensors, g);
        sdpa_context_last_error(ctx, &ei);
        ck_assert_msg(st == SDPA_OK, "%s: backward: %s (%s)", name, sdpa_status_name(st),
                      ei.message);
    }
    ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    sdpa_plan_destroy(plan);
}

void fp_check(sdpa_context *ctx, sdpa_context *ref, const fpcase *c, int64_t Sq, int64_t Skv,
              bool backward, uint64_t seed, const sdpa_plan_options *po, sdpa_plan_info *info)
{
    trng r;
    trng_seed(&r, seed);
    const int64_t B = c->B, Hq = c->Hq, Hkv = c->Hkv, D = c->D, Dv = c->Dv;
    const bool paged = c->page > 0, use_len = paged || c->kv_len;
    int64_t maxp = 0, pages = 0, kvrows;
    if (paged) {
        maxp = (Skv + c->page - 1) / c->page;
        Skv = maxp * c->page;
        pages = B * maxp + 3; /* a few pages nobody uses */
        kvrows = pages * Hkv * c->page;
    } else {
        kvrows = B * Hkv * Skv;
    }
    const size_t nq = (size_t)(B * Hq * Sq * D), no = (size_t)(B * Hq * Sq * Dv);
    const size_t nr = (size_t)(B * Hq * Sq);
    void *q = malloc(nq * sdpa_dtype_size(c->qdt));
    for (size_t e = 0; e < nq; e++) tstore(q, c->qdt, e, 2.0 * trng_uniform(&r) - 1.0 + 1e-3);
    void *k = fill_kv(c->kvdt, kvrows, D, &r), *v = fill_kv(c->kvdt, kvrows, Dv, &r);
    int32_t *kv_len = malloc((size_t)B * sizeof *kv_len), *table = NULL;
    for (int64_t b = 0; b < B; b++) /* batch 0 any count, the others at least Skv / 2 */
        kv_len[b] = (int32_t)(b == 0 ? (int64_t)(trng_next(&r) % (uint64_t)(Skv + 1))
                                     : Skv - (int64_t)(trng_next(&r) % (uint64_t)(Skv / 2 + 1)));
    if (paged) { /* a shuffled pool */
        int32_t *perm = malloc((size_t)pages * sizeof *perm);
        for (int64_t i = 0; i < pages; i++) perm[i] = (int32_t)i;
        for (int64_t i = pages - 1; i > 0; i--) {
            int64_t j = (int64_t)(trng_next(&r) % (uint64_t)(i + 1));
            int32_t t = perm[i];
            perm[i] = perm[j];
            perm[j] = t;
        }
        table = perm; /* the first B * maxp entries */
    }
    float *slopes = malloc((size_t)Hq * sizeof *slopes), *sinks = malloc((size_t)Hq * sizeof *sinks);
    for (int64_t h = 0; h < Hq; h++) {
        slopes[h] = h == 0 ? 0.0f : (float)ldexp(1.0, -(int)(8 * h / Hq)) * 0.25f;
        sinks[h] = h == 1 ? -INFINITY : (float)(4.0 * trng_uniform(&r) - 1.0);
    }
    void *dout = malloc(no * sdpa_dtype_size(c->qdt));
    for (size_t e = 0; e < no; e++) tstore(dout, c->qdt, e, 2.0 * trng_uniform(&r) - 1.0);

    sdpa_attention_desc d;
    sdpa_attention_desc_init(&d);
    if (c->causal) sdpa_attention_desc_set_causal(&d, SDPA_DIAGONAL_BOTTOM_RIGHT);
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
    if (use_len) t->kv_len = sdpa_tensor_host(kv_len, SDPA_DTYPE_I32, B, 1, 1, 1);
    if (c->alibi) t->alibi_slopes = sdpa_tensor_host(slopes, SDPA_DTYPE_F32, 1, Hq, 1, 1);
    if (c->sinks) t->sinks = sdpa_tensor_host(sinks, SDPA_DTYPE_F32, 1, Hq, 1, 1);

    fpout side[2];
    sdpa_context *ctxs[2] = {ctx, ref};
    const size_t nk = (size_t)(B * Hkv * Skv * D), nv = (size_t)(B * Hkv * Skv * Dv);
    for (int w = 0; w < 2; w++) {
        fpout *s = &side[w];
        memset(s, 0, sizeof *s);
        s->out = filled(c->qdt, no, NAN);
        s->lse = filled(SDPA_DTYPE_F32, nr, NAN);
        t->out = sdpa_tensor_host(s->out, c->qdt, B, Hq, Sq, Dv);
        t->lse = sdpa_tensor_host(s->lse, SDPA_DTYPE_F32, B, Hq, Sq, 1);
        if (c->stats) {
            s->stats = filled(SDPA_DTYPE_F32, (size_t)(B * Hq * SDPA_STAT_COUNT), NAN);
            t->stats = sdpa_tensor_host(s->stats, SDPA_DTYPE_F32, B, Hq, 1, SDPA_STAT_COUNT);
        }
        sdpa_backward_tensors g;
        memset(&g, 0, sizeof g);
        if (backward) {
            s->dq = filled(c->qdt, nq, NAN);
            s->dk = filled(c->kvdt, nk, NAN);
            s->dv = filled(c->kvdt, nv, NAN);
            g.dout = sdpa_tensor_host(dout, c->qdt, B, Hq, Sq, Dv);
            g.dq = sdpa_tensor_host(s->dq, c->qdt, B, Hq, Sq, D);
            g.dk = sdpa_tensor_host(s->dk, c->kvdt, B, Hkv, Skv, D);
            g.dv = sdpa_tensor_host(s->dv, c->kvdt, B, Hkv, Skv, Dv);
            if (c->sinks) {
                s->dsinks = filled(SDPA_DTYPE_F32, (size_t)Hq, NAN);
                g.dsinks = sdpa_tensor_host(s->dsinks, SDPA_DTYPE_F32, 1, Hq, 1, 1);
            }
        }
        fp_run(ctxs[w], &d, &g, backward, w == 0 ? po : NULL, w == 0 ? info : NULL, c->name);
    }
    char label[160];
    snprintf(label, sizeof label, "%s Sq%lld Skv%lld", c->name, (long long)Sq, (long long)Skv);
    /* bounds: the output's storage, and K/V's (a bf16 cache rounds its
     * products no worse than bf16 outputs do) */
    const double bq = tbound(c->qdt), bl = bq < 1e-3 ? 1e-4 : bq;
    texpect_close(label, "out", side[0].out, side[1].out, c->qdt, no, bq);
    texpect_close(label, "lse", side[0].lse, side[1].lse, SDPA_DTYPE_F32, nr, bl);
    if (c->stats)
        texpect_close(label, "stats", side[0].stats, side[1].stats, SDPA_DTYPE_F32,
                  (size_t)(B * Hq * SDPA_STAT_COUNT), 1e-3);
    if (backward) {
        const double bk = tbound(c->kvdt) > bq ? tbound(c->kvdt) : bq;
        texpect_close(label, "dq", side[0].dq, side[1].dq, c->qdt, nq, 5 * bq);
        texpect_close(label, "dk", side[0].dk, side[1].dk, c->kvdt, nk, 5 * bk);
        texpect_close(label, "dv", side[0].dv, side[1].dv, c->kvdt, nv, 5 * bk);
        if (c->sinks)
            texpect_close(label, "dsinks", side[0].dsinks, side[1].dsinks,
                      SDPA_DTYPE_F32, (size_t)Hq, 5 * bl);
    }
    for (int w = 0; w < 2; w++) {
        free(side[w].out); free(side[w].lse); free(side[w].stats); free(side[w].dq);
        free(side[w].dk); free(side[w].dv); free(side[w].dsinks);
    }
    free(q); free(k); free(v); free(kv_len); free(table); free(slopes); free(sinks); free(dout);
}
