/*
 * bwd_fa2_dkv.comp — the GPU-class backward, second pass (FlashAttention-2
 * structure): dK and dV. A work-group owns a block of BR = (WG_SIZE / LANES)
 * x ROWS consecutive keys of one KV slab (b, kv head); LANES consecutive
 * invocations serve ROWS keys, each keeping its vec4 chunks of the keys'
 * K, V, dK and dV rows in registers, so dK and dV are accumulated in
 * registers for the whole pass.
 *
 *  - the work-group walks the query heads of its KV head in order and, in
 *    each, the union of the query rows that keep any of its keys (the band
 *    inverted: uniform bounds from the block's first and last key);
 *  - per step it stages K_TILE query rows' q and dO (and their lse and D,
 *    which bwd_fa2_dq.comp wrote) in shared memory, and every key of the
 *    block reads them: the scores k.q and dP = v.dO (summed over the
 *    lanes), P from lse, dS = P (dP - D) through the score's slope, then
 *    dV += P dO and dK += dS q.
 *
 * Invariants (as bwd_dkv.comp): heads and rows in order, no atomics
 * (deterministic); keys at or past the valid-key count get zero gradients;
 * rows that drop a key (P = dS = 0) are selected out, never multiplied, so
 * their NaN/Inf q or dO cannot reach it. Every loop with a barrier has
 * work-group-uniform bounds; only whole work-groups of grid padding return
 * early. Not for QK-norm or gains (vk_plan.c runs bwd_dkv.comp there).
 * Dispatched by vk_dispatch.c after bwd_fa2_dq.comp over B x Hkv x
 * ceil(Skv / BR) work-groups (sdpa__vk_bwd_invocations).
 */
#version 450
#ifdef FA2_SHARED_REDUCE
const int SG_REDUCE = 0;
#else
#extension GL_KHR_shader_subgroup_shuffle : require
const int SG_REDUCE = 1;
#endif
#include "common.glsl"

layout(local_size_x_id = 0) in;

#include "fa2_common.glsl"
#include "bwd_fa2.glsl"

shared SH_T sh_q[K_TILE * KC];
shared SH_T sh_do[K_TILE * VC];
shared float sh_lse[K_TILE], sh_dd[K_TILE];

