/*
 * stats.cl — reduces the per-row statistic records written by fwd.cl into
 * the (B, Hq, SDPA_STAT_COUNT) stats output (definitions: DESIGN section 4
 * and shared/conformance/README.md).
 *
 * Row record: SDPA_CLRS_SIZE floats named SDPA_CLRS_* in
 * shaders/common/sdpa_shared.h (non-empty flag, kept-key count, sum s,
 * sum s^2, min s, max s, entropy, p_max, Jacobian Frobenius norm, p of
 * key 0), written by sdpa_rowstat_store below. Empty rows hold zeros and
 * only count as empty.
 * One work-item per (b, h) sums its rows in order, so results are
 * deterministic. Called by cl_forward.c after sdpa_fwd when stats are wanted.
 */

/* Entropy and Jacobian Frobenius norm of a finished row from its running
 * sums relative to the row maximum m (fwd.cl, unfused.cl): l = sum e^{s-m},
 * a = sum e^{s-m} (s - m), and l1, l2, l3 the sums of e^{s-m}, its square and
 * cube over every kept key but one at m (whose e is 1). Both are formed
 * without cancellation, so saturated rows (p_max -> 1) keep their digits:
 * entropy = log(1 + l1) - a/l (two terms >= 0); with p_t = 1/l and q the
 * other probabilities, ||J||^2 = p_t^2 (1 - p_t)^2 + sum q^2 (1 - q)^2 +
 * 2 p_t^2 sum q^2 + (sum q^2)^2 - sum q^4
 * = (l1/l^2)^2 + (l2/l^2)(1 + 2/l^2 + l2/l^2) - 2 l3/l^3, where the
 * subtracted term is at most the one before it. NaN stays NaN. */
inline float sdpa_row_entropy(float l, float a, float l1)
{
    return log1p(l1) - a / l;
}

inline float sdpa_row_jacobian(float l, float l1, float l2, float l3)
{
    float il = 1.0f / l, q2 = l2 * il * il, t = l1 * il * il;
    float j2 = t * t + q2 * (1.0f + 2.0f * il * il + q2) - 2.0f * l3 * il * il * il;
    return j2 > 0.0f ? sqrt(j2) : (isnan(j2) ? j2 : 0.0f);
}

/* Writes row record rs from a finished row's running sums (fwd.cl,
 * unfused.cl): n kept keys, sum and sum of squares of their logits, min, max;
 * m the row maximum and l, a, l1..l3 the sums of sdpa_row_entropy and
 * sdpa_row_jacobian; s0 the logit of key 0 (-inf when dropped). l == 0 or
 * n == 0 is an empty row: all zeros. With sinks (kv_access.cl) m and l
 * start at the sink as one more outcome (not a logit: n, sum, sq, min, max
 * count keys only), so entropy, p_max and the Jacobian include it and p of
 * key 0 is over the sink-inclusive denominator. */
inline void sdpa_rowstat_store(global float *rs, float n, float sum, float sq, float mn,
                               float mx, float m, float l, float a, float l1, float l2,
                               float l3, float s0)
{
    if (!(l > 0.0f) || n == 0.0f) { /* with a sink, l = 1 for an empty row */
        for (int e = 0; e < SDPA_CLRS_SIZE; e++) rs[e] = 0.0f;
        return;
    }
    float il = 1.0f / l;
    rs[SDPA_CLRS_VALID] = 1.0f;
    rs[SDPA_CLRS_N] = n;
    rs[SDPA_CLRS_SUM] = sum;
    rs[SDPA_CLRS_SQ] = sq;
    rs[SDPA_CLRS_MIN] = mn;
    rs[SDPA_CLRS_MAX] = mx;
    rs[SDPA_CLRS_ENT] = sdpa_row_entropy(l, a, l1);
    rs[SDPA_CLRS_PMAX] = il;
    rs[SDPA_CLRS_JFRO] = sdpa_row_jacobian(l, l1, l2, l3);
    rs[SDPA_CLRS_SINK] = s0 > SDPA_NEG_INF ? exp(s0 - m) * il : 0.0f;
}

__kernel void sdpa_stats(global const float *rowstats, long BH, int Hq, int Sq,
                         float saturation, global float *stats, long s_off, long4 ss)
{
    long bh = get_global_id(0);
    if (bh >= BH) return;
    long b = bh / Hq, h = bh % Hq;
    float rows = 0.0f, n = 0.0f, sum = 0.0f, sq = 0.0f;
    float mn = INFINITY, mx = SDPA_NEG_INF, ent = 0.0f, ent_min = INFINITY;
    float pmax = 0.0f, sat = 0.0f, jac = 0.0f, sink = 0.0f;
    for (int i = 0; i < Sq; i++) {
        global const float *rs = rowstats + (bh * Sq + i) * SDPA_CLRS_SIZE;
        if (rs[SDPA_CLRS_VALID] == 0.0f) continue;
        rows += 1.0f;
        n += rs[SDPA_CLRS_N];
        sum += rs[SDPA_CLRS_SUM];
        sq += rs[SDPA_CLRS_SQ];
        mn = fmin(mn, rs[SDPA_CLRS_MIN]);
        mx = fmax(mx, rs[SDPA_CLRS_MAX]);
        ent += rs[SDPA_CLRS_ENT];
        ent_min = fmin(ent_min, rs[SDPA_CLRS_ENT]);
        pmax += rs[SDPA_CLRS_PMAX];
        sat += rs[SDPA_CLRS_PMAX] > saturation ? 1.0f : 0.0f;
        jac += rs[SDPA_CLRS_JFRO];
        sink += rs[SDPA_CLRS_SINK];
    }
    float v[11];
    for (int c = 0; c < 11; c++) v[c] = 0.0f;
    if (rows > 0.0f) {
        float mean = sum / n;
        v[0] = mean;
        v[1] = sqrt(fmax(sq / n - mean * mean, 0.0f));
        v[2] = mn;
        v[3] = mx;
        v[4] = ent / rows;
        v[5] = ent_min;
        v[6] = pmax / rows;
        v[7] = sat / rows;
        v[8] = jac / rows;
        v[9] = sink / rows;
    }
    v[10] = (float)Sq - rows;
    for (int c = 0; c < 11; c++) stats[s_off + b * ss.s0 + h * ss.s1 + c * ss.s3] = v[c];
}
