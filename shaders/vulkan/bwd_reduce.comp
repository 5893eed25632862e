/*
 * bwd_reduce.comp — deterministic reductions that finish the backward: the
 * dq_gain and dk_gain vectors (sums of the per-row partials bwd_dq.comp and
 * bwd_dkv.comp left in the workspace) and dtemperature per query head (sum
 * over batches and rows). Invocation t < D sums dq_gain[t], D <= t < 2D
 * dk_gain[t - D], 2D <= t < 2D + Hq dtemperature[t - 2D], 2D + Hq <= t <
 * 2D + 2Hq dsinks[t - 2D - Hq] = -sum_{b,i} p_sink D (p_sink = e^{sink - lse},
 * D from bwd_dq.comp; rows that keep nothing contribute 0); each sum runs in
 * row order. Dispatched by vk_dispatch.c last in a backward that needs it.
 */
#version 450
#include "common.glsl"

layout(local_size_x_id = 0) in;

void main()
{
    uint t = flat_id();
    uint D = uint(HEAD_DIM), Hq = uint(P.shape0.y), Sq = uint(P.shape0.w);
    if (t < D) {
        if (P.rflags.x == 0) return;
        float acc = 0.0;
        for (uint r = 0u; r < uint(P.misc.z); r++) acc += ws[P.ws1.y + r * D + t];
        dqg_buf[tidx(T_DQG, 0u, 0u, 0u, t)] = acc;
    } else if (t < 2u * D) {
        if (P.rflags.y == 0) return;
        uint d = t - D;
        float acc = 0.0;
        for (uint r = 0u; r < uint(P.misc.w); r++) acc += ws[P.ws1.z + r * D + d];
        dkg_buf[tidx(T_DKG, 0u, 0u, 0u, d)] = acc;
    } else if (t < 2u * D + Hq) {
        if (P.rflags.z == 0) return;
        uint h = t - 2u * D;
        float acc = 0.0;
        for (uint b = 0u; b < uint(P.shape0.x); b++)
            for (uint i = 0u; i < Sq; i++) acc += ws[P.ws1.w + (b * Hq + h) * Sq + i];
        dt_buf[tidx(T_DT, 0u, h, 0u, 0u)] = acc;
    } else if (t < 2u * D + 2u * Hq) {
        if (P.rflags.w == 0) return;
        uint h = t - 2u * D - Hq;
        float sink = sink_logit(h, true), acc = 0.0;
        for (uint b = 0u; b < uint(P.shape0.x); b++)
            for (uint i = 0u; i < Sq; i++) {
                float dval = ws[P.ws1.x + (b * Hq + h) * Sq + i];
                float p = exp(sink - lse_buf[tidx(T_LSE, b, h, i, 0u)]);
                if (p != 0.0 && dval != 0.0) acc -= p * dval;
            }
        dsinks_buf[tidx(T_DSINKS, 0u, h, 0u, 0u)] = acc;
    }
}
