/*
 * reference_forward.c — the float64 oracle's forward pass and statistics.
 *
 * For each (b, h, i) it materialises the whole score row in double precision,
 * in exactly the order of docs/semantics.md ("Forward"): qk-norm (+ gain), scale (or the
 * per-head temperature), softcap, bias and ALiBi, then masks/kv_len/band, then
 * softmax, whose denominator holds the head's sink if given. A row with no
 * kept key (including a row whose kept keys all have -inf bias) gets output 0
 * and LSE -inf (the sink logit with a sink). Keys and values are read through
 * reference_kv.c (paged, any K/V dtype). Statistics follow the definitions of
 * the conformance README, the sink one more outcome of the distribution.
 * Slow and obvious on purpose.
 */
#include "reference.h"

#include <math.h>
#include <stdlib.h>

double sdpa__ref_norm(sdpa_qk_norm mode, double eps, double *x, int64_t n, double *mean)
{
    double r = 1.0, mu = 0.0, ss = 0.0;
    switch (mode) {
    case SDPA_QK_NORM_RMS:
        for (int64_t d = 0; d < n; d++) ss += x[d] * x[d];
        r = 1.0 / sqrt(ss / (double)n + eps);
        break;
    case SDPA_QK_NORM_L2:
        for (int64_t d = 0; d < n; d++) ss += x[d] * x[d];
        r = 1.0 / sqrt(ss + eps);
        break;
    case SDPA_QK_NORM_LAYER:
        for (int64_t d = 0; d < n; d++) mu += x[d];
        mu /= (double)n;
        for (int64_t d = 0; d < n; d++) ss += (x[d] - mu) * (x[d] - mu);
        r = 1.0 / sqrt(ss / (double)n + eps);
        break;
    default:
        break;
    }
    if (mode != SDPA_QK_NORM_NONE)
        for (int64_t d = 0; d < n; d++) x[d] = (x[d] - mu) * r;
    if (mean) *mean = mu;
    return r;
}

void sdpa__ref_load_row(const sdpa__ref *t, sdpa_dtype dtype, int64_t i0, int64_t i1,
                        int64_t i2, int64_t len, double *dst)
{
    for (int64_t d = 0; d < len; d++)
        dst[d] = sdpa__load_float(t->mem, dtype, sdpa__at(t, i0, i1, i2, d));
}

int64_t sdpa__ref_batch_keys(const sdpa__problem *p, const sdpa__fwd_args *a, int64_t b)
{
    if (!p->has_kv_len) return p->Skv;
    int64_t n = ((const int32_t *)a->kv_len.mem)[sdpa__at(&a->kv_len, b, 0, 0, 0)];
    return n < 0 ? 0 : n > p->Skv ? p->Skv : n;
}

void sdpa__ref_keys(const sdpa__problem *p, const sdpa__fwd_args *a, int64_t b,
                    int64_t kvh, double *kn, double *k_r)
{
    for (int64_t j = 0; j < p->Skv; j++) {
        double *x = kn + j * p->D;
        sdpa__ref_load_kv(p, a, false, b, kvh, j, p->D, x);
        k_r[j] = sdpa__ref_norm(p->qk_norm, p->qk_norm_eps, x, p->D, NULL);
        if (p->has_k_gain)
            for (int64_t d = 0; d < p->D; d++)
                x[d] *= ((const float *)a->k_gain.mem)[sdpa__at(&a->k_gain, 0, 0, 0, d)];
    }
}

