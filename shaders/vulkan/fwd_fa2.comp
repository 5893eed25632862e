/*
 * fwd_fa2.comp — the GPU-class forward (FlashAttention-2 structure): a
 * work-group owns a block of BR = (WG_SIZE / LANES) x ROWS query rows of one
 * KV slab (b, kv head) — consecutive rows in (h, i) order, so the query heads
 * of a GQA group share it (decode serves a whole group in one pass) — and one
 * key split of them (split-KV decode, merged by combine.comp).
 *
 *  - LANES consecutive invocations serve ROWS rows together: each keeps its
 *    share of the rows' q and output columns in registers, as vec4 chunks
 *    lane, lane + LANES, ... (columns padded to a multiple of 4 with zeros);
 *  - per step the work-group stages K_TILE keys' K and V rows in shared
 *    memory in their storage type (f32: vec4 per chunk; f16 and bf16: 4
 *    values in a uvec2, half the bytes), with one vector load per chunk when
 *    the rows are contiguous and 16-byte aligned (a scalar path otherwise);
 *    every row of the block reads them (one shared read per 4 x ROWS FMAs);
 *    a K/V type other than q's (features.glsl: converted or dequantized in
 *    registers while loading) and paged K/V take the scalar path and stage
 *    f32 (sh_kf, sh_vf);
 *  - a row's dot products are summed over its LANES lanes with subgroup
 *    shuffles or, in the variant built with -DFA2_SHARED_REDUCE (fwd_fa2sh,
 *    for devices without subgroup shuffle in compute), through shared memory;
 *  - online softmax, statistics and the split record are fwd_tile.glsl's,
 *    in f32, kept by every lane of the row alike;
 *  - the variant built with -DFA2_F16 (fwd_fa2h / fwd_fa2hsh: f16 storage on
 *    devices with shaderFloat16 that guarantee f16 denormals: vk_plan.c runs
 *    it only where the module requests DenormPreserve 16, vk_spirv_patch.c,
 *    since q's two f16 conversions could otherwise flush a subnormal q to 0)
 *    keeps q as stored in f16vec4 registers
 *    (half the registers) and applies the scale to the summed score;
 *    every product is formed in f32 (fa2_common.glsl's fma4), which is
 *    exact for two f16 values, so the scores are the f32 path's (no product
 *    is rounded to f16: that would overflow for |q_d k_d| > 65504).
 *
 * Invariants (as fwd.comp): f32 accumulation whatever the storage; a dropped
 * key has probability exactly 0 and its V never reaches the output; an
 * empty row writes zeros and lse -inf. Every loop with a barrier has
 * work-group-uniform bounds (block and slab from the work-group id, union
 * key range from the block's first and last row); no invocation returns
 * before the last barrier except whole work-groups of grid padding. Not for
 * QK-norm or gains (NORMED): vk_plan.c runs fwd.comp there.
 * Dispatched by vk_dispatch.c over B x Hkv x ceil(group x Sq / BR) x nsplit
 * work-groups (sdpa__vk_fwd_invocations).
 */
#version 450
#ifdef FA2_SHARED_REDUCE
/* the variant for devices without subgroup shuffle in compute (fwd_fa2sh) */
const int SG_REDUCE = 0;
#else
#extension GL_KHR_shader_subgroup_shuffle : require
const int SG_REDUCE = 1;
#endif
#ifdef FA2_F16
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
#endif
#include "common.glsl"
#include "online_softmax.glsl"
#include "fwd_tile.glsl"

layout(local_size_x_id = 0) in;

#include "fa2_common.glsl"

shared SH_T sh_k[(1 - KV_RAW_I) * K_TILE * KC + KV_RAW_I];
shared SH_T sh_v[(1 - KV_RAW_I) * K_TILE * VC + KV_RAW_I];
/* K_TILE keys as f32 when K/V are not q's type (KV_RAW); one vec4 otherwise */
shared vec4 sh_kf[KV_RAW_I * K_TILE * KC + 1 - KV_RAW_I];
shared vec4 sh_vf[KV_RAW_I * K_TILE * VC + 1 - KV_RAW_I];
#define STAGE_K(e, a) if (KV_RAW) sh_kf[e] = (a); else sh_k[e] = SH_PACK(a)
#define STAGE_V(e, a) if (KV_RAW) sh_vf[e] = (a); else sh_v[e] = SH_PACK(a)
#define STAGED_K(e) (KV_RAW ? sh_kf[e] : SH_UNPACK(sh_k[e]))
#define STAGED_V(e) (KV_RAW ? sh_vf[e] : SH_UNPACK(sh_v[e]))
/* the shared-memory reduction (SG_REDUCE = 0): one partial per invocation,
 * row and key; one float otherwise */
