/*
 * cpu_forward.c — the fast CPU backend's forward pass: FlashAttention-style
 * tiled online softmax, with split-KV decode and the in-kernel statistics.
 *
 * Work decomposition. The query heads that share a KV head are laid end to
 * end into one row space of G*Sq rows per (b, hkv), so a decode step (Sq = 1)
 * with GQA still fills a tile and reads each K/V tile once for all G heads.
 * A task is (b, hkv, block of pl->sb rows, key split); threads take tasks from
 * an atomic counter, largest-first. Each task:
 *   1. packs its rows' Q (normalised, gain, times the head's scale) as f32,
 *      transposed (D x bq, 16 rows at a time by the kernels' transpose)
 *      per sub-block of bq rows (row-major when a
 *      sub-block has fewer than 16 rows: then S uses dot products);
 *   2. walks key tiles of bk keys over the union of its rows' kept ranges
 *      (sdpa__row_range: valid keys and the band), packing K (normalised, gain)
 *      and V once per tile for all sub-blocks;
 *   3. per sub-block whose range meets the tile: S^T = K Q^T (bk x bq;
 *      on a tile that crosses the band's edge, per 32 rows over only the
 *      keys they keep, and likewise P V),
 *      the score function (cpu_score.c; skipped on tiles fully inside every
 *      row's range when it has nothing else to do), column max, exp, column
 *      sums, rescale of the
 *      accumulators, O += P V;
 *   4. writes O / l and lse = m + log l (0 and -inf for empty rows), or, with
 *      key splits, the unnormalised partial (O, m, l) which a serial pass
 *      merges exactly by LSE.
 * Statistics run the same loop with an extra per-row pass on the tile (a
 * separate branch, so nothing is paid when they are off), write per
 * (head, row block) partial sums, and a serial pass reduces them in a fixed
 * order. Workspace: per thread O(sb*(D+Dv) + bk*(bq+D+Dv)) floats; nothing
 * depends on Skv. Deterministic: every output element is computed by one task
 * in a fixed order whatever thread runs it.
 */
#include "cpu_internal.h"

#include <math.h>
#include <string.h>

#define MAX_SUBS 64

typedef struct fwd_ws {
    float *q, *o, *m, *l, *rs, *ts, *st, *sc, *kp, *vp;
    float *msub, *alpha, *rsum, *mnew, *row;
    int64_t *lo, *hi;
    const unsigned char **krow, **vrow; /* decode: a tile's K/V row table */
} fwd_ws;

/* Per-row running statistics, relative to the running maximum m: A = sum
 * e^{s-m} (s - m); L1, L2, L3 = sum e^{s-m}, e^{2(s-m)}, e^{3(s-m)} over every
 * kept key but one at the maximum (the rest of l, without the 1 that would
 * swamp them on saturated rows); count, sum, sum of squares, min, max of s;
 * the score of key 0. */
enum { RS_A, RS_L1, RS_L2, RS_L3, RS_CNT, RS_SUM, RS_SUMSQ, RS_MIN, RS_MAX, RS_S0, RS_N };

/* Keys per tile of a decode task (K/V streamed, fewer than 16 rows): up to
 * 4 key tiles at once, as many as the score tile holds at the decode
 * layout's leading dimension of at most 16 (decode_ld), so the per-tile
 * work (softmax bookkeeping, kernel calls, row table) is spread over more
 * keys. */
static int decode_tile_keys(const sdpa__cpu_plan *pl)
{
    const int m = pl->bq / 16;
    return pl->bk * (m < 1 ? 1 : m > 4 ? 4 : m);
}

/* Which stream a decode kernel prefetches while it reads the other
 * (sdpa__cpu_rows.next), measured on a Zen 4 host (AVX-512, B1 Hq32 Hkv8
 * D128, Skv 4096 and 32768, builds alternated):
 *  - reading K, V's rows of the same keys, which pv_kv reads after the
 *    tile's softmax: for f16 / bf16 caches and any cache through a block
 *    table; f16 decode then ran 1.03-1.23x faster (0.62-0.72 -> 0.73-0.81
 *    of the read bandwidth), paged f32 / f16 1.01-1.21x; contiguous f32
 *    moved 0.82-1.10x, so it is left to the hardware prefetchers;
 *  - reading V, K's rows of the next tile (n keys on), which the next
 *    dots_kv reads: for caches through a block table, whose page breaks
 *    stop the hardware prefetchers; paged (16-row pages) decode then ran
 *    1.35-1.36x faster for f32, 1.30-1.33x for f16, 1.08-1.10x for q8_0
 *    (AVX2: f32 1.32-1.37x, f16 1.11-1.14x). Contiguous f16 / bf16 caches
 *    too, now that dots_kv prefetches their K rows `ahead` rows on into
 *    L2 (AVX-512 and AVX2; their comments): with both, contiguous decode
 *    at Skv 32768 ran 1.10-1.17x faster for f16 and 1.12x for bf16
 *    (AVX2: 1.04-1.16x, 1.12x), at 4096 f16 1.03-1.12x (the two builds
 *    in one process, calls alternated), where either prefetch alone had
 *    moved it 0.96-1.04x (a scratch copy of the loop). Contiguous f32
 *    moved 0.97x with both (medians of 5 rounds, one process per build),
 *    so it is left to the hardware.
 * Until then only one stream was in flight at a time.
 * Contiguous f32 caches instead get each stream prefetched far ahead of
 * itself (sdpa__cpu_rows.far, DECODE_FAR_BYTES). */
static bool decode_next_k(const sdpa__problem *p)
{
    return p->has_block_table || p->kv_dtype == SDPA_DTYPE_F16 || p->kv_dtype == SDPA_DTYPE_BF16;
}

/* The most rows past a decode tile its row tables hold: what the kernels'
 * prefetch reads, the next tile's K included where decode_next_k (so the
 * tables of contiguous caches slide no further than they are read). */