int64_t sdpa__ref_scores(const sdpa__problem *p, const sdpa__fwd_args *a, int64_t b,
                         int64_t h, int64_t i, int64_t keys, const double *kn,
                         sdpa__ref_row *row)
{
    const int64_t D = p->D;
    sdpa__ref_load_row(&a->q, p->dtype, b, h, i, D, row->qraw);
    memcpy(row->qn, row->qraw, (size_t)D * sizeof *row->qn);
    row->q_r = sdpa__ref_norm(p->qk_norm, p->qk_norm_eps, row->qn, D, &row->q_mean);
    if (p->has_q_gain)
        for (int64_t d = 0; d < D; d++)
            row->qn[d] *= ((const float *)a->q_gain.mem)[sdpa__at(&a->q_gain, 0, 0, 0, d)];
    row->scale = p->has_temperature
                     ? ((const float *)a->temperature.mem)[sdpa__at(&a->temperature, 0, h, 0, 0)]
                     : p->scale;
    int64_t lo, hi, nkept = 0;
    sdpa__row_range(p, keys, i, &lo, &hi);
    const int64_t off = sdpa__alibi_offset(p, keys);
    const double slope =
        p->has_alibi_slopes
            ? ((const float *)a->alibi_slopes.mem)[sdpa__at(&a->alibi_slopes, 0, h, 0, 0)]
            : 0.0;
    for (int64_t j = 0; j < p->Skv; j++) {
        bool keep = j >= lo && j < hi;
        if (keep && p->has_mask)
            keep = ((const uint8_t *)a->mask.mem)[sdpa__at(&a->mask, b, h, i, j)] != 0;
        double dot = 0.0;
        for (int64_t d = 0; keep && d < D; d++) dot += row->qn[d] * kn[j * D + d];
        double t = row->scale * dot;
        double s = p->softcap > 0 ? p->softcap * tanh(t / p->softcap) : t;
        if (keep && p->has_bias) {
            /* a -inf bias drops the key like the mask, even where s is NaN */
            const double bb = ((const float *)a->bias.mem)[sdpa__at(&a->bias, b, h, i, j)];
            if (bb == -INFINITY) keep = false;
            s += bb;
        }
        if (p->has_alibi_slopes) s -= slope * fabs((double)(i + off - j));
        if (s == -INFINITY) keep = false;
        row->dot[j] = dot;
        row->t[j] = t;
        row->s[j] = s;
        row->kept[j] = keep;
        nkept += keep;
    }
    /* the sink: one more term of the denominator, at index Skv */
    const int64_t S = p->Skv;
    const double sink =
        p->has_sinks ? ((const float *)a->sinks.mem)[sdpa__at(&a->sinks, 0, h, 0, 0)] : -INFINITY;
    row->kept[S] = sink != -INFINITY;
    row->s[S] = sink;
    /* softmax over kept keys and the sink; NaN scores propagate */
    double m = -INFINITY;
    for (int64_t j = 0; j <= S; j++)
        if (row->kept[j] && (row->s[j] > m || isnan(row->s[j]))) m = row->s[j];
    double l = 0.0;
    for (int64_t j = 0; j <= S; j++) {
        row->p[j] = row->kept[j] ? exp(row->s[j] - m) : 0.0;
        l += row->p[j];
    }
    const bool any = nkept || row->kept[S];
    for (int64_t j = 0; j <= S && any; j++) row->p[j] /= l;
    row->s[S] = any ? m + log(l) : -INFINITY; /* lse slot */
    return nkept;
}

/* Running statistics of one head (definitions: conformance README). */
typedef struct head_stats {
    double n, sum, sumsq, min, max;
    double rows, ent_sum, ent_min, pmax_sum, saturated, jac_sum, sink_sum, empty;
} head_stats;

/* ||diag(p) - p p^T||_F^2 without the cancellation of the running-sum form
 * (sum p^2 - 2 sum p^3 + (sum p^2)^2) on saturated rows: with m the largest
 * p, 1 - p_m and the squares of the others are summed directly. Entry (i,i)
 * is p_i (1 - p_i), entry (i,j) is -p_i p_j. */
static double jacobian_fro2(const sdpa__problem *p, const sdpa__ref_row *row, int64_t m)
{
    double rest1 = 0, rest2 = 0; /* sum and sum of squares of p_k, k != m */
    for (int64_t j = 0; j <= p->Skv; j++) { /* index Skv: the sink */
        if (!row->kept[j] || j == m) continue;
        rest1 += row->p[j];
        rest2 += row->p[j] * row->p[j];
    }
    double pm = row->p[m], s2 = pm * pm + rest2;
    double diag = pm * pm * rest1 * rest1, off = pm * pm * rest2;
    for (int64_t j = 0; j <= p->Skv; j++) {
        if (!row->kept[j] || j == m) continue;
        double pj = row->p[j];
        diag += pj * pj * (1 - pj) * (1 - pj);
        off += pj * pj * (s2 - pj * pj);
    }
    return diag + off;
}

static void stats_row(head_stats *st, const sdpa__problem *p, const sdpa__ref_row *row,
                      int64_t nkept)
{
    if (!nkept) {
        st->empty += 1;
        return;
    }
    double ent = 0, pmax = -1;
    int64_t m = 0;
    for (int64_t j = 0; j <= p->Skv; j++) { /* index Skv: the sink, an outcome only */
        if (!row->kept[j]) continue;
        double s = row->s[j], pj = row->p[j];
        if (j < p->Skv) {
            st->n += 1;
            st->sum += s;
            st->sumsq += s * s;
            if (s < st->min || isnan(s)) st->min = s;
            if (s > st->max || isnan(s)) st->max = s;
        }
        if (pj > 0) ent -= pj * log(pj);
        if (pj > pmax || isnan(pj)) {
            pmax = pj;
            m = j;
        }
    }
    double fro2 = jacobian_fro2(p, row, m);
    st->rows += 1;
    st->ent_sum += ent;
    if (ent < st->ent_min || isnan(ent)) st->ent_min = ent;
    st->pmax_sum += pmax;
    st->saturated += pmax > p->stats_saturation;
    st->jac_sum += isnan(fro2) ? fro2 : sqrt(fro2 > 0 ? fro2 : 0);
    st->sink_sum += row->kept[0] ? row->p[0] : 0.0;
}