void main()
{
    uint lid = gl_LocalInvocationID.x;
    uint grp = lid / uint(LANES), lane = lid % uint(LANES);
    uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    int Skv = P.shape1.x, Hkv = P.shape0.z, Sq = P.shape0.w, Hq = P.shape0.y;
    int group = P.shape1.w;
    uint blocks = (uint(Skv) + uint(BR) - 1u) / uint(BR);
    if (wg >= uint(P.shape0.x * Hkv) * blocks) return; /* whole group: uniform */
    uint slab = wg / blocks;
    int jf = int((wg % blocks) * uint(BR));
    int jl = min(jf + BR, Skv) - 1;
    uint b = slab / uint(Hkv), hk = slab % uint(Hkv);
    int kvl = valid_keys(int(b));
    int off = diag_off(kvl);

    /* the query rows that keep key j: [j - off - right, j - off + left]; the
     * block's union from its first and last valid key (uniform) */
    int uilo = 0, uihi = Sq;
    if (P.band.w >= 0) uilo = max(uilo, jf - off - P.band.w);
    if (P.band.z >= 0) uihi = min(uihi, min(jl, kvl - 1) - off + P.band.z + 1);
    if (jf >= kvl) uihi = uilo;

    uint jj[ROWS];
    int ilo[ROWS], ihi[ROWS];
    bool live[ROWS];
    vec4 kk[ROWS][CPL], dk[ROWS][CPL], vr[ROWS][CPLV], dv[ROWS][CPLV];
    [[unroll]] for (int r = 0; r < ROWS; r++) {
        int j = jf + int(grp) * ROWS + r;
        live[r] = j < Skv;
        jj[r] = uint(min(j, Skv - 1)); /* past the end: a valid key, never written */
        ilo[r] = uilo;
        ihi[r] = uihi;
        if (P.band.w >= 0) ilo[r] = max(ilo[r], int(jj[r]) - off - P.band.w);
        if (P.band.z >= 0) ihi[r] = min(ihi[r], int(jj[r]) - off + P.band.z + 1);
        if (!live[r] || int(jj[r]) >= kvl) ihi[r] = ilo[r];
        ihi[r] = max(ihi[r], ilo[r]);
        uint kb = tidx(T_K, b, hk, jj[r], 0u), ks = P.tstride[T_K].w;
        uint vb = tidx(T_V, b, hk, jj[r], 0u), vs = P.tstride[T_V].w;
        vec4 kv[CPL], vv[CPLV];
        FA2_LOAD_ROW(kv, k_vec, load4_k, kb, ks, HEAD_DIM, CPL)
        FA2_LOAD_ROW(vv, v_vec, load4_v, vb, vs, HEAD_DIM_V, CPLV)
        [[unroll]] for (int m = 0; m < CPL; m++) {
            kk[r][m] = kv[m];
            dk[r][m] = vec4(0.0);
        }
        [[unroll]] for (int m = 0; m < CPLV; m++) {
            vr[r][m] = vv[m];
            dv[r][m] = vec4(0.0);
        }
    }

    uint qr = P.tstride[T_Q].z, orr = P.tstride[T_DOUT].z;
    uint qs = P.tstride[T_Q].w, os = P.tstride[T_DOUT].w;
    for (int g = 0; g < group; g++) {
        uint h = hk * uint(group) + uint(g);
        float scale = head_scale(int(h));
        uint qbase = tidx(T_Q, b, h, 0u, 0u), obase = tidx(T_DOUT, b, h, 0u, 0u);
        uint row0 = (b * uint(Hq) + h) * uint(Sq);
        bool qvec = fa2_vec_ok(HEAD_DIM, qbase, qr, qs);
        bool ovec = fa2_vec_ok(HEAD_DIM_V, obase, orr, os);
        for (int i0 = uilo; i0 < uihi; i0 += K_TILE) {
            barrier(); /* everyone is done with the previous tile */
            FA2_STAGE(sh_q, q_vec, load4_q, qbase, qr, qs, KC, DC, i0, uihi - 1, qvec)
            FA2_STAGE(sh_do, dout_vec, load4_do, obase, orr, os, VC, DVC, i0, uihi - 1, ovec)
            if (lid < uint(K_TILE)) {
                uint i = uint(min(i0 + int(lid), uihi - 1));
                sh_lse[lid] = lse_buf[tidx(T_LSE, b, h, i, 0u)];
                sh_dd[lid] = ws[P.ws1.x + row0 + i];
            }
            memoryBarrierShared();
            barrier();

            /* row by row: this lane's share of k.q and v.dO for every key,
             * summed over the lanes, P and dS (every lane of the group
             * alike), then dV += P dO and dK += dS q from the same
             * registers; rows that drop the key add nothing, never their dO
             * or q */
            [[unroll]] for (int t = 0; t < K_TILE; t++) {
                vec4 qq[CPL], oo[CPLV];
                [[unroll]] for (int m = 0; m < CPL; m++) qq[m] = SH_UNPACK(sh_q[t * KC + m * LANES + int(lane)]);
                [[unroll]] for (int m = 0; m < CPLV; m++) oo[m] = SH_UNPACK(sh_do[t * VC + m * LANES + int(lane)]);
                float s[ROWS], dp[ROWS];
                [[unroll]] for (int r = 0; r < ROWS; r++) {
                    s[r] = 0.0;
                    dp[r] = 0.0;
                    [[unroll]] for (int m = 0; m < CPL; m++) s[r] = fma4(kk[r][m], qq[m], s[r]);
                    [[unroll]] for (int m = 0; m < CPLV; m++) dp[r] = fma4(vr[r][m], oo[m], dp[r]);
                }
                bwd_lanes_sum2(s, dp);
                int i = i0 + t;
                float lse = sh_lse[t], dd = sh_dd[t];
                [[unroll]] for (int r = 0; r < ROWS; r++) {
                    float p = 0.0, dz = 0.0;
                    if (i >= ilo[r] && i < ihi[r] && lse != NEG_INF)
                        bwd_pair(s[r], dp[r], dd, lse, scale, b, h, uint(i), jj[r], p, dz);
                    if (p != 0.0)
                        [[unroll]] for (int m = 0; m < CPLV; m++) dv[r][m] = fma(vec4(p), oo[m], dv[r][m]);
                    if (dz != 0.0) {
                        float ds = dz * scale;
                        [[unroll]] for (int m = 0; m < CPL; m++) dk[r][m] = fma(vec4(ds), qq[m], dk[r][m]);
                    }
                }
            }
        }
    }

    [[unroll]] for (int r = 0; r < ROWS; r++) {
        if (!live[r]) continue;
        uint kb = tidx(T_DK, b, hk, jj[r], 0u), ks = P.tstride[T_DK].w;
        uint vb = tidx(T_DV, b, hk, jj[r], 0u), vs = P.tstride[T_DV].w;
        [[unroll]] for (int m = 0; m < CPL; m++) {
            int d0 = 4 * (int(lane) + m * LANES);
            [[unroll]] for (int e = 0; e < 4; e++)
                if (d0 + e < HEAD_DIM) BUF_STORE(dk_buf, kb + uint(d0 + e) * ks, dk[r][m][e]);
        }
        [[unroll]] for (int m = 0; m < CPLV; m++) {
            int d0 = 4 * (int(lane) + m * LANES);
            [[unroll]] for (int e = 0; e < 4; e++)
                if (d0 + e < HEAD_DIM_V) BUF_STORE(dv_buf, vb + uint(d0 + e) * vs, dv[r][m][e]);
        }
    }
}
