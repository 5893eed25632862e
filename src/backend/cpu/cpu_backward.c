/*
 * cpu_backward.c — the fast CPU backend's backward pass, FlashAttention-2
 * style: P is recomputed from the forward's LSE, Dr = rowsum(dO * O),
 * dS = P * (dP - Dr), and the chain continues through the softcap
 * (ds0 = dS (1 - tanh^2)), the scale or per-head temperature, and the QK-norm
 * with its gains.
 *
 * Two passes, each race-free without atomics:
 *  - dK/dV: a task is (b, hkv, block of bkb keys). It packs its K (normalised,
 *    gain) and V once, then walks every query head of the group and every
 *    block of bq query rows whose kept ranges meet the keys, accumulating
 *    dV += P^T dO and dK += dS0^T (scale * Qn) in f32; then applies the norm
 *    gradient and writes dk, dv.
 *  - dQ: a task is (b, hq, block of bq query rows). It walks the key tiles of
 *    its rows' ranges, accumulating dQn += dS0 Kn, and gives dq, plus the
 *    dq_gain and temperature contributions.
 * Every dq, dk, dv element is produced by one task in a fixed order. With
 * gains or a temperature, tasks are dealt statically (task t to thread
 * t mod n) and those gradients are per-thread partials summed in thread
 * order, so a given thread count gives the same bits on every run; without
 * them, threads take tasks from a counter (same bits for any thread count:
 * key tiles sit at multiples of bk). Scores live transposed (S^T: keys x
 * rows), as in the forward. Dropped keys have P = dS = 0 exactly, and where
 * a tile's dO, Q or K rows hold Inf/NaN the products skip those zeros, so a
 * bad value reaches only the gradients of rows and keys that read it.
 */
#include "cpu_internal.h"

#include <math.h>
#include <string.h>

typedef struct bwd_ws {
    float *kp, *khat, *kr, *vp, *dk, *dv;
    float *qs, *qt, *qg, *qhat, *qr, *dout, *doutt, *lse, *lsub, *dr;
    float *st, *th, *dpt, *dq, *row;
    float *dqg, *dkg, *dtemp, *dsink; /* per-thread gradient partials */
    int64_t *lo, *hi;
    int32_t *lor, *hir; /* the band relative to the current tile */
    /* current K/V tile: kp/vp, or the caller's f32 rows when usable as is */
    const float *kk, *vv;
    ptrdiff_t kld, vld;
    /* Inf/NaN in the loaded rows' dO or Q, in the current K tile: their
     * products then skip zero weights (sdpa__cpu_gemm_skip_zeros) */
    bool bad_dout, bad_q, bad_k;
} bwd_ws;

static size_t bwd_carve(const sdpa__cpu_plan *pl, void *base, bwd_ws *w)
{
    sdpa__cpu_carve c = {base, 0};
    const size_t bq = (size_t)pl->bq, bk = (size_t)pl->bkb, f = sizeof(float);
    const size_t D = (size_t)pl->p.D, Dv = (size_t)pl->p.Dv, Hq = (size_t)pl->p.Hq;
    w->kp = sdpa__cpu_take(&c, bk * D * f);
    w->khat = sdpa__cpu_take(&c, bk * D * f);
    w->kr = sdpa__cpu_take(&c, bk * f);
    w->vp = sdpa__cpu_take(&c, bk * Dv * f);
    w->dk = sdpa__cpu_take(&c, bk * D * f);
    w->dv = sdpa__cpu_take(&c, bk * Dv * f);
    w->qs = sdpa__cpu_take(&c, bq * D * f);
    w->qt = sdpa__cpu_take(&c, bq * D * f);
    w->qg = sdpa__cpu_take(&c, bq * D * f);
    w->qhat = sdpa__cpu_take(&c, bq * D * f);
    w->qr = sdpa__cpu_take(&c, bq * f);
    w->dout = sdpa__cpu_take(&c, bq * Dv * f);
    w->doutt = sdpa__cpu_take(&c, bq * Dv * f);
    w->lse = sdpa__cpu_take(&c, bq * f);
    w->lsub = sdpa__cpu_take(&c, bq * f);
    w->dr = sdpa__cpu_take(&c, bq * f);
    w->st = sdpa__cpu_take(&c, bk * bq * f);
    w->th = sdpa__cpu_take(&c, pl->p.softcap > 0 ? bk * bq * f : 0);
    w->dpt = sdpa__cpu_take(&c, bk * bq * f);
    w->dq = sdpa__cpu_take(&c, bq * D * f);
    w->row = sdpa__cpu_take(&c, (D > Dv ? D : Dv) * f);
    w->dqg = sdpa__cpu_take(&c, D * f);
    w->dkg = sdpa__cpu_take(&c, D * f);
    w->dtemp = sdpa__cpu_take(&c, Hq * f);
    w->dsink = sdpa__cpu_take(&c, Hq * f);
    w->lo = sdpa__cpu_take(&c, bq * sizeof(int64_t));
    w->hi = sdpa__cpu_take(&c, bq * sizeof(int64_t));
    w->lor = sdpa__cpu_take(&c, bq * sizeof(int32_t));
    w->hir = sdpa__cpu_take(&c, bq * sizeof(int32_t));
    return c.used;
}