static int decode_lookahead(const sdpa__cpu_plan *pl, const sdpa__problem *p)
{
    return SDPA__CPU_KV_AHEAD_MAX + (decode_next_k(p) ? decode_tile_keys(pl) : 0);
}

/* How far ahead of the row it reads a decode kernel prefetches contiguous
 * f32 K and V rows into L2 (sdpa__cpu_rows.far): 32 KiB, 64 rows at D =
 * 128, as many as the row tables hold past a tile (decode_lookahead). On a
 * Zen 4 host (B1 Hq32 Hkv8 D128, the builds without and with it in one
 * process, calls alternated, where two copies of one build measured
 * 1.03-1.04x) decode ran faster by 1.24x / 1.10x at Skv 4096 / 32768
 * (AVX-512, 2 threads), 1.22x / 1.19x (1 thread), 1.07x / 1.25x (AVX2);
 * 8, 16 and 24 KiB ahead gained less at 32768 (1.06-1.13x), into L1 (T0)
 * ran slower than none; f16 rows 16 or 32 KiB ahead instead of their
 * 4 KiB moved 0.96-1.04x, so they keep theirs (docs/cpu.md). */
#define DECODE_FAR_BYTES 32768

/* Rows of rowb bytes DECODE_FAR_BYTES on, at most what the tables hold. */
static int decode_far_rows(size_t rowb)
{
    const size_t rows = DECODE_FAR_BYTES / rowb;
    return rows < SDPA__CPU_KV_AHEAD_MAX ? (int)rows : SDPA__CPU_KV_AHEAD_MAX;
}

static void decode_next(const sdpa__problem *p, sdpa__cpu_rows *kr, sdpa__cpu_rows *vr, int n)
{
    const size_t ub = sdpa__cpu_unit_bytes(p->kv_dtype);
    const int ue = sdpa__cpu_unit_elems(p->kv_dtype);
    if (p->kv_dtype == SDPA_DTYPE_F32 && !p->has_block_table) {
        kr->far_bytes = (size_t)p->D * ub;
        vr->far_bytes = (size_t)p->Dv * ub;
        kr->far = decode_far_rows(kr->far_bytes);
        vr->far = decode_far_rows(vr->far_bytes);
    }
    if (p->kv_dtype != SDPA_DTYPE_F32 || p->has_block_table) {
        kr->next = vr;
        kr->next_bytes = (size_t)p->Dv / (size_t)ue * ub;
    }
    if (decode_next_k(p)) {
        vr->next = kr;
        vr->next_bytes = (size_t)p->D / (size_t)ue * ub;
        vr->next_off = n;
    }
}

static size_t fwd_carve(const sdpa__cpu_plan *pl, void *base, fwd_ws *w)
{
    sdpa__cpu_carve c = {base, 0};
    const size_t sb = (size_t)pl->sb, bq = (size_t)pl->bq, bk = (size_t)pl->bk;
    const size_t D = (size_t)pl->p.D, Dv = (size_t)pl->p.Dv, f = sizeof(float);
    w->q = sdpa__cpu_take(&c, sb * D * f);
    w->o = sdpa__cpu_take(&c, sb * Dv * f);
    w->m = sdpa__cpu_take(&c, sb * f);
    w->l = sdpa__cpu_take(&c, sb * f);
    w->rs = sdpa__cpu_take(&c, pl->p.has_stats ? sb * RS_N * f : 0);
    w->ts = sdpa__cpu_take(&c, pl->p.has_stats ? CPU_TS_N * bq * f : 0);
    w->st = sdpa__cpu_take(&c, bk * bq * f);
    w->sc = sdpa__cpu_take(&c, pl->p.has_stats ? bk * bq * f : 0);
    w->kp = sdpa__cpu_take(&c, bk * D * f);
    w->vp = sdpa__cpu_take(&c, bk * Dv * f);
    w->msub = sdpa__cpu_take(&c, bq * f);
    w->alpha = sdpa__cpu_take(&c, bq * f);
    w->rsum = sdpa__cpu_take(&c, bq * f);
    w->mnew = sdpa__cpu_take(&c, bq * f);
    w->row = sdpa__cpu_take(&c, (D > Dv ? D : Dv) * f);
    w->lo = sdpa__cpu_take(&c, sb * sizeof(int64_t));
    w->hi = sdpa__cpu_take(&c, sb * sizeof(int64_t));
    const size_t nrow =
        pl->k->dots_kv ? (size_t)decode_tile_keys(pl) + (size_t)decode_lookahead(pl, &pl->p) : 0;
    w->krow = sdpa__cpu_take(&c, nrow * sizeof(*w->krow));
    w->vrow = sdpa__cpu_take(&c, nrow * sizeof(*w->vrow));
    return c.used;
}

size_t sdpa__cpu_forward_thread_bytes(const sdpa__cpu_plan *pl)
{
    fwd_ws w;
    return fwd_carve(pl, NULL, &w);
}

typedef struct fwd_job {
    sdpa__cpu_call call;
    atomic_llong next;
    int64_t ntasks;
} fwd_job;

/* The rows of one sub-block and the union / intersection of their ranges. */
typedef struct sub_info {
    int r0, nq;                /* first row (within the task) and count */
    int64_t lo_min, hi_max;    /* union of the non-empty ranges */
    int64_t lo_max, hi_min;    /* intersection of all ranges */
} sub_info;

static inline void row_head(const sdpa__cpu_plan *pl, int64_t hkv, int64_t gr,
                            int64_t *h, int64_t *i)
{
    *h = hkv * pl->G + gr / pl->p.Sq;
    *i = gr % pl->p.Sq;
}

