/*
 * bwd_fa2.glsl — what the two GPU-class backward shaders share
 * (bwd_fa2_dq.comp, bwd_fa2_dkv.comp): the lane-group sums of a tile's
 * partial dot products (subgroup shuffles, or shared memory in the *sh
 * variants) and the gradient of one kept (row, key) pair from its raw dot
 * product q.k, dP = dO.v, D = rowsum(dO * O) and the forward's lse.
 *
 * Included after common.glsl and fa2_common.glsl.
 */

/* the shared-memory reduction (SG_REDUCE = 0): two partials per invocation
 * and row; one float otherwise */
shared float sh_red[(1 - SG_REDUCE) * 2 * WG_SIZE * ROWS + SG_REDUCE];

/* a[r] and c[r] summed over the LANES lanes of this lane group, in every
 * lane. Called by every invocation (barriers in the shared variant). */
void bwd_lanes_sum2(inout float a[ROWS], inout float c[ROWS])
{
    if (SG_REDUCE != 0) {
        [[unroll]] for (int r = 0; r < ROWS; r++) {
            a[r] = lanes_sum(a[r]);
            c[r] = lanes_sum(c[r]);
        }
        return;
    }
    uint lid = gl_LocalInvocationID.x, g0 = lid / uint(LANES) * uint(LANES);
    const uint half_ = WG_SIZE * uint(ROWS);
    [[unroll]] for (int r = 0; r < ROWS; r++) {
        sh_red[lid * uint(ROWS) + uint(r)] = a[r];
        sh_red[half_ + lid * uint(ROWS) + uint(r)] = c[r];
    }
    memoryBarrierShared();
    barrier();
    [[unroll]] for (int r = 0; r < ROWS; r++) {
        float x = 0.0, y = 0.0;
        [[unroll]] for (int l = 0; l < LANES; l++) {
            uint e = (g0 + uint(l)) * uint(ROWS) + uint(r);
            x += sh_red[e];
            y += sh_red[half_ + e];
        }
        a[r] = x;
        c[r] = y;
    }
    barrier(); /* sh_red is rewritten by the next call */
}

/* The gradient terms of row (b, h, i) and key j, kept by the band (the
 * caller checks the band and lse != -inf): p = P[i][j] from the forward's
 * lse and dz = dS / scale = p (dP - D) times the score's slope; both 0 when
 * the score function drops the key or p underflows (dP may then hold V's
 * or dO's Inf/NaN: callers select on p and dz, never multiply by them). */
void bwd_pair(float raw, float dp, float dd, float lse, float scale, uint b, uint h, uint i,
              uint j, out float p, out float dz)
{
    p = 0.0;
    dz = 0.0;
    float z = scale * raw;
    float s = finish_score(z, b, h, i, j);
    if (s == NEG_INF) return;
    float pp = exp(s - lse);
    if (pp == 0.0) return;
    p = pp;
    dz = pp * (dp - dd);
    if (HAS_SOFTCAP) dz *= score_slope(z);
}
