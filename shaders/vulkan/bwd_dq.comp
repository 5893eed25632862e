/*
 * bwd_dq.comp — fused backward, first pass: one invocation per query row
 * recomputes P from the forward's lse, forms D = rowsum(dO * O), dS = P (dP -
 * D) through the score's slope (score_slope), and accumulates dq in
 * registers, K_TILE keys per step (loops over d with the tile unrolled
 * inside); then applies the QK-norm backward and gain, and leaves per-row
 * partials for dq_gain and dtemperature (reduced in order by
 * bwd_reduce.comp) and D (read by bwd_dkv.comp) in the workspace.
 *
 * Invariants: no atomics, every sum in a fixed order (deterministic); a row
 * with lse = -inf (no key kept) gets zero gradients; dropped keys (dS = 0)
 * are selected out of the dq sum, never multiplied, so NaN/Inf in their K
 * cannot reach it. Dispatched by
 * vk_dispatch.c after qknorm.comp (when NORMED) and before bwd_dkv.comp.
 */
#version 450
#include "common.glsl"
#include "qk_norm.glsl"

layout(local_size_x_id = 0) in;

void main()
{
    uint row = flat_id();
    if (row >= uint(P.misc.z)) return;
    int Sq = P.shape0.w, Hq = P.shape0.y;
    uint i = row % uint(Sq);
    uint h = (row / uint(Sq)) % uint(Hq);
    uint b = row / uint(Sq * Hq);
    uint hk = h / uint(P.shape1.w);
    float scale = head_scale(int(h));

    float dor[HEAD_DIM_V];
    float dval = 0.0;
    for (int d = 0; d < HEAD_DIM_V; d++) {
        dor[d] = BUF_LOAD(dout_buf, tidx(T_DOUT, b, h, i, uint(d)));
        dval += dor[d] * BUF_LOAD(out_buf, tidx(T_OUT, b, h, i, uint(d)));
    }
    float lse = lse_buf[tidx(T_LSE, b, h, i, 0u)];
    if (lse == NEG_INF) dval = 0.0;
    ws[P.ws1.x + row] = dval;

    float qr[HEAD_DIM], dq[HEAD_DIM];
    for (int d = 0; d < HEAD_DIM; d++) {
        qr[d] = NORMED ? ws[P.ws0.x + row * uint(HEAD_DIM) + uint(d)]
                       : BUF_LOAD(q_buf, tidx(T_Q, b, h, i, uint(d)));
        dq[d] = 0.0;
    }
    float dt = 0.0;
    int lo, hi;
    row_range(valid_keys(int(b)), int(i), lo, hi);
    if (lse == NEG_INF) hi = lo;
    uint kvrow0 = (b * uint(P.shape0.z) + hk) * uint(P.shape1.x);
    for (int j0 = lo; j0 < hi; j0 += K_TILE) {
        uint kb[K_TILE], vb[K_TILE];
        float raw[K_TILE], dp[K_TILE];
        [[unroll]] for (int t = 0; t < K_TILE; t++) {
            uint j = uint(min(j0 + t, hi - 1));
            kb[t] = NORMED ? P.ws0.y + (kvrow0 + j) * uint(HEAD_DIM)
                           : kv_row(T_K, b, hk, j);
            vb[t] = kv_row(T_V, b, hk, j);
            raw[t] = 0.0;
            dp[t] = 0.0;
        }
        if (NORMED) {
            for (int d = 0; d < HEAD_DIM; d++) {
                float qd = qr[d];
                [[unroll]] for (int t = 0; t < K_TILE; t++) raw[t] += qd * ws[kb[t] + uint(d)];
            }
        } else {
            for (int d = 0; d < HEAD_DIM; d++) {
                float qd = qr[d];
                [[unroll]] for (int t = 0; t < K_TILE; t++)
                    raw[t] += qd * K_AT(kb[t], d);
            }
        }
        for (int d = 0; d < HEAD_DIM_V; d++) {
            float od = dor[d];
            [[unroll]] for (int t = 0; t < K_TILE; t++)
                dp[t] += od * V_AT(vb[t], d);
        }
        float draw[K_TILE];
        [[unroll]] for (int t = 0; t < K_TILE; t++) {
            draw[t] = 0.0;
            if (j0 + t >= hi) continue;
            float z = scale * raw[t];
            float s = finish_score(z, b, h, i, uint(j0 + t));
            if (s == NEG_INF) continue;
            float p = exp(s - lse);
            if (p == 0.0) continue; /* dP may hold V's Inf/NaN */
            float dz = p * (dp[t] - dval);
            if (HAS_SOFTCAP) dz *= score_slope(z);
            dt += dz * raw[t];
            draw[t] = dz * scale;
        }
        if (NORMED) {
            for (int d = 0; d < HEAD_DIM; d++) {
                float acc = dq[d];
                [[unroll]] for (int t = 0; t < K_TILE; t++)
                    acc += draw[t] != 0.0 ? draw[t] * ws[kb[t] + uint(d)] : 0.0;
                dq[d] = acc;
            }
        } else {
            for (int d = 0; d < HEAD_DIM; d++) {
                float acc = dq[d];
                [[unroll]] for (int t = 0; t < K_TILE; t++)
                    acc += draw[t] != 0.0 ? draw[t] * K_AT(kb[t], d) : 0.0;
                dq[d] = acc;
            }
        }
    }

    if (NORMED) {
        /* dq holds the gradient w.r.t. gain * norm(q): go back through both. */
        float y[HEAD_DIM];
        for (int d = 0; d < HEAD_DIM; d++) y[d] = BUF_LOAD(q_buf, tidx(T_Q, b, h, i, uint(d)));
        float rinv = qkn_forward(y);
        for (int d = 0; d < HEAD_DIM; d++) {
            if (HAS_QGAIN) {
                ws[P.ws1.y + row * uint(HEAD_DIM) + uint(d)] = dq[d] * y[d];
                dq[d] *= qgain_buf[tidx(T_QGAIN, 0u, 0u, 0u, uint(d))];
            }
        }
        qkn_backward(y, rinv, dq);
    }
    for (int d = 0; d < HEAD_DIM; d++) BUF_STORE(dq_buf, tidx(T_DQ, b, h, i, uint(d)), dq[d]);
    if (HAS_TEMP) ws[P.ws1.w + row] = dt;
}