/* The score function on one S^T tile (keys kt..kt+n, rows of sub). */
static void fwd_score_tile(const sdpa__cpu_call *call, const fwd_ws *w,
                           const sub_info *s, int64_t b, int64_t hkv, int64_t r0,
                           int64_t kt, int n, int ld)
{
    const sdpa__cpu_plan *pl = call->pl;
    const sdpa__cpu_tile t = {
        .st = w->st, .ld = ld, .n = n, .nq = s->nq, .b = b, .kt = kt,
        .h0 = hkv * pl->G, .g0 = r0 + s->r0, .lo = w->lo + s->r0, .hi = w->hi + s->r0,
        .lor = (int32_t *)w->mnew, .hir = (int32_t *)w->msub, .th = NULL};
    sdpa__cpu_score(call, &t);
}

/* Adds one tile to the rows' running statistics; m holds the rows' maxima
 * before the tile, w->mnew after it, w->alpha = e^{m - mnew}. Where the tile
 * raised the maximum, the old top key joins the rest (scaled by alpha) and
 * one key of the tile at the new maximum is the top. */
static void fwd_stats_tile(const sdpa__cpu_kernels *k, const fwd_ws *w,
                           const sub_info *s, int ld, int64_t kt, int n)
{
    const int nq = s->nq;
    const float *m = w->m + s->r0, *l = w->l + s->r0;
    float *t = w->ts;
    k->tilestats(w->sc, w->st, w->mnew, ld, n, nq, t, ld);
    for (int r = 0; r < nq; r++) {
        float *rs = w->rs + (size_t)(s->r0 + r) * RS_N;
        const float al = w->alpha[r], ties = t[CPU_TS_TIES * ld + r];
        if (w->mnew[r] != m[r]) { /* raised (or NaN) */
            const float top = m[r] > -INFINITY ? 1.0f : 0.0f;
            rs[RS_A] = top > 0 ? al * (rs[RS_A] + (m[r] - w->mnew[r]) * l[r]) : 0.0f;
            rs[RS_L1] = al * (rs[RS_L1] + top) + (ties - 1);
            rs[RS_L2] = al * al * (rs[RS_L2] + top) + (ties - 1);
            rs[RS_L3] = al * al * al * (rs[RS_L3] + top) + (ties - 1);
        } else {
            rs[RS_L1] += ties;
            rs[RS_L2] += ties;
            rs[RS_L3] += ties;
        }
        rs[RS_A] += t[CPU_TS_A * ld + r];
        rs[RS_L1] += t[CPU_TS_P1 * ld + r];
        rs[RS_L2] += t[CPU_TS_P2 * ld + r];
        rs[RS_L3] += t[CPU_TS_P3 * ld + r];
        rs[RS_CNT] += t[CPU_TS_CNT * ld + r];
        rs[RS_SUM] += t[CPU_TS_SUM * ld + r];
        rs[RS_SUMSQ] += t[CPU_TS_SUMSQ * ld + r];
        if (t[CPU_TS_MIN * ld + r] < rs[RS_MIN]) rs[RS_MIN] = t[CPU_TS_MIN * ld + r];
        if (t[CPU_TS_MAX * ld + r] > rs[RS_MAX]) rs[RS_MAX] = t[CPU_TS_MAX * ld + r];
        if (kt == 0 && w->sc[r] > -INFINITY) rs[RS_S0] = w->sc[r];
    }
}

/* K/V of the current tile: packed f32 in the workspace, or the caller's
 * memory when it already is contiguous f32 rows (no conversion, no norm).
 * Decode (kr/vr set): the caller's rows in their own dtype, contiguous or
 * paged, read in place by the kernels' dots_kv/pv_kv, which convert or
 * dequantize in registers, the whole tile in one call through its table of
 * row addresses (pages crossed inside the kernels), which goes on past the
 * tile for their prefetch (the next tile's table starts with those rows:
 * only the new ones are looked up; V shares K's table, shifted, when the
 * two have one layout). */
typedef struct kv_tile {
    const float *k, *v;
    ptrdiff_t kld, vld;
    bool v_nonfinite; /* some V value is Inf/NaN: PV must skip p = 0 */
    const sdpa__cpu_rows *kr, *vr;
    sdpa_dtype kvdt;
} kv_tile;

/* Decode tiles (K/V streamed, fewer than 16 rows) hold S^T with a leading
 * dimension of nq rounded up to a power of two (1, 2, 4, 8, 16), so 16
 * consecutive floats are 16/ld keys of every row and the max and exp run on
 * whole vectors, as on a tile of 16 columns (lane l: row l % ld): a group of
 * 4 query rows takes 4 keys per 16-lane vector instead of 4 lanes of one.
 * Padding rows (nq < ld) hold 0 and lanes past key n hold -inf, so neither
 * reaches a row's max or sum. */
static int decode_ld(int nq)
{
    int ld = 1;
    while (ld < nq) ld *= 2;
    return ld;
}

/* colmax of a packed decode tile into w->mnew (which holds m on entry). */
static void decode_colmax(const sdpa__cpu_kernels *k, const fwd_ws *w, float *st, int ld, int n,
                          int nq)
{
    const int nv = (n * ld + 15) / 16;
    for (int e = n * ld; e < nv * 16; e++) st[e] = -INFINITY;
    for (int j = 0; nq < ld && j < n; j++)
        for (int r = nq; r < ld; r++) st[j * ld + r] = 0.0f;
    float m16[16];
    for (int l = 0; l < 16; l++) m16[l] = -INFINITY;
    k->colmax(st, 16, nv, 16, m16);
    for (int l = 0; l < 16; l++) /* NaN never enters the max (as in colmax) */
        if (l % ld < nq && m16[l] > w->mnew[l % ld]) w->mnew[l % ld] = m16[l];
}

/* expsub of a packed decode tile: e^{S - w->msub[row]}, row sums into w->rsum. */
static void decode_expsub(const sdpa__cpu_kernels *k, const fwd_ws *w, float *st, int ld, int n,
                          int nq)
{
    float sub16[16], sum16[16];
    for (int l = 0; l < 16; l++) {
        sub16[l] = l % ld < nq ? w->msub[l % ld] : 0.0f;
        sum16[l] = 0.0f;
    }
    k->expsub(st, 16, (n * ld + 15) / 16, 16, sub16, sum16);
    for (int l = 0; l < 16; l++)
        if (l % ld < nq) w->rsum[l % ld] += sum16[l];
}