size_t sdpa__cpu_backward_thread_bytes(const sdpa__cpu_plan *pl)
{
    bwd_ws w;
    return bwd_carve(pl, NULL, &w);
}

static inline size_t esize(sdpa_dtype dt) { return dt == SDPA_DTYPE_F32 ? 4 : 2; }

static inline const void *row_ptr(const sdpa__ref *r, sdpa_dtype dt, int64_t b,
                                  int64_t h, int64_t i)
{
    return (const unsigned char *)r->mem + (size_t)sdpa__at(r, b, h, i, 0) * esize(dt);
}

static void store_row(const sdpa__cpu_kernels *k, const sdpa__ref *r, sdpa_dtype dt,
                      int64_t b, int64_t h, int64_t i, const float *src, int64_t n)
{
    k->store_row(src, 1.0f, (unsigned char *)r->mem + (size_t)sdpa__at(r, b, h, i, 0) * esize(dt),
                 dt, r->stride[3], (int)n);
}

/* Loads query rows i0..i0+nq of (b, h): Q (gained qg, scaled qs, transposed
 * qt, qhat, r), dO (row-major and transposed), lse, Dr, and the kept ranges.
 * Returns the union [*K0, *K1) of the rows' ranges (empty: K0 >= K1). */
static void bwd_load_rows(const sdpa__cpu_call *call, bwd_ws *w, int64_t b,
                          int64_t h, int64_t i0, int nq, int64_t kvl, int64_t *K0,
                          int64_t *K1)
{
    const sdpa__cpu_plan *pl = call->pl;
    const sdpa__problem *p = call->p;
    const sdpa__fwd_args *a = call->a;
    const sdpa__bwd_args *g = call->g;
    const sdpa__cpu_kernels *k = pl->k;
    const int D = (int)p->D, Dv = (int)p->Dv, bq = pl->bq;
    const float sc = call->scale_h[h];
    *K0 = INT64_MAX;
    *K1 = 0;
    for (int r = 0; r < nq; r++) {
        const int64_t i = i0 + r;
        float *qg = w->qg + (size_t)r * D, *qs = w->qs + (size_t)r * D;
        const sdpa__cpu_kv qsrc = sdpa__cpu_kv_plain(&a->q, p->dtype);
        sdpa__cpu_load_qk(k, p, &qsrc, b, h, i, call->q_gain, 1.0f, qg,
                          w->qhat + (size_t)r * D, &w->qr[r]);
        for (int d = 0; d < D; d++) {
            qs[d] = qg[d] * sc;
            w->qt[(size_t)d * bq + r] = qs[d];
        }
        float *dO = w->dout + (size_t)r * Dv;
        k->load_row(row_ptr(&g->dout, p->dtype, b, h, i), p->dtype, g->dout.stride[3], Dv, dO);
        k->load_row(row_ptr(&a->out, p->dtype, b, h, i), p->dtype, a->out.stride[3], Dv, w->row);
        float dr = 0.0f;
        for (int d = 0; d < Dv; d++) {
            dr += dO[d] * w->row[d];
            w->doutt[(size_t)d * bq + r] = dO[d];
        }
        w->dr[r] = dr;
        const float lse = ((const float *)a->lse.mem)[sdpa__at(&a->lse, b, h, i, 0)];
        w->lse[r] = lse;
        w->lsub[r] = isfinite(lse) ? lse : 0.0f; /* else shifted in bwd_tile */
        sdpa__row_range(p, kvl, i, &w->lo[r], &w->hi[r]);
        if (w->lo[r] < w->hi[r]) {
            if (w->lo[r] < *K0) *K0 = w->lo[r];
            if (w->hi[r] > *K1) *K1 = w->hi[r];
        }
    }
    w->bad_dout = k->nonfinite(w->dout, Dv, nq, Dv);
    w->bad_q = k->nonfinite(w->qs, D, nq, D);
}

