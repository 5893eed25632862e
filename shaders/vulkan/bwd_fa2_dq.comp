/*
 * bwd_fa2_dq.comp — the GPU-class backward, first pass (FlashAttention-2
 * structure): dq and D. A work-group owns a block of BR = (WG_SIZE / LANES) x
 * ROWS query rows of one KV slab (b, kv head), consecutive in (h, i) order
 * as in fwd_fa2.comp; LANES consecutive invocations serve ROWS rows, each
 * keeping its vec4 chunks of the rows' q, dO and dq in registers.
 *
 *  - first D = rowsum(dO * O) per row (lane partials summed over the lane
 *    group), written to the workspace for bwd_fa2_dkv.comp;
 *  - per step the work-group stages K_TILE keys' K and V rows in shared
 *    memory (fa2_common.glsl) and every row of the block reads them: the
 *    scores q.k and dP = dO.v (summed over the lanes), P from the forward's
 *    lse, dS = P (dP - D) through the score's slope, then dq += dS k;
 *  - the dtemperature partial per row (sum of dS / scale times q.k) for
 *    bwd_reduce.comp.
 *
 * Invariants (as bwd_dq.comp): no atomics, every sum in a fixed order
 * (deterministic); a row with lse = -inf gets zero gradients and D = 0;
 * dropped keys (dS = 0) are selected out of the dq sum, never multiplied.
 * Every loop with a barrier has work-group-uniform bounds; only whole
 * work-groups of grid padding return early. Not for QK-norm or gains
 * (vk_plan.c runs bwd_dq.comp there). Dispatched by vk_dispatch.c before
 * bwd_fa2_dkv.comp over B x Hkv x ceil(group x Sq / BR) work-groups
 * (sdpa__vk_bwd_invocations).
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

shared SH_T sh_k[K_TILE * KC];
shared SH_T sh_v[K_TILE * VC];

void main()
{
    uint lid = gl_LocalInvocationID.x;
    uint grp = lid / uint(LANES), lane = lid % uint(LANES);
    uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    int Sq = P.shape0.w, Hq = P.shape0.y, Hkv = P.shape0.z, group = P.shape1.w;
    uint slab_rows = uint(Sq * group);
    uint blocks = (slab_rows + uint(BR) - 1u) / uint(BR);
    if (wg >= uint(P.shape0.x * Hkv) * blocks) return; /* whole group: uniform */
    uint slab = wg / blocks;
    uint first = (wg % blocks) * uint(BR);
    uint last = min(first + uint(BR), slab_rows) - 1u;
    uint b = slab / uint(Hkv), hk = slab % uint(Hkv);
    int kvl = valid_keys(int(b));

    /* the block's union key range (uniform): ranges never move left as i grows */
    int ia = int(first % uint(Sq)), ib = int(last % uint(Sq));
    if (first / uint(Sq) != last / uint(Sq)) { ia = 0; ib = Sq - 1; }
    int ulo, uhi, unused;
    row_range(kvl, ia, ulo, unused);
    row_range(kvl, ib, unused, uhi);
    uhi = min(uhi, kvl);

    uint hh[ROWS], ii[ROWS];
    int lo[ROWS], hi[ROWS];
    bool live[ROWS];
    float scale[ROWS], lse[ROWS], dd[ROWS], dt[ROWS], unused2[ROWS];
    vec4 q[ROWS][CPL], dq[ROWS][CPL], dor[ROWS][CPLV];
    [[unroll]] for (int r = 0; r < ROWS; r++) {
        uint w = first + grp * uint(ROWS) + uint(r);
        live[r] = w < slab_rows;
        uint wc = min(w, slab_rows - 1u); /* past the end: a valid row, never written */
        hh[r] = hk * uint(group) + wc / uint(Sq);
        ii[r] = wc % uint(Sq);
        row_range(kvl, int(ii[r]), lo[r], hi[r]);
        lo[r] = max(lo[r], ulo);
        hi[r] = max(lo[r], min(hi[r], uhi));
        scale[r] = head_scale(int(hh[r]));
        lse[r] = lse_buf[tidx(T_LSE, b, hh[r], ii[r], 0u)];
        if (!live[r] || lse[r] == NEG_INF) hi[r] = lo[r];
        uint qb = tidx(T_Q, b, hh[r], ii[r], 0u), qs = P.tstride[T_Q].w;
        uint ob = tidx(T_DOUT, b, hh[r], ii[r], 0u), os = P.tstride[T_DOUT].w;
        uint pb = tidx(T_OUT, b, hh[r], ii[r], 0u), ps = P.tstride[T_OUT].w;
        vec4 qv[CPL], dov[CPLV], ov[CPLV];
        FA2_LOAD_ROW(qv, q_vec, load4_q, qb, qs, HEAD_DIM, CPL)
        FA2_LOAD_ROW(dov, dout_vec, load4_do, ob, os, HEAD_DIM_V, CPLV)
        FA2_LOAD_ROW(ov, out_vec, load4_o, pb, ps, HEAD_DIM_V, CPLV)
        /* D: this lane's share of dO . O, summed over the lanes below */
        dd[r] = 0.0;
        [[unroll]] for (int m = 0; m < CPL; m++) {
            q[r][m] = qv[m];
            dq[r][m] = vec4(0.0);
        }
        [[unroll]] for (int m = 0; m < CPLV; m++) {
            dor[r][m] = dov[m];
            dd[r] = fma4(dov[m], ov[m], dd[r]);
        }
        unused2[r] = 0.0;
        dt[r] = 0.0;
    }
    bwd_lanes_sum2(dd, unused2);
    [[unroll]] for (int r = 0; r < ROWS; r++)
        if (lse[r] == NEG_INF) dd[r] = 0.0;

    uint kbase = tidx(T_K, b, hk, 0u, 0u), vbase = tidx(T_V, b, hk, 0u, 0u);
    uint kr = P.tstride[T_K].z, vr = P.tstride[T_V].z;
    uint ks = P.tstride[T_K].w, vs = P.tstride[T_V].w;
    bool kvec = fa2_vec_ok(HEAD_DIM, kbase, kr, ks), vvec = fa2_vec_ok(HEAD_DIM_V, vbase, vr, vs);

    for (int j0 = ulo; j0 < uhi; j0 += K_TILE) {
        barrier(); /* everyone is done with the previous tile */
        FA2_STAGE(sh_k, k_vec, load4_k, kbase, kr, ks, KC, DC, j0, uhi - 1, kvec)
        FA2_STAGE(sh_v, v_vec, load4_v, vbase, vr, vs, VC, DVC, j0, uhi - 1, vvec)
        memoryBarrierShared();
        barrier();

        /* key by key: this lane's share of q.k and dO.v for every row,
         * summed over the lanes, dS (every lane of the group alike), then
         * dq += dS k from the same registers; a dropped key (dS = 0) adds
         * nothing, never its K */
        [[unroll]] for (int t = 0; t < K_TILE; t++) {
            vec4 kk[CPL], vv[CPLV];
            [[unroll]] for (int m = 0; m < CPL; m++) kk[m] = SH_UNPACK(sh_k[t * KC + m * LANES + int(lane)]);
            [[unroll]] for (int m = 0; m < CPLV; m++) vv[m] = SH_UNPACK(sh_v[t * VC + m * LANES + int(lane)]);
            float s[ROWS], dp[ROWS];
            [[unroll]] for (int r = 0; r < ROWS; r++) {
                s[r] = 0.0;
                dp[r] = 0.0;
                [[unroll]] for (int m = 0; m < CPL; m++) s[r] = fma4(q[r][m], kk[m], s[r]);
                [[unroll]] for (int m = 0; m < CPLV; m++) dp[r] = fma4(dor[r][m], vv[m], dp[r]);
            }
            bwd_lanes_sum2(s, dp);
            int j = j0 + t;
            [[unroll]] for (int r = 0; r < ROWS; r++) {
                float p = 0.0, dz = 0.0;
                if (j >= lo[r] && j < hi[r])
                    bwd_pair(s[r], dp[r], dd[r], lse[r], scale[r], b, hh[r], ii[r], uint(j), p, dz);
                if (dz != 0.0) {
                    dt[r] += dz * s[r];
                    float ds = dz * scale[r];
                    [[unroll]] for (int m = 0; m < CPL; m++) dq[r][m] = fma(vec4(ds), kk[m], dq[r][m]);
                }
            }
        }
    }

    [[unroll]] for (int r = 0; r < ROWS; r++) {
        if (!live[r]) continue;
        uint row = (b * uint(Hq) + hh[r]) * uint(Sq) + ii[r];
        uint qb = tidx(T_DQ, b, hh[r], ii[r], 0u), qs = P.tstride[T_DQ].w;
        [[unroll]] for (int m = 0; m < CPL; m++) {
            int d0 = 4 * (int(lane) + m * LANES);
            [[unroll]] for (int e = 0; e < 4; e++)
                if (d0 + e < HEAD_DIM) BUF_STORE(dq_buf, qb + uint(d0 + e) * qs, dq[r][m][e]);
        }
        if (lane == 0u) {
            ws[P.ws1.x + row] = dd[r];
            if (HAS_TEMP) ws[P.ws1.w + row] = dt[r];
        }
    }
}