/* The keys of tile kt..kt+n that some row of columns [c0, c0 + cw) of sub s
 * keeps, as [*j0, *j1) rounded out to multiples of 8 (the GEMM's row
 * blocks); empty when none does. On a tile that crosses the band's edge
 * (the diagonal of a causal mask) the rest of those columns is -inf by the
 * band and their p = 0, so S^T and P V need not compute it. */
enum { KEEP_COLS = 32 };
static void kept_keys(const fwd_ws *w, const sub_info *s, int64_t kt, int n, int c0, int cw,
                      int *j0, int *j1)
{
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int r = s->r0 + c0; r < s->r0 + c0 + cw; r++)
        if (w->lo[r] < w->hi[r]) {
            if (w->lo[r] < lo) lo = w->lo[r];
            if (w->hi[r] > hi) hi = w->hi[r];
        }
    *j0 = *j1 = 0;
    if (lo >= hi || hi <= kt || lo >= kt + n) return;
    lo = lo < kt ? 0 : (lo - kt) / 8 * 8;
    hi = hi - kt >= n ? n : (hi - kt + 7) / 8 * 8;
    *j0 = (int)lo;
    *j1 = (int)(hi < n ? hi : n);
}

static void fwd_tile(const sdpa__cpu_call *call, const fwd_ws *w, const sub_info *s,
                     int64_t b, int64_t hkv, int64_t r0, int64_t kt, int n,
                     const kv_tile *kv)
{
    const sdpa__cpu_plan *pl = call->pl;
    const sdpa__problem *p = call->p;
    const sdpa__cpu_kernels *k = pl->k;
    const int nq = s->nq, D = (int)p->D, Dv = (int)p->Dv;
    const int ld = kv->kr ? decode_ld(nq) : pl->bq;
    const float *qs = w->q + (size_t)s->r0 * D;
    float *st = w->st, *o = w->o + (size_t)s->r0 * Dv;
    float *m = w->m + s->r0, *l = w->l + s->r0;
    /* a tile not inside every row's range: the band runs on it (below) */
    const bool full = kt >= s->lo_max && kt + n <= s->hi_min, edge = !full;

    if (kv->kr)
        k->dots_kv(n, nq, D, kv->kr, kv->kvdt, qs, D, st, ld);
    else if (nq >= 16 && !edge)
        k->gemm(n, nq, D, kv->k, kv->kld, 1, qs, ld, st, ld, 0, NULL);
    else if (nq >= 16)
        for (int c0 = 0; c0 < nq; c0 += KEEP_COLS) {
            const int cw = nq - c0 < KEEP_COLS ? nq - c0 : KEEP_COLS;
            int j0, j1;
            kept_keys(w, s, kt, n, c0, cw, &j0, &j1);
            k->gemm(j1 - j0, cw, D, kv->k + (size_t)j0 * kv->kld, kv->kld, 1, qs + c0, ld,
                    st + (size_t)j0 * ld + c0, ld, 0, NULL);
        }
    else
        k->dots(n, nq, D, kv->k, kv->kld, qs, D, st, ld);
    if (!full || !sdpa__cpu_score_is_identity(p))
        fwd_score_tile(call, w, s, b, hkv, r0, kt, n, ld);

    memcpy(w->mnew, m, (size_t)nq * sizeof(float));
    if (kv->kr)
        decode_colmax(k, w, st, ld, n, nq);
    else
        k->colmax(st, ld, n, nq, w->mnew);
    for (int r = 0; r < nq; r++) {
        const float mn = w->mnew[r];
        w->msub[r] = mn == -INFINITY ? 0.0f : mn;
        w->alpha[r] = m[r];
        w->rsum[r] = 0.0f;
    }
    /* alpha = exp(m_old - m_new): 0 when m_old = -inf, 1 when unchanged */
    k->expsub(w->alpha, 0, 1, nq, w->msub, NULL);
    if (p->has_stats)
        for (int j = 0; j < n; j++) memcpy(w->sc + j * ld, st + j * ld, (size_t)nq * sizeof(float));
    if (kv->kr)
        decode_expsub(k, w, st, ld, n, nq);
    else
        k->expsub(st, ld, n, nq, w->msub, w->rsum);
    if (p->has_stats) fwd_stats_tile(k, w, s, ld, kt, n);
    for (int r = 0; r < nq; r++) {
        l[r] = l[r] * w->alpha[r] + w->rsum[r];
        m[r] = w->mnew[r];
    }
    /* O = alpha * O + P V in one pass */
    if (kv->vr)
        k->pv_kv(nq, Dv, n, st, ld, kv->vr, kv->kvdt, o, Dv, w->alpha);
    else if (kv->v_nonfinite)
        sdpa__cpu_gemm_skip_zeros(nq, Dv, n, st, 1, ld, kv->v, kv->vld, o, Dv, 1, w->alpha);
    else if (!edge)
        k->gemm(nq, Dv, n, st, 1, ld, kv->v, kv->vld, o, Dv, 1, w->alpha);
    else
        for (int c0 = 0; c0 < nq; c0 += KEEP_COLS) { /* rows c0.., their kept keys */
            const int cw = nq - c0 < KEEP_COLS ? nq - c0 : KEEP_COLS;
            int j0, j1;
            kept_keys(w, s, kt, n, c0, cw, &j0, &j1);
            k->gemm(cw, Dv, j1 - j0, st + (size_t)j0 * ld + c0, 1, ld,
                    kv->v + (size_t)j0 * kv->vld, kv->vld, o + (size_t)c0 * Dv, Dv, 1,
                    w->alpha + c0);
        }
}

