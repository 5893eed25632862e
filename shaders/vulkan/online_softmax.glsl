/*
 * online_softmax.glsl — the per-row running state of the online softmax and
 * of the diagnostics (DESIGN section 4), how two states merge, and how a final
 * state becomes out / lse / a row-statistics record.
 *
 * State, relative to the running maximum m of the kept scores s:
 *   l = sum e^{s-m}, a = sum e^{s-m} (s-m); l1, l2, l3 = sum e^{s-m},
 *   e^{2(s-m)}, e^{3(s-m)} over every kept key but one at the maximum (the
 *   "top", whose e is 1: left out so the small terms of a saturated row keep
 *   their digits); n, mean, m2 (Welford/Chan moments of s), min, max;
 *   s0 = score of key 0 when kept, else -inf.
 * The accumulator o (sum e^{s-m} v) lives with the caller and is rescaled by
 * the factor rescale() returns. An empty row has m = -inf and l = 0.
 * Included by fwd.comp, fwd_rows.comp and combine.comp.
 */

struct RowState {
    float m, l, a, l1, l2, l3;
    float n, mean, m2, smin, smax, s0;
};

RowState rs_empty()
{
    RowState r;
    r.m = NEG_INF; r.l = 0.0; r.a = 0.0; r.l1 = 0.0; r.l2 = 0.0; r.l3 = 0.0;
    r.n = 0.0; r.mean = 0.0; r.m2 = 0.0;
    r.smin = 1.0 / 0.0; r.smax = NEG_INF; r.s0 = NEG_INF;
    return r;
}

/* The state a row starts from: empty, or with a sink logit (features.glsl
 * sink_logit) one more outcome already in it, as the top (e = 1) at m =
 * sink: it joins l (the denominator, so lse) and the entropy, p_max and
 * Jacobian sums, never o or the logit moments (n, mean, min, max, s0). A
 * row that keeps no key then gives out 0 and lse = sink. */
RowState rs_start(float sink)
{
    RowState r = rs_empty();
    if (sink != NEG_INF) {
        r.m = sink;
        r.l = 1.0;
    }
    return r;
}

/* Moves the state to maximum mnew >= m; returns e^{m - mnew} for o. Below
 * mnew the old top key joins l1..l3 (the caller supplies the new top). */
float rs_rescale(inout RowState r, float mnew)
{
    if (r.m == NEG_INF) { r.m = mnew; return 0.0; }
    float c = exp(r.m - mnew), top = r.m < mnew ? 1.0 : 0.0;
    r.a = c * (r.a + (r.m - mnew) * r.l);
    r.l *= c;
    r.l1 = c * (r.l1 + top);
    r.l2 = c * c * (r.l2 + top);
    r.l3 = c * c * c * (r.l3 + top);
    r.m = mnew;
    return c;
}

/* Merges state y (with its own maximum) into x: moments by Chan's rule. */
void rs_merge(inout RowState x, RowState y, out float cx, out float cy)
{
    cx = 1.0; cy = 0.0;
    if (y.m == NEG_INF) return;
    float mnew = max(x.m, y.m), tie = x.m == y.m ? 1.0 : 0.0; /* two tops: keep x's */
    cx = rs_rescale(x, mnew);
    cy = rs_rescale(y, mnew);
    x.l += y.l; x.a += y.a;
    x.l1 += y.l1 + tie; x.l2 += y.l2 + tie; x.l3 += y.l3 + tie;
    float n = x.n + y.n;
    if (n > 0.0) {
        float d = y.mean - x.mean;
        x.mean += d * (y.n / n);
        x.m2 += y.m2 + d * d * (x.n * y.n / n);
    }
    x.n = n;
    x.smin = min(x.smin, y.smin);
    x.smax = max(x.smax, y.smax);
    x.s0 = max(x.s0, y.s0);
}

/* Entropy and Jacobian Frobenius norm ||diag(p) - p p^T||_F of a final
 * non-empty state, without cancellation on saturated rows (p_max -> 1):
 * entropy = log(1 + l1) - a/l (two terms >= 0; log(1 + x) by its series for
 * small x, which log(l) would round away); with p_t = 1/l and q the other
 * probabilities, ||J||^2 = p_t^2 (1 - p_t)^2 + sum q^2 (1 - q)^2 +
 * 2 p_t^2 sum q^2 + (sum q^2)^2 - sum q^4
 * = (l1/l^2)^2 + (l2/l^2)(1 + 2/l^2 + l2/l^2) - 2 l3/l^3, where the
 * subtracted term is at most the one before it. NaN stays NaN. */
float rs_entropy(RowState r)
{
    float x = r.l1;
    float log1p_x = x < 1e-3 ? x * (1.0 - x * (0.5 - x * (1.0 / 3.0))) : log(1.0 + x);
    return log1p_x - r.a / r.l;
}

float rs_jacobian_fro(RowState r)
{
    float il = 1.0 / r.l, q2 = r.l2 * il * il, t = r.l1 * il * il;
    float j2 = t * t + q2 * (1.0 + 2.0 * il * il + q2) - 2.0 * r.l3 * il * il * il;
    return j2 > 0.0 ? sqrt(j2) : (isnan(j2) ? j2 : 0.0);
}

/* Writes lse and the row-statistics record of a final state (everything of
 * the row but its output columns). */
void rs_store_row(RowState r, uint b, uint h, uint i, uint row)
{
    bool empty = r.l == 0.0;
    float inv = empty ? 0.0 : 1.0 / r.l;
    if (HAS_LSE)
        lse_buf[tidx(T_LSE, b, h, i, 0u)] = empty ? NEG_INF : r.m + log(r.l);
    if (HAS_STATS) {
        uint base = P.ws0.z + row * uint(RS_SIZE);
        /* with a sink a row may have l = 1 and no kept key: still empty */
        if (empty || r.n == 0.0) {
            [[unroll]] for (int k = 0; k < RS_SIZE; k++) ws[base + uint(k)] = 0.0;
            return;
        }
        ws[base + RS_N] = r.n;
        ws[base + RS_MEAN] = r.mean;
        ws[base + RS_M2] = r.m2;
        ws[base + RS_MIN] = r.smin;
        ws[base + RS_MAX] = r.smax;
        ws[base + RS_ENT] = rs_entropy(r);
        ws[base + RS_PMAX] = inv;
        ws[base + RS_JFRO] = rs_jacobian_fro(r);
        ws[base + RS_SINK] = r.s0 == NEG_INF ? 0.0 : exp(r.s0 - r.m) * inv;
        ws[base + RS_VALID] = 1.0;
    }
}

/* Output column d of a final state: o / l, or 0 for an empty row. */
float rs_out(RowState r, float od)
{
    return r.l == 0.0 ? 0.0 : od * (1.0 / r.l);
}

/* Writes out row (o / l, or zeros), lse and the row-statistics record. */
void rs_finalize(RowState r, inout float o[HEAD_DIM_V], uint b, uint h, uint i,
                 uint row)
{
    for (int d = 0; d < HEAD_DIM_V; d++)
        BUF_STORE(out_buf, tidx(T_OUT, b, h, i, uint(d)), rs_out(r, o[d]));
    rs_store_row(r, b, h, i, row);
}