/* For packed keys kt..kt+n and loaded rows: P^T into w->st and dS0^T (the
 * gradient of the pre-softcap score) into w->dpt. */
static void bwd_tile(const sdpa__cpu_call *call, bwd_ws *w, int64_t b,
                     int64_t h, int64_t i0, int nq, int64_t kt, int n)
{
    const sdpa__cpu_plan *pl = call->pl;
    const sdpa__problem *p = call->p;
    const sdpa__cpu_kernels *k = pl->k;
    const int D = (int)p->D, Dv = (int)p->Dv, ld = pl->bq;
    float *st = w->st, *dpt = w->dpt;

    if (nq >= 16) {
        k->gemm(n, nq, D, w->kk, w->kld, 1, w->qt, ld, st, ld, 0, NULL);
        k->gemm(n, nq, Dv, w->vv, w->vld, 1, w->doutt, ld, dpt, ld, 0, NULL);
    } else {
        k->dots(n, nq, D, w->kk, w->kld, w->qs, D, st, ld);
        k->dots(n, nq, Dv, w->vv, w->vld, w->dout, Dv, dpt, ld);
    }
    const sdpa__cpu_tile t = {
        .st = st, .ld = ld, .n = n, .nq = nq, .b = b, .kt = kt, .h0 = h, .g0 = i0,
        .lo = w->lo, .hi = w->hi, .lor = w->lor, .hir = w->hir,
        .th = p->softcap > 0 ? w->th : NULL};
    sdpa__cpu_score(call, &t);
    /* A NaN / +inf LSE (a row with a NaN or infinite score): s - lse by hand
     * so that dropped keys (-inf) keep p = 0 exactly and kept ones follow
     * IEEE (lsub is 0 for these rows). */
    for (int r = 0; r < nq; r++)
        if (!isfinite(w->lse[r]) && w->lse[r] != -INFINITY)
            for (int j = 0; j < n; j++)
                if (st[j * ld + r] != -INFINITY) st[j * ld + r] -= w->lse[r];
    k->expsub(st, ld, n, nq, w->lsub, NULL);
    k->dsoft(st, dpt, p->softcap > 0 ? w->th : NULL, ld, n, nq, w->dr);
}

/* Packs keys kt..kt+n of (b, hkv): K normalised with gain (and khat, r when
 * wanted) and V. */
static void bwd_pack_kv(const sdpa__cpu_call *call, bwd_ws *w, int64_t b,
                        int64_t hkv, int64_t kt, int n, bool keep_hat)
{
    const sdpa__problem *p = call->p;
    const sdpa__fwd_args *a = call->a;
    const sdpa__cpu_kernels *k = call->pl->k;
    const int D = (int)p->D, Dv = (int)p->Dv;
    const bool direct_k = p->kv_dtype == SDPA_DTYPE_F32 && a->k.stride[3] == 1 &&
                          p->qk_norm == SDPA_QK_NORM_NONE && !p->has_k_gain;
    const bool direct_v = p->kv_dtype == SDPA_DTYPE_F32 && a->v.stride[3] == 1;
    const sdpa__cpu_kv ksrc = sdpa__cpu_kv_plain(&a->k, p->kv_dtype);
    const sdpa__cpu_kv vsrc = sdpa__cpu_kv_plain(&a->v, p->kv_dtype);
    if (direct_k) {
        /* no norm, no gain: khat is K itself and is not needed */
        w->kk = (const float *)a->k.mem + sdpa__at(&a->k, b, hkv, kt, 0);
        w->kld = (ptrdiff_t)a->k.stride[2];
    } else {
        for (int j = 0; j < n; j++)
            sdpa__cpu_load_qk(k, p, &ksrc, b, hkv, kt + j, call->k_gain, 1.0f,
                              w->kp + (size_t)j * D, keep_hat ? w->khat + (size_t)j * D : NULL,
                              keep_hat ? &w->kr[j] : NULL);
        w->kk = w->kp;
        w->kld = D;
    }
    if (direct_v) {
        w->vv = (const float *)a->v.mem + sdpa__at(&a->v, b, hkv, kt, 0);
        w->vld = (ptrdiff_t)a->v.stride[2];
    } else {
        for (int j = 0; j < n; j++)
            sdpa__cpu_kv_load(k, &vsrc, b, hkv, kt + j, Dv, w->vp + (size_t)j * Dv);
        w->vv = w->vp;
        w->vld = Dv;
    }
    w->bad_k = k->nonfinite(w->kk, w->kld, n, D);
}