/* ||diag(p) - p p^T||_F^2 of a row with l = sum e, the top key at e = 1 and
 * r1, r2, r3 the sums of e, e^2, e^3 over the other keys. With p_t = 1/l the
 * top probability and q_k = e_k/l the others (1 - p_t = r1/l):
 * p_t^2 (1 - p_t)^2 + sum q^2 (1 - q)^2 + 2 p_t^2 sum q^2 + (sum q^2)^2 - sum q^4
 * = (r1/l^2)^2 + (r2/l^2)(1 + 2/l^2 + r2/l^2) - 2 r3/l^3: no large terms
 * cancel (2 r3/l^3 <= r2/l^2), so saturated rows keep their digits. */
static double jacobian_fro2(double l, double r1, double r2, double r3)
{
    const double il = 1.0 / l, q2 = r2 * il * il, t = r1 * il * il;
    return t * t + q2 * (1 + 2 * il * il + q2) - 2 * r3 * il * il * il;
}

/* Per-row statistics of a finished row into the head's partial sums. */
static void fwd_stats_row(const sdpa__problem *p, const float *rs, float m, float l,
                          double *part)
{
    /* with a sink l > 0 always: the row is empty when no key was kept */
    if (!(l > 0) || (p->has_sinks && rs[RS_CNT] == 0)) {
        part[CPU_SP_EMPTY] += 1;
        return;
    }
    const float lse = m + logf(l);
    const double jac2 = jacobian_fro2(l, rs[RS_L1], rs[RS_L2], rs[RS_L3]);
    double ent = log1p((double)rs[RS_L1]) - (double)rs[RS_A] / l;
    if (ent < 0) ent = 0; /* rounding on one-hot rows; entropy is >= 0 (NaN stays) */
    const double pmax = 1.0 / l;
    if (part[CPU_SP_ROWS] == 0) {
        part[CPU_SP_MIN] = rs[RS_MIN];
        part[CPU_SP_MAX] = rs[RS_MAX];
        part[CPU_SP_ENTMIN] = ent;
    } else {
        if (rs[RS_MIN] < part[CPU_SP_MIN]) part[CPU_SP_MIN] = rs[RS_MIN];
        if (rs[RS_MAX] > part[CPU_SP_MAX]) part[CPU_SP_MAX] = rs[RS_MAX];
        if (ent < part[CPU_SP_ENTMIN]) part[CPU_SP_ENTMIN] = ent;
    }
    part[CPU_SP_ROWS] += 1;
    part[CPU_SP_COUNT] += rs[RS_CNT];
    part[CPU_SP_SUM] += rs[RS_SUM];
    part[CPU_SP_SUMSQ] += rs[RS_SUMSQ];
    part[CPU_SP_ENT] += ent;
    part[CPU_SP_PMAX] += pmax;
    part[CPU_SP_SAT] += pmax > p->stats_saturation ? 1 : 0;
    part[CPU_SP_JAC] += sqrt(jac2 > 0 ? jac2 : 0);
    part[CPU_SP_SINK] += rs[RS_S0] > -INFINITY ? exp((double)rs[RS_S0] - lse) : 0.0;
}

/* Q rows r..r+15 (at most) of sub-block s, transposed into its qs (D x bq)
 * by the kernels' transpose: straight from the caller's rows, times the
 * head's scale, when they are f32 rows of one head at unit element stride
 * that need no norm or gain (prefill's common case); else each row is first
 * loaded (converted, normalised, times gain and scale, sdpa__cpu_load_qk)
 * into the K tile's buffer, free until the key loop. Either way every value
 * is q * gain * scale rounded once, as sdpa__cpu_load_qk computes it. */
static void pack_q_transposed(const sdpa__cpu_call *call, const fwd_ws *w, const sub_info *s,
                              const sdpa__cpu_kv *qs_src, int64_t b, int64_t hkv, int64_t r0,
                              int r)
{
    const sdpa__cpu_plan *pl = call->pl;
    const sdpa__problem *p = call->p;
    const sdpa__fwd_args *a = call->a;
    const int D = (int)p->D, n = s->nq - r < 16 ? s->nq - r : 16;
    float *dst = w->q + (size_t)s->r0 * D + r;
    int64_t h, i, hl, il;
    row_head(pl, hkv, r0 + s->r0 + r, &h, &i);
    row_head(pl, hkv, r0 + s->r0 + r + n - 1, &hl, &il);
    if (h == hl && p->dtype == SDPA_DTYPE_F32 && a->q.stride[3] == 1 &&
        p->qk_norm == SDPA_QK_NORM_NONE && !call->q_gain) {
        pl->k->transpose(n, D, (const float *)a->q.mem + sdpa__at(&a->q, b, h, i, 0),
                         (ptrdiff_t)a->q.stride[2], dst, pl->bq, call->scale_h[h]);
        return;
    }
    for (int e = 0; e < n; e++) {
        row_head(pl, hkv, r0 + s->r0 + r + e, &h, &i);
        sdpa__cpu_load_qk(pl->k, p, qs_src, b, h, i, call->q_gain, call->scale_h[h],
                          w->kp + (size_t)e * D, NULL, NULL);
    }
    pl->k->transpose(n, D, w->kp, D, dst, pl->bq, 1.0f);
}

