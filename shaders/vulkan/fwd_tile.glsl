/*
 * fwd_tile.glsl — what every forward variant shares between loading a tile
 * of keys and writing its row: the online-softmax step over one tile of
 * finished scores, a maximum that keeps NaN, the P.V accumulation of one
 * output column, the moments' finish and the split partial record.
 * Included by fwd.comp (direct and staged variants) and fwd_lanes.comp,
 * after common.glsl and online_softmax.glsl.
 */

/* One online-softmax step over a tile of finished scores s (NEG_INF =
 * dropped) whose maximum is bm (NaN kept): moves the state to the new
 * maximum, fills the probabilities pr (exactly 0 for dropped keys) and the
 * statistics sums, and returns the factor that rescales the accumulator.
 * Keys are j0 .. j0 + K_TILE - 1. */
float tile_step(inout RowState r, float s[K_TILE], float bm, int j0, inout float shift,
                inout float sum1, inout float sum2, out float pr[K_TILE])
{
    float c = 1.0;
    bool top = bm > r.m || isnan(bm); /* one key of the tile is the new top */
    if (top) c = rs_rescale(r, bm);
    [[unroll]] for (int t = 0; t < K_TILE; t++) {
        float st = s[t];
        pr[t] = 0.0;
        if (st == NEG_INF) continue;
        float e = exp(st - r.m);
        pr[t] = e;
        r.l += e;
        r.a += e * (st - r.m);
        if (HAS_STATS) {
            if (top && st == r.m) {
                top = false;
            } else {
                r.l1 += e;
                r.l2 += e * e;
                r.l3 += e * e * e;
            }
            if (r.n == 0.0) shift = st;
            float x = st - shift;
            r.n += 1.0;
            sum1 += x;
            sum2 += x * x;
            r.smin = min(r.smin, st);
            r.smax = max(r.smax, st);
            if (j0 + t == 0) r.s0 = st;
        }
    }
    return c;
}

/* Tile maximum that keeps a NaN: GLSL's max() may drop one, and a NaN score
 * must make its row NaN (IEEE propagation) instead of looking empty. */
float nan_max(float bm, float st)
{
    return isnan(st) || isnan(bm) ? st + bm : max(bm, st);
}

/* One output column after a tile: rescale the running accumulator by c and
 * add the tile's probabilities times that column of V (vv[t] = V[key t]).
 * c = e^(m_old - m_new) > 0 mathematically; when it underflows to 0 an
 * infinite accumulator must stay infinite (IEEE), not become inf * 0 = NaN.
 * Dropped keys (p = 0, including tile padding) must not leak a NaN/Inf of V:
 * select, don't multiply. */
float pv_column(float o, float c, float pr[K_TILE], float vv[K_TILE])
{
    float acc = isinf(o) ? o : o * c;
    [[unroll]] for (int t = 0; t < K_TILE; t++) acc += pr[t] != 0.0 ? pr[t] * vv[t] : 0.0;
    return acc;
}

/* Mean and second moment of the kept scores from the shifted sums. */
void finish_moments(inout RowState r, float shift, float sum1, float sum2)
{
    if (r.n > 0.0) {
        r.mean = shift + sum1 / r.n;
        r.m2 = max(0.0, sum2 - sum1 * sum1 / r.n);
    }
}

/* The state fields of the split partial record of invocation task gid
 * (combine.comp merges them); returns where its Dv accumulator columns go. */
uint store_partial_state(uint gid, RowState r)
{
    uint base = P.ws0.w + gid * uint(PT_SIZE + HEAD_DIM_V);
    ws[base + PT_M] = r.m;
    ws[base + PT_L] = r.l;
    ws[base + PT_A] = r.a;
    ws[base + PT_L1] = r.l1;
    ws[base + PT_L2] = r.l2;
    ws[base + PT_L3] = r.l3;
    ws[base + PT_N] = r.n;
    ws[base + PT_MEAN] = r.mean;
    ws[base + PT_M2] = r.m2;
    ws[base + PT_MIN] = r.smin;
    ws[base + PT_MAX] = r.smax;
    ws[base + PT_S0] = r.s0;
    return base + uint(PT_SIZE);
}