typedef struct bwd_job {
    sdpa__cpu_call call;
    int64_t ntasks;
    bool dynamic;      /* no per-thread partials: tasks from a counter */
    atomic_llong next;
} bwd_job;

/* Next task of thread tid: static interleaving when per-thread gradient
 * partials must be summed in a fixed order, else first come first served
 * (each output is still produced by exactly one task). */
static int64_t next_task(bwd_job *job, int64_t prev, int tid, int nthreads)
{
    if (job->dynamic) return atomic_fetch_add(&job->next, 1);
    return prev < 0 ? tid : prev + nthreads;
}

static void dkv_task(const sdpa__cpu_call *call, bwd_ws *w, int64_t t)
{
    const sdpa__cpu_plan *pl = call->pl;
    const sdpa__problem *p = call->p;
    const sdpa__bwd_args *g = call->g;
    const sdpa__cpu_kernels *k = pl->k;
    const int D = (int)p->D, Dv = (int)p->Dv, bq = pl->bq, bk = pl->bkb;
    const int64_t nkb = (p->Skv + bk - 1) / bk;
    const int64_t kb = t % nkb, bh = t / nkb, b = bh / p->Hkv, hkv = bh % p->Hkv;
    const int64_t kt = kb * bk;
    const int n = (int)(p->Skv - kt < bk ? p->Skv - kt : bk);
    const int64_t kvl = sdpa__cpu_batch_keys(p, call->a, b);

    memset(w->dk, 0, (size_t)n * D * sizeof(float));
    memset(w->dv, 0, (size_t)n * Dv * sizeof(float));
    bool packed = false;
    if (kt < kvl) {
        for (int64_t gq = 0; gq < pl->G; gq++) {
            const int64_t h = hkv * pl->G + gq;
            for (int64_t i0 = 0; i0 < p->Sq; i0 += bq) {
                const int nq = (int)(p->Sq - i0 < bq ? p->Sq - i0 : bq);
                /* cheap pre-check on the band before loading anything */
                int64_t lo_a, hi_a, lo_b, hi_b;
                sdpa__row_range(p, kvl, i0, &lo_a, &hi_a);
                sdpa__row_range(p, kvl, i0 + nq - 1, &lo_b, &hi_b);
                if (lo_a >= kt + n || hi_b <= kt) continue;
                int64_t K0, K1;
                bwd_load_rows(call, w, b, h, i0, nq, kvl, &K0, &K1);
                if (K0 >= K1 || K0 >= kt + n || K1 <= kt) continue;
                if (!packed) {
                    bwd_pack_kv(call, w, b, hkv, kt, n, true);
                    packed = true;
                }
                /* only the bk-aligned part of the block these rows can keep
                 * (a causal band meets a block in a triangle) */
                const int64_t a0 = K0 > kt ? (K0 - kt) / pl->bk * pl->bk : 0;
                const int64_t a1 = K1 < kt + n ? K1 - kt : n;
                const float *kk = w->kk, *vv = w->vv;
                w->kk = kk + a0 * w->kld;
                w->vv = vv + a0 * w->vld;
                const int na = (int)(a1 - a0);
                bwd_tile(call, w, b, h, i0, nq, kt + a0, na);
                (w->bad_dout ? sdpa__cpu_gemm_skip_zeros : k->gemm)(
                    na, Dv, nq, w->st, bq, 1, w->dout, Dv, w->dv + a0 * Dv, Dv, 1, NULL);
                (w->bad_q ? sdpa__cpu_gemm_skip_zeros : k->gemm)(
                    na, D, nq, w->dpt, bq, 1, w->qs, D, w->dk + a0 * D, D, 1, NULL);
                w->kk = kk;
                w->vv = vv;
            }
        }
    }
    if (!packed) bwd_pack_kv(call, w, b, hkv, kt, n, true);
    for (int j = 0; j < n; j++) {
        float *dkn = w->dk + (size_t)j * D;
        const float *khat = w->khat + (size_t)j * D; /* valid when packed */
        if (call->k_gain) {
            for (int d = 0; d < D; d++) {
                w->dkg[d] += dkn[d] * khat[d];
                dkn[d] *= call->k_gain[d];
            }
        }
        sdpa__cpu_norm_backward(p, khat, w->kr[j], dkn, D);
        store_row(k, &g->dk, p->kv_dtype, b, hkv, kt + j, dkn, D); /* dk, dv: K/V's dtype */
        store_row(k, &g->dv, p->kv_dtype, b, hkv, kt + j, w->dv + (size_t)j * Dv, Dv);
    }
}