static void fwd_task(fwd_job *job, const fwd_ws *w, int64_t t)
{
    const sdpa__cpu_call *call = &job->call;
    const sdpa__cpu_plan *pl = call->pl;
    const sdpa__problem *p = call->p;
    const sdpa__fwd_args *a = call->a;
    const sdpa__cpu_kernels *k = pl->k;
    const int D = (int)p->D, Dv = (int)p->Dv, bq = pl->bq, bk = pl->bk;
    const size_t qesz = sdpa__cpu_unit_bytes(p->dtype);
    const sdpa__cpu_kv qs_src = sdpa__cpu_kv_plain(&a->q, p->dtype);
    const sdpa__cpu_kv ks = sdpa__cpu_kv_source(p, a, false), vs = sdpa__cpu_kv_source(p, a, true);

    const int64_t split = t % pl->nsplit, u = t / pl->nsplit;
    const int64_t bh = u % (p->B * p->Hkv);
    const int64_t sbi = pl->nsb - 1 - u / (p->B * p->Hkv);
    const int64_t b = bh / p->Hkv, hkv = bh % p->Hkv;
    const int64_t r0 = sbi * pl->sb;
    const int nrows = (int)(r0 + pl->sb <= pl->rows ? pl->sb : pl->rows - r0);
    const int64_t kvl = sdpa__cpu_batch_keys(p, a, b);
    const bool direct_k = p->kv_dtype == SDPA_DTYPE_F32 && !ks.page && a->k.stride[3] == 1 &&
                          p->qk_norm == SDPA_QK_NORM_NONE && !p->has_k_gain;
    const bool direct_v = p->kv_dtype == SDPA_DTYPE_F32 && !vs.page && a->v.stride[3] == 1;
    /* Decode: rows under 16 read K/V in place in any dtype (no packing). */
    const bool stream_kv = nrows < 16 && k->dots_kv && k->pv_kv && ks.ref->stride[3] == 1 &&
                           vs.ref->stride[3] == 1 && p->qk_norm == SDPA_QK_NORM_NONE &&
                           !p->has_k_gain;
    /* A sink is the initial state of a row (a term e^{sink} with no value,
     * the top of the statistics); with key splits only split 0 has it, so
     * the merge counts it once. */
    const bool sink = p->has_sinks && split == 0;

    int64_t K0 = INT64_MAX, K1 = 0;
    for (int r = 0; r < nrows; r++) {
        int64_t h, i;
        row_head(pl, hkv, r0 + r, &h, &i);
        sdpa__row_range(p, kvl, i, &w->lo[r], &w->hi[r]);
        if (w->lo[r] < w->hi[r]) {
            if (w->lo[r] < K0) K0 = w->lo[r];
            if (w->hi[r] > K1) K1 = w->hi[r];
        }
    }
    if (K0 > K1) K0 = K1 = 0;
    /* Key tiles sit at multiples of bk whatever the task's rows, so every
     * row sums its keys in the same order for any rows-per-task choice. */
    K0 = K0 / bk * bk;
    if (pl->nsplit > 1) {
        const int64_t len = K1 - K0;
        int64_t part = (len + pl->nsplit - 1) / pl->nsplit;
        part = (part + bk - 1) / bk * bk;
        const int64_t s0 = K0 + split * part;
        K0 = s0 < K1 ? s0 : K1;
        K1 = s0 + part < K1 ? s0 + part : K1;
    }

    /* Pass 0 is the fast path. An Inf/NaN in V multiplied by p = 0 would
     * reach rows that drop that key, so when an accumulator comes out
     * non-finite the task is redone once with non-finite V tiles summed
     * skipping p = 0 (NaN/Inf from Q or K then land where IEEE puts them). */
    const int nsub = (nrows + bq - 1) / bq;
    for (int safe = 0; safe < 2; safe++) {
        sub_info subs[MAX_SUBS];
        for (int s = 0; s < nsub; s++) {
            sub_info *si = &subs[s];
            si->r0 = s * bq;
            si->nq = nrows - si->r0 < bq ? nrows - si->r0 : bq;
            si->lo_min = INT64_MAX;
            si->hi_max = 0;
            si->lo_max = 0;
            si->hi_min = INT64_MAX;
            float *qs = w->q + (size_t)si->r0 * D;
            for (int r = 0; r < si->nq; r++) {
                const int rr = si->r0 + r;
                int64_t h, i;
                row_head(pl, hkv, r0 + rr, &h, &i);
                if (w->lo[rr] < w->hi[rr]) {
                    if (w->lo[rr] < si->lo_min) si->lo_min = w->lo[rr];
                    if (w->hi[rr] > si->hi_max) si->hi_max = w->hi[rr];
                }
                if (w->lo[rr] > si->lo_max) si->lo_max = w->lo[rr];
                if (w->hi[rr] < si->hi_min) si->hi_min = w->hi[rr];
                if (si->nq >= 16) {
                    if (r % 16 == 0) pack_q_transposed(call, w, si, &qs_src, b, hkv, r0, r);
                } else {
                    sdpa__cpu_load_qk(k, p, &qs_src, b, h, i, call->q_gain,
                                      call->scale_h[h], qs + (size_t)r * D, NULL, NULL);
                }
                w->m[rr] = -INFINITY;
                w->l[rr] = 0.0f;
                if (sink) {
                    const float sv =
                        ((const float *)a->sinks.mem)[sdpa__at(&a->sinks, 0, h, 0, 0)];
                    if (sv > -INFINITY) { /* -inf: no sink */
                        w->m[rr] = sv;
                        w->l[rr] = 1.0f;
                    }
                }
                if (p->has_stats) {
                    float *rs = w->rs + (size_t)rr * RS_N;
                    for (int e = 0; e < RS_N; e++) rs[e] = 0.0f;
                    rs[RS_MIN] = INFINITY;
                    rs[RS_MAX] = -INFINITY;
                    rs[RS_S0] = -INFINITY;
                }
            }
            if (si->lo_min > si->hi_max) si->lo_min = si->hi_max = 0;
            memset(w->o + (size_t)si->r0 * Dv, 0, (size_t)si->nq * Dv * sizeof(float));
        }

        /* decode: the row tables, kept from tile to tile; V read through
         * K's table where the two share a layout */
        sdpa__cpu_rowtab ktab = {w->krow, 0, 0}, vtab = {w->vrow, 0, 0};
        ptrdiff_t vshift = 0;
        const bool vshared = stream_kv && sdpa__cpu_kv_shift(&ks, &vs, &vshift);
        const int tk = stream_kv && !safe ? decode_tile_keys(pl) : bk;
        for (int64_t kt = K0; kt < K1; kt += tk) {
            const int n = (int)(K1 - kt < tk ? K1 - kt : tk);
            bool any = false;
            for (int s = 0; s < nsub && !any; s++)
                any = kt < subs[s].hi_max && kt + n > subs[s].lo_min;
            if (!any) continue;
            kv_tile kv = {w->kp, w->vp, D, Dv, false, NULL, NULL, p->kv_dtype};
            sdpa__cpu_rows kr, vr;
            if (stream_kv && !safe) {
                /* the fast pass only: the safe pass needs f32 V tiles. The
                 * row tables go on past the tile up to the task's end
                 * (decode_lookahead keys at most), for the kernels'
                 * prefetch. */
                const int64_t past = K1 - kt - n, most = decode_lookahead(pl, &pl->p);
                const int nr = n + (int)(past < most ? past : most);
                sdpa__cpu_kv_rows(&ks, b, hkv, kt, nr, &ktab);
                if (!vshared) sdpa__cpu_kv_rows(&vs, b, hkv, kt, nr, &vtab);
                vr = (sdpa__cpu_rows){vshared ? w->krow : w->vrow, nr, vshared ? vshift : 0,
                                      p->has_block_table, NULL, 0, 0, 0, 0};
                kr = (sdpa__cpu_rows){w->krow, nr, 0, p->has_block_table, NULL, 0, 0, 0, 0};
                decode_next(p, &kr, &vr, n);
                kv.kr = &kr;
                kv.vr = &vr;
            } else {
                if (direct_k) {
                    kv.k = (const float *)a->k.mem + sdpa__at(&a->k, b, hkv, kt, 0);
                    kv.kld = (ptrdiff_t)a->k.stride[2];
                } else {
                    for (int j = 0; j < n; j++)
                        sdpa__cpu_load_qk(k, p, &ks, b, hkv, kt + j, call->k_gain, 1.0f,
                                          w->kp + (size_t)j * D, NULL, NULL);
                }
                if (direct_v) {
                    kv.v = (const float *)a->v.mem + sdpa__at(&a->v, b, hkv, kt, 0);
                    kv.vld = (ptrdiff_t)a->v.stride[2];
                } else {
                    for (int j = 0; j < n; j++)
                        sdpa__cpu_kv_load(k, &vs, b, hkv, kt + j, Dv, w->vp + (size_t)j * Dv);
                }
                kv.v_nonfinite = safe && k->nonfinite(kv.v, kv.vld, n, Dv);
            }
            for (int s = 0; s < nsub; s++)
                if (kt < subs[s].hi_max && kt + n > subs[s].lo_min)
                    fwd_tile(call, w, &subs[s], b, hkv, r0, kt, n, &kv);
        }

        if (safe || !k->nonfinite(w->o, Dv, nrows, Dv)) break;
    }

    if (pl->nsplit > 1) {
        float *dst = pl->split_ws +
                     (size_t)((bh * pl->nsb + sbi) * pl->nsplit + split) * pl->split_task_floats;
        memcpy(dst, w->o, (size_t)nrows * Dv * sizeof(float));
        memcpy(dst + (size_t)pl->sb * Dv, w->m, (size_t)nrows * sizeof(float));
        memcpy(dst + (size_t)pl->sb * (Dv + 1), w->l, (size_t)nrows * sizeof(float));
        return;
    }
    for (int r = 0; r < nrows; r++) {
        int64_t h, i;
        row_head(pl, hkv, r0 + r, &h, &i);
        const float l = w->l[r], inv = l == 0.0f ? 0.0f : 1.0f / l;
        const float *orow = w->o + (size_t)r * Dv;
        k->store_row(orow, inv, (unsigned char *)a->out.mem + (size_t)sdpa__at(&a->out, b, h, i, 0) * qesz,
                     p->dtype, a->out.stride[3], Dv);
        if (p->has_lse)
            ((float *)a->lse.mem)[sdpa__at(&a->lse, b, h, i, 0)] =
                l == 0.0f ? -INFINITY : w->m[r] + logf(l);
        if (p->has_stats) {
            const int64_t g = (r0 + r) / p->Sq, gsub = (r0 + r) / bq;
            double *part = pl->stat_ws +
                           ((size_t)(bh * pl->nsub + gsub) * pl->G + g) * CPU_SP_N;
            fwd_stats_row(p, w->rs + (size_t)r * RS_N, w->m[r], l, part);
        }
    }
}

