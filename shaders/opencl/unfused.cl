/*
 * unfused.cl — the mask + softmax pass of the unfused (materialised-scores)
 * forward. S holds scale * q^ k^T for every row (r = (b * Hq + h) * Sq + i,
 * Skv floats each), written by CLBlast's GEMM; this kernel turns each row
 * into probabilities in place: softcap, bias, bool mask, kv_len and band as
 * in fwd.cl, then P = exp(s - m) / l with dropped keys exactly 0 (selected,
 * never multiplied, so NaN/Inf scores of dropped keys cannot reach the row).
 * It writes the row's LSE to part_l[r] (combine.cl then writes out and lse)
 * and, with HAS_STATS, the row record of stats.cl (same math as fwd.cl).
 * A row with no kept key gets P = 0 and LSE -inf (out = 0 after combine).
 * Invariants: f32 throughout; fixed summation order (deterministic).
 * Called by cl_unfused.c between the two GEMMs, one work-item per row;
 * the argument list after S matches sdpa_fwd's common arguments.
 */

#ifndef HAS_MASK
#define HAS_MASK 0 /* bool mask input present */
#endif
#ifndef HAS_BIAS
#define HAS_BIAS 0 /* additive f32 bias input present */
#endif
#ifndef HAS_SOFTCAP
#define HAS_SOFTCAP 0 /* s = softcap * tanh(s / softcap) before bias/mask */
#endif
#ifndef HAS_STATS
#define HAS_STATS 0 /* per-row statistics records for stats.cl */
#endif

__kernel void sdpa_unf_softmax(global float *S, long R,
                               int Hq, int Hkv, int Sq, int Skv, int SqP, int SkvP,
                               int diag, long diag_off, long left, long right, float softcap,
                               global const int *kvlen, long kl_off, long kl_st, int has_kvlen,
                               global const uchar *mask, long m_off, long4 ms,
                               global const float *bias, long b_off, long4 bs,
                               global float *part_l, global float *rowstats)
{
    long r = get_global_id(0);
    if (r >= R) return;
    (void)Hkv; (void)SqP; (void)SkvP; (void)softcap; (void)mask; (void)bias;
    (void)m_off; (void)b_off; (void)ms; (void)bs; (void)rowstats;
    long bh = r / Sq, i = r % Sq;
    long b = bh / Hq;
    long h = bh % Hq;
    global float *s = S + r * (long)Skv;
    long kvl = sdpa_kv_len(kvlen, kl_off, kl_st, has_kvlen, b, Skv);
    long off = sdpa_diag_off(diag, diag_off, kvl, Sq);
    long lo, hi;
    sdpa_row_range(i, off, left, right, kvl, &lo, &hi);
    (void)h;
#if HAS_STATS
    float st_n = 0.0f, st_sum = 0.0f, st_sq = 0.0f, st_min = INFINITY;
    float st_max = SDPA_NEG_INF, st_s0 = SDPA_NEG_INF;
#endif
    float m = SDPA_NEG_INF;
    for (long j = 0; j < Skv; j++) {
        float x = s[j];
        bool keep = j >= lo && j < hi;
#if HAS_MASK
        if (keep) keep = mask[m_off + b * ms.s0 + h * ms.s1 + i * ms.s2 + j * ms.s3] != 0;
#endif
#if HAS_SOFTCAP
        x = SDPA_SOFTCAP(float, x, softcap);
#endif
#if HAS_BIAS
        if (keep) { /* a -inf bias drops the key, even where the score is NaN */
            float bb = bias[b_off + b * bs.s0 + h * bs.s1 + i * bs.s2 + j * bs.s3];
            keep = bb != SDPA_NEG_INF;
            x += bb;
        }
#endif
        x = keep ? x : SDPA_NEG_INF;
#if HAS_STATS
        if (x > SDPA_NEG_INF) {
            st_n += 1.0f;
            st_sum += x;
            st_sq = fma(x, x, st_sq);
            st_min = fmin(st_min, x);
            st_max = fmax(st_max, x);
            if (j == 0) st_s0 = x;
        }
#endif
        s[j] = x;
        m = (isnan(x) || x > m) ? x : m;
    }
    if (m == SDPA_NEG_INF) { /* no kept key */
        for (long j = 0; j < Skv; j++) s[j] = 0.0f;
        part_l[r] = SDPA_NEG_INF;
#if HAS_STATS
        sdpa_rowstat_store(rowstats + r * SDPA_CLRS_SIZE, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, m,
                           0.0f, 0.0f, 0.0f, 0.0f, 0.0f, SDPA_NEG_INF);
#endif
        return;
    }
    float l = 0.0f;
    for (long j = lo; j < hi; j++) l += exp(s[j] - m);
    float il = 1.0f / l;
#if HAS_STATS
    float st_a = 0.0f, st_l1 = 0.0f, st_l2 = 0.0f, st_l3 = 0.0f;
    bool top = true; /* the first key at m is left out of the sums (stats.cl) */
#endif
    for (long j = 0; j < Skv; j++) {
        float x = s[j];
        float pt = exp(x - m);
#if HAS_STATS
        if (top && x == m) {
            top = false;
        } else if (pt > 0.0f) {
            st_a = fma(pt, x - m, st_a);
            st_l1 += pt;
            st_l2 = fma(pt, pt, st_l2);
            st_l3 = fma(pt * pt, pt, st_l3);
        }
#endif
        s[j] = x == SDPA_NEG_INF ? 0.0f : pt * il;
    }
    part_l[r] = m + log(l);
#if HAS_STATS
    sdpa_rowstat_store(rowstats + r * SDPA_CLRS_SIZE, st_n, st_sum, st_sq, st_min, st_max, m,
                       l, st_a, st_l1, st_l2, st_l3, st_s0);
#endif
}