static void dq_task(const sdpa__cpu_call *call, bwd_ws *w, int64_t t)
{
    const sdpa__cpu_plan *pl = call->pl;
    const sdpa__problem *p = call->p;
    const sdpa__bwd_args *g = call->g;
    const sdpa__cpu_kernels *k = pl->k;
    /* fixed tiles at multiples of bk: the key order of dq's sums does not
     * depend on the thread count */
    const int D = (int)p->D, bq = pl->bq, bk = pl->bk;
    const int64_t nqb = (p->Sq + bq - 1) / bq;
    const int64_t qb = t % nqb, bh = t / nqb, b = bh / p->Hq, h = bh % p->Hq;
    const int64_t hkv = h / pl->G, i0 = qb * bq;
    const int nq = (int)(p->Sq - i0 < bq ? p->Sq - i0 : bq);
    const int64_t kvl = sdpa__cpu_batch_keys(p, call->a, b);

    int64_t K0, K1;
    bwd_load_rows(call, w, b, h, i0, nq, kvl, &K0, &K1);
    memset(w->dq, 0, (size_t)nq * D * sizeof(float));
    for (int64_t kt = K0 / bk * bk; kt < K1; kt += bk) {
        const int n = (int)(K1 - kt < bk ? K1 - kt : bk);
        bwd_pack_kv(call, w, b, hkv, kt, n, false);
        bwd_tile(call, w, b, h, i0, nq, kt, n);
        (w->bad_k ? sdpa__cpu_gemm_skip_zeros : k->gemm)(nq, D, n, w->dpt, 1, bq, w->kk,
                                                          w->kld, w->dq, D, 1, NULL);
    }
    const float sc = call->scale_h[h];
    if (p->has_sinks) { /* d sink_h = -sum_i p_sink D_i, p_sink = e^{sink_h - lse_i} */
        const float sv = ((const float *)call->a->sinks.mem)[sdpa__at(&call->a->sinks, 0, h, 0, 0)];
        float s = 0.0f;
        for (int r = 0; r < nq; r++)
            if (sv > -INFINITY && w->dr[r] != 0.0f) s -= expf(sv - w->lse[r]) * w->dr[r];
        w->dsink[h] += s;
    }
    for (int r = 0; r < nq; r++) {
        float *dqn = w->dq + (size_t)r * D;
        const float *qhat = w->qhat + (size_t)r * D, *qg = w->qg + (size_t)r * D;
        if (p->has_temperature) {
            float s = 0.0f;
            for (int d = 0; d < D; d++) s += qg[d] * dqn[d];
            w->dtemp[h] += s;
        }
        for (int d = 0; d < D; d++) dqn[d] *= sc;
        if (call->q_gain) {
            for (int d = 0; d < D; d++) {
                w->dqg[d] += dqn[d] * qhat[d];
                dqn[d] *= call->q_gain[d];
            }
        }
        sdpa__cpu_norm_backward(p, qhat, w->qr[r], dqn, D);
        store_row(k, &g->dq, p->dtype, b, h, i0 + r, dqn, D);
    }
}