static void fwd_worker(void *arg, int tid, int nthreads)
{
    (void)nthreads;
    fwd_job *job = arg;
    const sdpa__cpu_plan *pl = job->call.pl;
    fwd_ws w;
    fwd_carve(pl, pl->thread_ws + (size_t)tid * pl->thread_bytes, &w);
    for (;;) {
        const int64_t t = atomic_fetch_add(&job->next, 1);
        if (t >= job->ntasks) break;
        fwd_task(job, &w, t);
    }
}

/* Merges the key splits of every task by their LSE and writes out and lse. */
static void fwd_merge_splits(const sdpa__cpu_plan *pl, const sdpa__problem *p,
                             const sdpa__fwd_args *a)
{
    const int64_t Dv = p->Dv;
    for (int64_t bh = 0; bh < p->B * p->Hkv; bh++)
        for (int64_t sbi = 0; sbi < pl->nsb; sbi++) {
            const int64_t b = bh / p->Hkv, hkv = bh % p->Hkv, r0 = sbi * pl->sb;
            const int64_t nrows = r0 + pl->sb <= pl->rows ? pl->sb : pl->rows - r0;
            const float *base = pl->split_ws +
                                (size_t)((bh * pl->nsb + sbi) * pl->nsplit) * pl->split_task_floats;
            for (int64_t r = 0; r < nrows; r++) {
                float M = -INFINITY;
                for (int s = 0; s < pl->nsplit; s++) {
                    const float *ps = base + (size_t)s * pl->split_task_floats;
                    const float ms = ps[pl->sb * Dv + r], ls = ps[pl->sb * (Dv + 1) + r];
                    if (ls != 0.0f && ms > M) M = ms;
                }
                float L = 0.0f;
                float *acc = (float *)pl->thread_ws; /* scratch of thread 0 */
                for (int64_t d = 0; d < Dv; d++) acc[d] = 0.0f;
                for (int s = 0; s < pl->nsplit; s++) {
                    const float *ps = base + (size_t)s * pl->split_task_floats;
                    const float ms = ps[pl->sb * Dv + r], ls = ps[pl->sb * (Dv + 1) + r];
                    if (ls == 0.0f) continue;
                    const float f = M == -INFINITY ? 1.0f : expf(ms - M);
                    L += ls * f;
                    for (int64_t d = 0; d < Dv; d++) acc[d] += ps[r * Dv + d] * f;
                }
                int64_t h, i;
                row_head(pl, hkv, r0 + r, &h, &i);
                const float inv = L == 0.0f ? 0.0f : 1.0f / L;
                const int64_t ob = sdpa__at(&a->out, b, h, i, 0), os = a->out.stride[3];
                for (int64_t d = 0; d < Dv; d++)
                    sdpa__store_float(a->out.mem, p->dtype, ob + d * os, acc[d] * inv);
                if (p->has_lse)
                    ((float *)a->lse.mem)[sdpa__at(&a->lse, b, h, i, 0)] =
                        L == 0.0f ? -INFINITY : M + logf(L);
            }
        }
}

