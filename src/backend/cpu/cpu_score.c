/*
 * cpu_score.c — the score pipeline of the fast CPU backend, in one place:
 * every cpu kernel (forward, split-KV decode, backward) computes a tile of
 * scale * q.k and hands it to sdpa__cpu_score, which applies, in this order,
 * the softcap, the additive terms (bias, ALiBi's -slope_h |i + off - j|),
 * and the drop decision (mask, a -inf bias, the band and the batch's valid
 * keys) — the order docs/semantics.md
 * defines and the reference's sdpa__ref_scores follows. A new score input
 * is added here and in the gradient code of
 * cpu_backward.c, nowhere else in this backend.
 */
#include "cpu_internal.h"

#include <math.h>

int64_t sdpa__cpu_batch_keys(const sdpa__problem *p, const sdpa__fwd_args *a, int64_t b)
{
    if (!p->has_kv_len) return p->Skv;
    int64_t n = ((const int32_t *)a->kv_len.mem)[sdpa__at(&a->kv_len, b, 0, 0, 0)];
    if (n < 0) n = 0;
    if (n > p->Skv) n = p->Skv;
    return n;
}

/* c tanh(z / c), with tanh(z / c) in *t; accurate for every c in [FLT_MIN,
 * FLT_MAX]: z / c, not z * (1 / c), as 1 / c is subnormal (few bits) for
 * c > 2^126; where |z / c| < 2^-12, tanh(z / c) = (z / c)(1 - ~2^-25) and z
 * itself is exact even when z / c has lost bits to underflow. */
static float cap(float z, float c, float *t)
{
    const float x = z / c;
    *t = tanhf(x);
    return fabsf(x) < 0x1p-12f ? z : c * *t;
}

/* Row r's kept keys [*lo, *hi) relative to the tile, clamped to [0, n). */
static void kept_range(const sdpa__cpu_tile *t, int r, int n, int64_t *lo, int64_t *hi)
{
    const int64_t l = t->lo[r] - t->kt, h = t->hi[r] - t->kt;
    *lo = l < 0 ? 0 : l > n ? n : l;
    *hi = h < 0 ? 0 : h > n ? n : h;
}

bool sdpa__cpu_score_is_identity(const sdpa__problem *p)
{
    return !(p->softcap > 0) && !p->has_bias && !p->has_mask && !p->has_alibi_slopes;
}

void sdpa__cpu_score(const sdpa__cpu_call *call, const sdpa__cpu_tile *t)
{
    const sdpa__problem *p = call->p;
    const sdpa__fwd_args *a = call->a;
    float *st = t->st;
    const int ld = t->ld, n = t->n, nq = t->nq;
    if (p->softcap > 0) {
        const float c = (float)p->softcap;
        float th;
        if (t->th) /* the backward keeps tanh for every key of the tile */
            for (int j = 0; j < n; j++)
                for (int r = 0; r < nq; r++)
                    st[j * ld + r] = cap(st[j * ld + r], c, &t->th[j * ld + r]);
        else /* keys outside a row's range become -inf below (the band), and
              * the forward may not have computed them (cpu_forward.c
              * kept_keys): only the row's kept keys are capped */
            for (int r = 0; r < nq; r++) {
                int64_t lo, hi;
                kept_range(t, r, n, &lo, &hi);
                for (int64_t j = lo; j < hi; j++) st[j * ld + r] = cap(st[j * ld + r], c, &th);
            }
    }
    bool full = true;
    const int64_t off = p->has_alibi_slopes ? sdpa__alibi_offset(p, sdpa__cpu_batch_keys(p, a, t->b)) : 0;
    for (int r = 0; r < nq; r++) {
        const int64_t row = t->g0 + r, h = t->h0 + row / p->Sq, i = row % p->Sq;
        if (t->lo[r] - t->kt > 0 || t->hi[r] - t->kt < n) full = false;
        int64_t lo, hi;
        kept_range(t, r, n, &lo, &hi);
        t->lor[r] = (int32_t)lo;
        t->hir[r] = (int32_t)hi;
        if (p->has_bias) {
            const float *bb = (const float *)a->bias.mem + sdpa__at(&a->bias, t->b, h, i, t->kt);
            const int64_t bs = a->bias.stride[3];
            for (int j = 0; j < n; j++) /* -inf drops the key, even a NaN score */
                st[j * ld + r] = bb[j * bs] == -INFINITY ? -INFINITY : st[j * ld + r] + bb[j * bs];
        }
        if (p->has_alibi_slopes) { /* a constant per (row, key): no gradient */
            const float sl =
                ((const float *)a->alibi_slopes.mem)[sdpa__at(&a->alibi_slopes, 0, h, 0, 0)];
            const int64_t d0 = i + off - t->kt; /* distance of the tile's key 0 */
            if (sl != 0.0f)
                for (int j = 0; j < n; j++) {
                    const int64_t dist = d0 - j;
                    st[j * ld + r] -= sl * (float)(dist < 0 ? -dist : dist);
                }
        }
        if (p->has_mask) {
            const uint8_t *mm =
                (const uint8_t *)a->mask.mem + sdpa__at(&a->mask, t->b, h, i, t->kt);
            const int64_t ms = a->mask.stride[3];
            for (int j = 0; j < n; j++)
                if (!mm[j * ms]) st[j * ld + r] = -INFINITY;
        }
    }
    /* the band (and valid keys) relative to the tile, one vector pass */
    if (!full) call->pl->k->band(st, ld, n, nq, t->lor, t->hir);
}