static void dkv_worker(void *arg, int tid, int nthreads)
{
    bwd_job *job = arg;
    const sdpa__cpu_plan *pl = job->call.pl;
    bwd_ws w;
    bwd_carve(pl, pl->thread_ws + (size_t)tid * pl->thread_bytes, &w);
    for (int64_t t = next_task(job, -1, tid, nthreads); t < job->ntasks;
         t = next_task(job, t, tid, nthreads))
        dkv_task(&job->call, &w, t);
}

static void dq_worker(void *arg, int tid, int nthreads)
{
    bwd_job *job = arg;
    const sdpa__cpu_plan *pl = job->call.pl;
    bwd_ws w;
    bwd_carve(pl, pl->thread_ws + (size_t)tid * pl->thread_bytes, &w);
    for (int64_t t = next_task(job, -1, tid, nthreads); t < job->ntasks;
         t = next_task(job, t, tid, nthreads))
        dq_task(&job->call, &w, t);
}

sdpa_status sdpa__cpu_backward_run(sdpa__cpu_plan *pl, const sdpa__problem *p,
                                   const sdpa__fwd_args *a, const sdpa__bwd_args *g)
{
    bwd_job job;
    memset(&job, 0, sizeof job);
    job.call.pl = pl;
    job.call.p = p;
    job.call.a = a;
    job.call.g = g;
    sdpa__cpu_load_params(pl, p, a, &job.call);
    const int nt = sdpa__cpu_pool_size(pl->pool);
    for (int t = 0; t < nt; t++) {
        bwd_ws w;
        bwd_carve(pl, pl->thread_ws + (size_t)t * pl->thread_bytes, &w);
        memset(w.dqg, 0, (size_t)p->D * sizeof(float));
        memset(w.dkg, 0, (size_t)p->D * sizeof(float));
        memset(w.dtemp, 0, (size_t)p->Hq * sizeof(float));
        memset(w.dsink, 0, (size_t)p->Hq * sizeof(float));
    }
    job.dynamic = !p->has_q_gain && !p->has_k_gain && !p->has_temperature && !p->has_sinks;
    job.ntasks = p->B * p->Hkv * ((p->Skv + pl->bkb - 1) / pl->bkb);
    atomic_init(&job.next, 0);
    sdpa__cpu_pool_run(pl->pool, dkv_worker, &job);
    job.ntasks = p->B * p->Hq * ((p->Sq + pl->bq - 1) / pl->bq);
    atomic_store(&job.next, 0);
    sdpa__cpu_pool_run(pl->pool, dq_worker, &job);

    /* Gain and temperature gradients: per-thread partials in thread order. */
    for (int64_t d = 0; d < p->D; d++) {
        float sq = 0.0f, sk = 0.0f;
        for (int t = 0; t < nt; t++) {
            bwd_ws w;
            bwd_carve(pl, pl->thread_ws + (size_t)t * pl->thread_bytes, &w);
            sq += w.dqg[d];
            sk += w.dkg[d];
        }
        if (g->dq_gain.mem) ((float *)g->dq_gain.mem)[sdpa__at(&g->dq_gain, 0, 0, 0, d)] = sq;
        if (g->dk_gain.mem) ((float *)g->dk_gain.mem)[sdpa__at(&g->dk_gain, 0, 0, 0, d)] = sk;
    }
    /* Per-head gradients (temperature, sinks): the same, per head. */
    for (int which = 0; which < 2; which++) {
        const sdpa__ref *r = which ? &g->dsinks : &g->dtemperature;
        if (!r->mem) continue;
        for (int64_t h = 0; h < p->Hq; h++) {
            float s = 0.0f;
            for (int t = 0; t < nt; t++) {
                bwd_ws w;
                bwd_carve(pl, pl->thread_ws + (size_t)t * pl->thread_bytes, &w);
                s += which ? w.dsink[h] : w.dtemp[h];
            }
            ((float *)r->mem)[sdpa__at(r, 0, h, 0, 0)] = s;
        }
    }
    return SDPA_OK;
}