/* Reduces the statistics partials of each head in a fixed order. */
static void fwd_reduce_stats(const sdpa__cpu_plan *pl, const sdpa__problem *p,
                             const sdpa__fwd_args *a)
{
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t h = 0; h < p->Hq; h++) {
            const int64_t hkv = h / pl->G, g = h % pl->G, bh = b * p->Hkv + hkv;
            double t[CPU_SP_N] = {0};
            for (int64_t gs = 0; gs < pl->nsub; gs++) {
                const double *part = pl->stat_ws + ((size_t)(bh * pl->nsub + gs) * pl->G + g) * CPU_SP_N;
                t[CPU_SP_EMPTY] += part[CPU_SP_EMPTY];
                if (part[CPU_SP_ROWS] == 0) continue;
                if (t[CPU_SP_ROWS] == 0) {
                    t[CPU_SP_MIN] = part[CPU_SP_MIN];
                    t[CPU_SP_MAX] = part[CPU_SP_MAX];
                    t[CPU_SP_ENTMIN] = part[CPU_SP_ENTMIN];
                } else {
                    if (part[CPU_SP_MIN] < t[CPU_SP_MIN]) t[CPU_SP_MIN] = part[CPU_SP_MIN];
                    if (part[CPU_SP_MAX] > t[CPU_SP_MAX]) t[CPU_SP_MAX] = part[CPU_SP_MAX];
                    if (part[CPU_SP_ENTMIN] < t[CPU_SP_ENTMIN]) t[CPU_SP_ENTMIN] = part[CPU_SP_ENTMIN];
                }
                for (int e = 0; e < CPU_SP_N; e++)
                    if (e != CPU_SP_MIN && e != CPU_SP_MAX && e != CPU_SP_ENTMIN &&
                        e != CPU_SP_EMPTY)
                        t[e] += part[e];
            }
            float out[SDPA_STAT_COUNT] = {0};
            const double rows = t[CPU_SP_ROWS], cnt = t[CPU_SP_COUNT];
            if (rows > 0 && cnt > 0) {
                const double mean = t[CPU_SP_SUM] / cnt;
                const double var = t[CPU_SP_SUMSQ] / cnt - mean * mean;
                out[SDPA_STAT_LOGIT_MEAN] = (float)mean;
                out[SDPA_STAT_LOGIT_STD] = (float)sqrt(var > 0 ? var : 0);
                out[SDPA_STAT_LOGIT_MIN] = (float)t[CPU_SP_MIN];
                out[SDPA_STAT_LOGIT_MAX] = (float)t[CPU_SP_MAX];
                out[SDPA_STAT_ENTROPY_MEAN] = (float)(t[CPU_SP_ENT] / rows);
                out[SDPA_STAT_ENTROPY_MIN] = (float)t[CPU_SP_ENTMIN];
                out[SDPA_STAT_PMAX_MEAN] = (float)(t[CPU_SP_PMAX] / rows);
                out[SDPA_STAT_SATURATED_FRAC] = (float)(t[CPU_SP_SAT] / rows);
                out[SDPA_STAT_JACOBIAN_FRO_MEAN] = (float)(t[CPU_SP_JAC] / rows);
                out[SDPA_STAT_SINK_MASS] = (float)(t[CPU_SP_SINK] / rows);
            }
            out[SDPA_STAT_EMPTY_ROWS] = (float)t[CPU_SP_EMPTY];
            for (int c = 0; c < SDPA_STAT_COUNT; c++)
                ((float *)a->stats.mem)[sdpa__at(&a->stats, b, h, 0, c)] = out[c];
        }
}

sdpa_status sdpa__cpu_forward_run(sdpa__cpu_plan *pl, const sdpa__problem *p,
                                  const sdpa__fwd_args *a)
{
    fwd_job job;
    memset(&job.call, 0, sizeof job.call);
    job.call.pl = pl;
    job.call.p = p;
    job.call.a = a;
    sdpa__cpu_load_params(pl, p, a, &job.call);
    atomic_init(&job.next, 0);
    job.ntasks = p->B * p->Hkv * pl->nsb * pl->nsplit;
    if (p->has_stats)
        memset(pl->stat_ws, 0,
               (size_t)(p->B * p->Hkv * pl->nsub * pl->G) * CPU_SP_N * sizeof(double));
    /* tasks come from a counter: a worker that starts late is not waited for */
    sdpa__cpu_pool_run_any(pl->pool, fwd_worker, &job);
    if (pl->nsplit > 1) fwd_merge_splits(pl, p, a);
    if (p->has_stats) fwd_reduce_stats(pl, p, a);
    return SDPA_OK;
}
