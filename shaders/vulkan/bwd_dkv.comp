/*
 * bwd_dkv.comp — fused backward, second pass: one invocation per key row
 * (b, kv head, j) walks the query heads that share its KV head and, for each,
 * only the query rows whose band keeps key j (the band inverted), recomputing
 * P from lse and accumulating dv = sum P dO and dk = sum dS q in registers,
 * K_TILE query rows per step (loops over d with the tile unrolled inside);
 * then applies the QK-norm backward and gain and leaves the per-row dk_gain
 * partial for bwd_reduce.comp.
 *
 * Invariants: heads and rows are visited in order, no atomics
 * (deterministic); keys at or past the valid-key count get zero gradients; rows that drop
 * the key (p = dS = 0) are selected out, never multiplied, so their NaN/Inf
 * q or dO cannot reach it. Dispatched by
 * vk_dispatch.c after bwd_dq.comp (it reads D from the workspace).
 */
#version 450
#include "common.glsl"
#include "qk_norm.glsl"

layout(local_size_x_id = 0) in;

void main()
{
    uint kr = flat_id();
    if (kr >= uint(P.misc.w)) return;
    int Skv = P.shape1.x, Hkv = P.shape0.z, Sq = P.shape0.w, Hq = P.shape0.y;
    int group = P.shape1.w;
    uint j = kr % uint(Skv);
    uint hk = (kr / uint(Skv)) % uint(Hkv);
    uint b = kr / uint(Skv * Hkv);

    float kk[HEAD_DIM], dk[HEAD_DIM], vr[HEAD_DIM_V], dv[HEAD_DIM_V];
    for (int d = 0; d < HEAD_DIM; d++) {
        kk[d] = NORMED ? ws[P.ws0.y + kr * uint(HEAD_DIM) + uint(d)]
                       : K_AT(kv_row(T_K, b, hk, j), d);
        dk[d] = 0.0;
    }
    for (int d = 0; d < HEAD_DIM_V; d++) {
        vr[d] = V_AT(kv_row(T_V, b, hk, j), d);
        dv[d] = 0.0;
    }
    int kvl = valid_keys(int(b));
    int off = diag_off(kvl);
    int ilo = 0, ihi = Sq;
    if (int(j) >= kvl) ihi = 0;
    if (P.band.w >= 0) ilo = max(ilo, int(j) - off - P.band.w);
    if (P.band.z >= 0) ihi = min(ihi, int(j) - off + P.band.z + 1);

    uint qs = NORMED ? 1u : P.tstride[T_Q].w, os = P.tstride[T_DOUT].w;
    for (int g = 0; g < group; g++) {
        uint h = hk * uint(group) + uint(g);
        float scale = head_scale(int(h));
        for (int i0 = ilo; i0 < ihi; i0 += K_TILE) {
            uint qb[K_TILE], ob[K_TILE], qrow[K_TILE];
            float raw[K_TILE], dp[K_TILE];
            [[unroll]] for (int t = 0; t < K_TILE; t++) {
                uint i = uint(min(i0 + t, ihi - 1));
                qrow[t] = (b * uint(Hq) + h) * uint(Sq) + i;
                qb[t] = NORMED ? P.ws0.x + qrow[t] * uint(HEAD_DIM) : tidx(T_Q, b, h, i, 0u);
                ob[t] = tidx(T_DOUT, b, h, i, 0u);
                raw[t] = 0.0;
                dp[t] = 0.0;
            }
            if (NORMED) {
                for (int d = 0; d < HEAD_DIM; d++) {
                    float kd = kk[d];
                    [[unroll]] for (int t = 0; t < K_TILE; t++) raw[t] += kd * ws[qb[t] + uint(d)];
                }
            } else {
                for (int d = 0; d < HEAD_DIM; d++) {
                    float kd = kk[d];
                    [[unroll]] for (int t = 0; t < K_TILE; t++)
                        raw[t] += kd * BUF_LOAD(q_buf, qb[t] + uint(d) * qs);
                }
            }
            for (int d = 0; d < HEAD_DIM_V; d++) {
                float vd = vr[d];
                [[unroll]] for (int t = 0; t < K_TILE; t++)
                    dp[t] += vd * BUF_LOAD(dout_buf, ob[t] + uint(d) * os);
            }
            float pr[K_TILE], draw[K_TILE];
            [[unroll]] for (int t = 0; t < K_TILE; t++) {
                pr[t] = 0.0;
                draw[t] = 0.0;
                if (i0 + t >= ihi) continue;
                uint i = uint(i0 + t);
                float lse = lse_buf[tidx(T_LSE, b, h, i, 0u)];
                if (lse == NEG_INF) continue;
                float z = scale * raw[t];
                float s = finish_score(z, b, h, i, j);
                if (s == NEG_INF) continue;
                float p = exp(s - lse);
                if (p == 0.0) continue; /* dP may hold V's or dO's Inf/NaN */
                float dz = p * (dp[t] - ws[P.ws1.x + qrow[t]]);
                if (HAS_SOFTCAP) dz *= score_slope(z);
                pr[t] = p;
                draw[t] = dz * scale;
            }
            for (int d = 0; d < HEAD_DIM_V; d++) {
                float acc = dv[d];
                [[unroll]] for (int t = 0; t < K_TILE; t++)
                    acc += pr[t] != 0.0 ? pr[t] * BUF_LOAD(dout_buf, ob[t] + uint(d) * os) : 0.0;
                dv[d] = acc;
            }
            if (NORMED) {
                for (int d = 0; d < HEAD_DIM; d++) {
                    float acc = dk[d];
                    [[unroll]] for (int t = 0; t < K_TILE; t++)
                        acc += draw[t] != 0.0 ? draw[t] * ws[qb[t] + uint(d)] : 0.0;
                    dk[d] = acc;
                }
            } else {
                for (int d = 0; d < HEAD_DIM; d++) {
                    float acc = dk[d];
                    [[unroll]] for (int t = 0; t < K_TILE; t++)
                        acc += draw[t] != 0.0 ? draw[t] * BUF_LOAD(q_buf, qb[t] + uint(d) * qs)
                                              : 0.0;
                    dk[d] = acc;
                }
            }
        }
    }

    if (NORMED) {
        float y[HEAD_DIM];
        for (int d = 0; d < HEAD_DIM; d++) y[d] = K_AT(kv_row(T_K, b, hk, j), d);
        float rinv = qkn_forward(y);
        for (int d = 0; d < HEAD_DIM; d++) {
            if (HAS_KGAIN) {
                ws[P.ws1.z + kr * uint(HEAD_DIM) + uint(d)] = dk[d] * y[d];
                dk[d] *= kgain_buf[tidx(T_KGAIN, 0u, 0u, 0u, uint(d))];
            }
        }
        qkn_backward(y, rinv, dk);
    }
    for (int d = 0; d < HEAD_DIM; d++) DK_STORE(tidx(T_DK, b, hk, j, uint(d)), dk[d]);
    for (int d = 0; d < HEAD_DIM_V; d++) DV_STORE(tidx(T_DV, b, hk, j, uint(d)), dv[d]);
}
