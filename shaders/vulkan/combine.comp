/*
 * combine.comp — split-KV decode, second stage: merges the nsplit partial
 * records fwd.comp wrote for one query row (by their maxima, exactly as an
 * LSE merge) and finalises out / lse / row statistics.
 *
 * Two passes: the splits' states merged in index order give the final
 * state, then each output column sums the splits' accumulators rescaled to
 * its maximum, in index order (deterministic). Splits that kept no key
 * contribute nothing; a row empty in every split is zeros, lse
 * -inf. Dispatched by vk_dispatch.c after fwd.comp with SPLIT, one invocation
 * per query row.
 */
#version 450
#include "common.glsl"
#include "online_softmax.glsl"

layout(local_size_x_id = 0) in;

/* The state fields of partial record k (fwd_tile.glsl store_partial_state). */
RowState load_partial(uint k)
{
    uint base = P.ws0.w + k * uint(PT_SIZE + HEAD_DIM_V);
    RowState y;
    y.m = ws[base + PT_M];
    y.l = ws[base + PT_L];
    y.a = ws[base + PT_A];
    y.l1 = ws[base + PT_L1];
    y.l2 = ws[base + PT_L2];
    y.l3 = ws[base + PT_L3];
    y.n = ws[base + PT_N];
    y.mean = ws[base + PT_MEAN];
    y.m2 = ws[base + PT_M2];
    y.smin = ws[base + PT_MIN];
    y.smax = ws[base + PT_MAX];
    y.s0 = ws[base + PT_S0];
    return y;
}

void main()
{
    uint row = flat_id();
    if (row >= uint(P.misc.z)) return;
    int Sq = P.shape0.w, Hq = P.shape0.y;
    uint i = row % uint(Sq);
    uint h = (row / uint(Sq)) % uint(Hq);
    uint b = row / uint(Sq * Hq);
    uint nsplit = uint(P.misc.x);

    /* pass 1: the merged state (its maximum is the final one) */
    RowState r = rs_empty();
    for (uint sp = 0u; sp < nsplit; sp++) {
        RowState y = load_partial(row * nsplit + sp);
        float cx, cy;
        rs_merge(r, y, cx, cy);
    }
    /* pass 2, column by column: each split's accumulator rescaled to the
     * final maximum (no Dv array in registers: an indexed one went to
     * scratch on GPUs) */
    uint ob = tidx(T_OUT, b, h, i, 0u), os = P.tstride[T_OUT].w;
    for (int d = 0; d < HEAD_DIM_V; d++) {
        float od = 0.0;
        for (uint sp = 0u; sp < nsplit; sp++) {
            uint base = P.ws0.w + (row * nsplit + sp) * uint(PT_SIZE + HEAD_DIM_V);
            float m = ws[base + PT_M];
            if (m == NEG_INF) continue; /* kept no key */
            float c = m == r.m ? 1.0 : exp(m - r.m), yd = ws[base + uint(PT_SIZE + d)];
            /* keep infinities through underflowed rescale factors (IEEE) */
            od += isinf(yd) ? yd : yd * c;
        }
        BUF_STORE(out_buf, ob + uint(d) * os, rs_out(r, od));
    }
    rs_store_row(r, b, h, i, row);
}
