/*
 * unfused.cl — the mask + softmax pass of the unfused (materialised-scores)
 * forward. S holds scale * q^ k^T for every row (r = (b * Hq + h) * Sq + i,
 * Skv floats each), written by CLBlast's GEMM; this kernel turns each row
 * into probabilities in place: the score pipeline (prelude.cl) and the band
 * as in fwd.cl, then P = exp(s - m) / l with dropped keys exactly 0 (selected,
 * never multiplied, so NaN/Inf scores of dropped keys cannot reach the row).
 * It writes the row's LSE to part_l[r] (combine.cl then writes out and lse)
 * and, with HAS_STATS, the row record of stats.cl (same math as fwd.cl).
 * A row with no kept key gets P = 0 and LSE -inf (out = 0 after combine).
 * Invariants: f32 throughout; fixed summation order (deterministic).
 * Called by cl_unfused.c between the two GEMMs, one work-item per row;
 * the argument list after S matches sdpa_fwd's common arguments.
 */


__kernel void sdpa_unf_softmax(global float *S, long R,
                               SDPA_COMMON_ARGS,
                               global float *part_l, global float *rowstats)
{
    long r = get_global_id(0);
    if (r >= R) return;
    SDPA_COMMON_UNUSED;
    (void)rowstats;
    long bh = r / Sq, i = r % Sq;
    long b = bh / Hq;
    long h = bh % Hq;
    global float *s = S + r * (long)Skv;
    long kvl = SDPA_KV_LEN(b);
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
        x = SDPA_SCORE(x, &keep, b, h, i, j);
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