static void stats_store(const head_stats *st, const sdpa__fwd_args *a, int64_t b, int64_t h)
{
    double v[SDPA_STAT_COUNT] = {0};
    if (st->rows > 0) {
        double mean = st->sum / st->n;
        double var = st->sumsq / st->n - mean * mean;
        v[SDPA_STAT_LOGIT_MEAN] = mean;
        v[SDPA_STAT_LOGIT_STD] = sqrt(var > 0 ? var : 0);
        v[SDPA_STAT_LOGIT_MIN] = st->min;
        v[SDPA_STAT_LOGIT_MAX] = st->max;
        v[SDPA_STAT_ENTROPY_MEAN] = st->ent_sum / st->rows;
        v[SDPA_STAT_ENTROPY_MIN] = st->ent_min;
        v[SDPA_STAT_PMAX_MEAN] = st->pmax_sum / st->rows;
        v[SDPA_STAT_SATURATED_FRAC] = st->saturated / st->rows;
        v[SDPA_STAT_JACOBIAN_FRO_MEAN] = st->jac_sum / st->rows;
        v[SDPA_STAT_SINK_MASS] = st->sink_sum / st->rows;
    }
    v[SDPA_STAT_EMPTY_ROWS] = st->empty;
    for (int c = 0; c < SDPA_STAT_COUNT; c++)
        ((float *)a->stats.mem)[sdpa__at(&a->stats, b, h, 0, c)] = (float)v[c];
}

sdpa_status sdpa__ref_forward(sdpa_context *ctx, void *state, void *plan, const sdpa__problem *p,
                              const sdpa__fwd_args *a)
{
    (void)state;
    (void)plan;
    const int64_t D = p->D, Dv = p->Dv, Skv = p->Skv, group = p->Hq / p->Hkv;
    double *kn = sdpa__malloc((size_t)(Skv * D) * sizeof *kn);
    double *k_r = sdpa__malloc((size_t)Skv * sizeof *k_r);
    double *vrow = sdpa__malloc((size_t)Dv * sizeof *vrow);
    double *o = sdpa__malloc((size_t)Dv * sizeof *o);
    double *buf = sdpa__malloc((size_t)(2 * D + 5 * (Skv + 1)) * sizeof *buf);
    unsigned char *kept = sdpa__malloc((size_t)Skv + 1);
    sdpa_status st = SDPA_OK;
    if (!kn || !k_r || !vrow || !o || !buf || !kept) {
        st = SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "reference: out of host memory");
        goto cleanup;
    }
    sdpa__ref_row row = {buf, buf + D, buf + 2 * D, buf + 2 * D + (Skv + 1),
                         buf + 2 * D + 2 * (Skv + 1), buf + 2 * D + 3 * (Skv + 1), kept,
                         0, 0, 0};
    for (int64_t b = 0; b < p->B; b++) {
        int64_t keys = sdpa__ref_batch_keys(p, a, b);
        for (int64_t kvh = 0; kvh < p->Hkv; kvh++) {
            sdpa__ref_keys(p, a, b, kvh, kn, k_r);
            for (int64_t h = kvh * group; h < (kvh + 1) * group; h++) {
                head_stats hs = {0, 0, 0, INFINITY, -INFINITY, 0, 0, INFINITY, 0, 0, 0, 0, 0};
                for (int64_t i = 0; i < p->Sq; i++) {
                    int64_t nkept = sdpa__ref_scores(p, a, b, h, i, keys, kn, &row);
                    for (int64_t d = 0; d < Dv; d++) o[d] = 0.0;
                    for (int64_t j = 0; j < Skv && nkept; j++) {
                        if (!row.kept[j]) continue;
                        sdpa__ref_load_kv(p, a, true, b, kvh, j, Dv, vrow);
                        for (int64_t d = 0; d < Dv; d++) o[d] += row.p[j] * vrow[d];
                    }
                    for (int64_t d = 0; d < Dv; d++)
                        sdpa__store_float(a->out.mem, p->dtype, sdpa__at(&a->out, b, h, i, d),
                                          (float)o[d]);
                    if (p->has_lse)
                        ((float *)a->lse.mem)[sdpa__at(&a->lse, b, h, i, 0)] = (float)row.s[Skv];
                    if (p->has_stats) stats_row(&hs, p, &row, nkept);
                }
                if (p->has_stats) stats_store(&hs, a, b, h);
            }
        }
    }
cleanup:
    free(kn);
    free(k_r);
    free(vrow);
    free(o);
    free(buf);
    free(kept);
    return st;
}