shared float sh_red[(1 - SG_REDUCE) * WG_SIZE * ROWS * K_TILE + SG_REDUCE];

/* The K (V) row of key j at base (kv_row), 4 elements from d0, in any K/V
 * type (features.glsl's K_AT / V_AT), zeros past the row: overloads of
 * fa2_common.glsl's (base, stride, d0) loads, which read q's type. */
vec4 load4_k(uint base, int d0)
{
    vec4 a = vec4(0.0);
    [[unroll]] for (int c = 0; c < 4; c++)
        if (d0 + c < HEAD_DIM) a[c] = K_AT(base, d0 + c);
    return a;
}
vec4 load4_v(uint base, int d0)
{
    vec4 a = vec4(0.0);
    [[unroll]] for (int c = 0; c < 4; c++)
        if (d0 + c < HEAD_DIM_V) a[c] = V_AT(base, d0 + c);
    return a;
}

void main()
{
    uint lid = gl_LocalInvocationID.x;
    uint grp = lid / uint(LANES), lane = lid % uint(LANES);
    uint wg = gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    uint nsplit = uint(P.misc.x);
    int Sq = P.shape0.w, Hq = P.shape0.y, Hkv = P.shape0.z, group = P.shape1.w;
    uint slab_rows = uint(Sq * group);
    uint blocks = (slab_rows + uint(BR) - 1u) / uint(BR);
    if (wg >= uint(P.shape0.x * Hkv) * blocks * nsplit) return; /* whole group: uniform */
    uint blk = wg / nsplit;
    int split = int(wg % nsplit);
    uint slab = blk / blocks;
    uint first = (blk % blocks) * uint(BR);   /* the block's first row in the slab */
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
    if (SPLIT) {
        int s0 = split * P.misc.y;
        ulo = max(ulo, s0);
        uhi = min(uhi, s0 + P.misc.y);
    }

    /* this lane group's rows: q chunks in registers, state per row */
    uint hh[ROWS], ii[ROWS];
    int lo[ROWS], hi[ROWS];
    bool live[ROWS];
    QVEC_T q[ROWS][CPL];
    vec4 o[ROWS][CPLV];
    RowState st[ROWS];
    float shift[ROWS], sum1[ROWS], sum2[ROWS];
    float sscale[ROWS]; /* the summed score's scale: 1 where q carries it (f32 registers) */
    [[unroll]] for (int r = 0; r < ROWS; r++) {
        uint w = first + grp * uint(ROWS) + uint(r);
        live[r] = w < slab_rows;
        uint wc = min(w, slab_rows - 1u); /* past the end: a valid row, never written */
        hh[r] = hk * uint(group) + wc / uint(Sq);
        ii[r] = wc % uint(Sq);
        row_range(kvl, int(ii[r]), lo[r], hi[r]);
        lo[r] = max(lo[r], ulo);
        hi[r] = max(lo[r], min(hi[r], uhi));
        if (!live[r]) hi[r] = lo[r];
        float scale = head_scale(int(hh[r]));
        sscale[r] = Q_AS_STORED ? scale : 1.0;
        float qmul = Q_AS_STORED ? 1.0 : scale;
        uint qb = tidx(T_Q, b, hh[r], ii[r], 0u), qs = P.tstride[T_Q].w;
        if (HEAD_DIM % 4 == 0 && qs == 1u && qb % 4u == 0u) {
            [[unroll]] for (int m = 0; m < CPL; m++) {
                int c = int(lane) + m * LANES;
                q[r][m] = QVEC_T(c < DC ? SH_UNPACK(q_vec[qb / 4u + uint(c)]) * qmul : vec4(0.0));
            }
        } else {
            [[dont_unroll]] for (int m = 0; m < CPL; m++)
                q[r][m] = QVEC_T(load4_q(qb, qs, 4 * (int(lane) + m * LANES)) * qmul);
        }
        [[unroll]] for (int m = 0; m < CPLV; m++) o[r][m] = vec4(0.0);
        st[r] = rs_start(sink_logit(hh[r], split == 0));
        shift[r] = 0.0;
        sum1[r] = 0.0;
        sum2[r] = 0.0;
    }

    /* vector loads when every K / V row starts on a 4-element boundary and
     * its columns are contiguous (uniform), in q's type and not paged */
    uint kbase = tidx(T_K, b, hk, 0u, 0u), vbase = tidx(T_V, b, hk, 0u, 0u);
    uint kr = P.tstride[T_K].z, vr = P.tstride[T_V].z;
    uint ks = P.tstride[T_K].w, vs = P.tstride[T_V].w;
    bool kvec = !KV_RAW && !PAGED && HEAD_DIM % 4 == 0 && ks == 1u && kbase % 4u == 0u && kr % 4u == 0u;
    bool vvec = !KV_RAW && !PAGED && HEAD_DIM_V % 4 == 0 && vs == 1u && vbase % 4u == 0u && vr % 4u == 0u;

    for (int j0 = ulo; j0 < uhi; j0 += K_TILE) {
        barrier(); /* everyone is done with the previous tile */
        /* keys past uhi repeat key uhi-1 (a valid load); no row keeps them */
        /* one vector load per chunk (unrolled), or the scalar path in a loop */
        if (kvec) {
            [[unroll]] for (int it = 0; it < (K_TILE * KC + int(WG_SIZE) - 1) / int(WG_SIZE); it++) {
                uint e = lid + uint(it) * WG_SIZE;
                if (e < uint(K_TILE * KC)) {
                    int t = int(e) / KC, c = int(e) % KC;
                    uint j = uint(min(j0 + t, uhi - 1));
                    sh_k[e] = c < DC ? k_vec[(kbase + j * kr) / 4u + uint(c)] : SH_ZERO;
                }
            }
        } else {
            [[dont_unroll]] for (uint e = lid; e < uint(K_TILE * KC); e += WG_SIZE) {
                int t = int(e) / KC, c = int(e) % KC;
                uint j = uint(min(j0 + t, uhi - 1));
                STAGE_K(e, load4_k(kv_row(T_K, b, hk, j), 4 * c));
            }
        }
        if (vvec) {
            [[unroll]] for (int it = 0; it < (K_TILE * VC + int(WG_SIZE) - 1) / int(WG_SIZE); it++) {
                uint e = lid + uint(it) * WG_SIZE;
                if (e < uint(K_TILE * VC)) {
                    int t = int(e) / VC, c = int(e) % VC;
                    uint j = uint(min(j0 + t, uhi - 1));
                    sh_v[e] = c < DVC ? v_vec[(vbase + j * vr) / 4u + uint(c)] : SH_ZERO;
                }
            }
        } else {
            [[dont_unroll]] for (uint e = lid; e < uint(K_TILE * VC); e += WG_SIZE) {
                int t = int(e) / VC, c = int(e) % VC;
                uint j = uint(min(j0 + t, uhi - 1));
                STAGE_V(e, load4_v(kv_row(T_V, b, hk, j), 4 * c));
            }
        }
        memoryBarrierShared();
        barrier();

        /* scores: this lane's share of every (row, key) dot product */
        float s[ROWS][K_TILE];
        [[unroll]] for (int t = 0; t < K_TILE; t++) {
            [[unroll]] for (int r = 0; r < ROWS; r++) s[r][t] = 0.0;
            [[unroll]] for (int m = 0; m < CPL; m++) {
                vec4 kk = STAGED_K(t * KC + m * LANES + int(lane));
                [[unroll]] for (int r = 0; r < ROWS; r++) s[r][t] = fma4(vec4(q[r][m]), kk, s[r][t]);
            }
        }
        if (SG_REDUCE != 0) {
            [[unroll]] for (int r = 0; r < ROWS; r++)
                [[unroll]] for (int t = 0; t < K_TILE; t++) s[r][t] = lanes_sum(s[r][t]) * sscale[r];
        } else {
            [[unroll]] for (int r = 0; r < ROWS; r++)
                [[unroll]] for (int t = 0; t < K_TILE; t++)
                    sh_red[(lid * uint(ROWS) + uint(r)) * uint(K_TILE) + uint(t)] = s[r][t];
            memoryBarrierShared();
            barrier();
            [[unroll]] for (int r = 0; r < ROWS; r++)
                [[unroll]] for (int t = 0; t < K_TILE; t++) {
                    float a = 0.0;
                    [[unroll]] for (int l = 0; l < LANES; l++)
                        a += sh_red[((grp * uint(LANES) + uint(l)) * uint(ROWS) + uint(r)) *
                                        uint(K_TILE) + uint(t)];
                    s[r][t] = a * sscale[r];
                }
            barrier(); /* sh_red is rewritten by the next tile */
        }

        /* online softmax per row (every lane of the group alike) */
        float c[ROWS], pr[ROWS][K_TILE];
        [[unroll]] for (int r = 0; r < ROWS; r++) {
            float bm = NEG_INF;
            [[unroll]] for (int t = 0; t < K_TILE; t++) {
                int j = j0 + t;
                s[r][t] = j >= lo[r] && j < hi[r] ? finish_score(s[r][t], b, hh[r], ii[r], uint(j))
                                                  : NEG_INF;
                bm = nan_max(bm, s[r][t]);
            }
            c[r] = 1.0;
            [[unroll]] for (int t = 0; t < K_TILE; t++) pr[r][t] = 0.0;
            if (bm != NEG_INF)
                c[r] = tile_step(st[r], s[r], bm, j0, shift[r], sum1[r], sum2[r], pr[r]);
        }

        /* P.V into this lane's output chunks; a dropped key (p = 0) adds 0
         * and never its V (which may be Inf or NaN) */
        [[unroll]] for (int r = 0; r < ROWS; r++)
            [[unroll]] for (int m = 0; m < CPLV; m++) {
                vec4 a = o[r][m];
                o[r][m] = vec4(isinf(a.x) ? a.x : a.x * c[r], isinf(a.y) ? a.y : a.y * c[r],
                               isinf(a.z) ? a.z : a.z * c[r], isinf(a.w) ? a.w : a.w * c[r]);
            }
        [[unroll]] for (int t = 0; t < K_TILE; t++)
            [[unroll]] for (int m = 0; m < CPLV; m++) {
                vec4 vv = STAGED_V(t * VC + m * LANES + int(lane));
                [[unroll]] for (int r = 0; r < ROWS; r++) {
                    float p = pr[r][t];
                    vec4 v = p != 0.0 ? vv : vec4(0.0);
                    o[r][m] = fma(vec4(p), v, o[r][m]);
                }
            }
    }

    [[unroll]] for (int r = 0; r < ROWS; r++) {
        if (!live[r]) continue;
        finish_moments(st[r], shift[r], sum1[r], sum2[r]);
        uint row = (b * uint(Hq) + hh[r]) * uint(Sq) + ii[r];
        if (!SPLIT) {
            uint ob = tidx(T_OUT, b, hh[r], ii[r], 0u), os = P.tstride[T_OUT].w;
            [[unroll]] for (int m = 0; m < CPLV; m++) {
                int d0 = 4 * (int(lane) + m * LANES);
                [[unroll]] for (int e = 0; e < 4; e++)
                    if (d0 + e < HEAD_DIM_V)
                        BUF_STORE(out_buf, ob + uint(d0 + e) * os, rs_out(st[r], o[r][m][e]));
            }
            if (lane == 0u) rs_store_row(st[r], b, hh[r], ii[r], row);
        } else {
            uint base = P.ws0.w + (row * nsplit + uint(split)) * uint(PT_SIZE + HEAD_DIM_V);
            if (lane == 0u) store_partial_state(row * nsplit + uint(split), st[r]);
            [[unroll]] for (int m = 0; m < CPLV; m++) {
                int d0 = 4 * (int(lane) + m * LANES);
                [[unroll]] for (int e = 0; e < 4; e++)
                    if (d0 + e < HEAD_DIM_V) ws[base + uint(PT_SIZE + d0 + e)] = o[r][m][e];
            }
        }
    }
}
