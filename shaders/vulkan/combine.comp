/*
 * combine.comp — split-KV decode, second stage: merges the nsplit partial
 * records fwd.comp wrote for one query row (by their maxima, exactly as an
 * LSE merge) and finalises out / lse / row statistics.
 *
 * Invariants: splits are merged in index order (deterministic); splits that
 * kept no key contribute nothing; a row empty in every split is zeros, lse
 * -inf. Dispatched by vk_dispatch.c after fwd.comp with SPLIT, one invocation
 * per query row.
 */
#version 450
#include "common.glsl"
#include "online_softmax.glsl"

layout(local_size_x_id = 0) in;

void main()
{
    uint row = flat_id();
    if (row >= uint(P.misc.z)) return;
    int Sq = P.shape0.w, Hq = P.shape0.y;
    uint i = row % uint(Sq);
    uint h = (row / uint(Sq)) % uint(Hq);
    uint b = row / uint(Sq * Hq);
    uint nsplit = uint(P.misc.x);

    float o[HEAD_DIM_V];
    for (int d = 0; d < HEAD_DIM_V; d++) o[d] = 0.0;
    RowState r = rs_empty();
    for (uint sp = 0u; sp < nsplit; sp++) {
        uint base = P.ws0.w + (row * nsplit + sp) * uint(PT_SIZE + HEAD_DIM_V);
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
        float cx, cy;
        rs_merge(r, y, cx, cy);
        if (cy == 0.0 && y.m == NEG_INF) continue;
        for (int d = 0; d < HEAD_DIM_V; d++) {
            float od = o[d], yd = ws[base + uint(PT_SIZE + d)];
            /* keep infinities through underflowed rescale factors (IEEE) */
            o[d] = (isinf(od) ? od : od * cx) + (isinf(yd) ? yd : yd * cy);
        }
    }
    rs_finalize(r, o, b, h, i, row);
}
