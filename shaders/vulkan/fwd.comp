/*
 * fwd.comp — fused attention forward: one invocation owns one query row (or
 * one key split of it in split-KV decode), keeps q, the output accumulator
 * and the online-softmax state in registers and walks only the keys its band
 * and valid-key count (valid_keys) keep (band-aware skipping), K_TILE keys
 * per step: score the tile (loop over d, the K_TILE keys unrolled inside),
 * update the running maximum once, then rescale-and-accumulate P.V in one
 * loop over Dv.
 *
 * Two variants, chosen by the specialization constant STAGE_KV:
 *  - 0 (default), fwd_direct: every invocation reads its keys' K and V rows
 *    from the storage buffers itself.
 *  - 1, fwd_staged (no key split; the host guarantees nsplit == 1): the
 *    work-group loads each tile of K_TILE keys (K and V rows, as f32) into
 *    shared memory once, then every invocation scores its own row against the
 *    staged tile. The group walks, per KV slab (b, kv head) its rows touch,
 *    the union of its rows' key ranges; each invocation drops (-inf) keys
 *    outside its own range. Barriers stay in uniform control flow: the slab
 *    list and the union range are computed from the work-group's first and
 *    last row only, and invocations past the last row (gid >= rows) take
 *    part in every load and barrier.
 *
 * Invariants: accumulation is f32 whatever the storage; a dropped key has
 * probability exactly 0 (-inf score, never a large finite value); an empty
 * row writes zeros and lse -inf. Without SPLIT it writes out/lse/row-stats
 * directly; with SPLIT it writes a partial record that combine.comp merges.
 * Dispatched by vk_dispatch.c over rows * nsplit invocations.
 */
#version 450
#include "common.glsl"
#include "online_softmax.glsl"
#include "fwd_tile.glsl"

layout(local_size_x_id = 0) in;

/* 1 = stage K/V tiles in shared memory (sdpa_tile_config.stage_kv; host:
 * vk_pipeline.c). Only this shader declares it. */
layout(constant_id = 7) const int STAGE_KV = 0;

/* The staged tile: K_TILE rows of K then of V, f32. Without staging the
 * arrays shrink to one float each (the size is K_TILE * D when STAGE_KV is
 * 1, and 1 when it is 0), so unstaged pipelines claim no shared memory. The
 * host checks K_TILE * (D + Dv) floats against maxComputeSharedMemorySize. */
shared float sh_k[STAGE_KV * K_TILE * HEAD_DIM + 1 - STAGE_KV];
shared float sh_v[STAGE_KV * K_TILE * HEAD_DIM_V + 1 - STAGE_KV];

void fwd_direct()
{
    uint gid = flat_id();
    uint nsplit = uint(P.misc.x);
    uint rows = uint(P.misc.z);
    if (gid >= rows * nsplit) return;
    uint row = gid / nsplit;
    int split = int(gid % nsplit);
    int Sq = P.shape0.w, Hq = P.shape0.y;
    uint i = row % uint(Sq);
    uint h = (row / uint(Sq)) % uint(Hq);
    uint b = row / uint(Sq * Hq);
    uint hk = h / uint(P.shape1.w);

    int lo, hi;
    row_range(valid_keys(int(b)), int(i), lo, hi);
    if (SPLIT) {
        int s0 = split * P.misc.y;
        lo = max(lo, s0);
        hi = max(lo, min(hi, s0 + P.misc.y));
    }

    float scale = head_scale(int(h));
    float qr[HEAD_DIM];
    if (NORMED) {
        uint base = P.ws0.x + row * uint(HEAD_DIM);
        for (int d = 0; d < HEAD_DIM; d++) qr[d] = ws[base + uint(d)] * scale;
    } else {
        for (int d = 0; d < HEAD_DIM; d++)
            qr[d] = BUF_LOAD(q_buf, tidx(T_Q, b, h, i, uint(d))) * scale;
    }
    float o[HEAD_DIM_V];
    for (int d = 0; d < HEAD_DIM_V; d++) o[d] = 0.0;

    RowState r = rs_start(sink_logit(h, split == 0));
    float shift = 0.0, sum1 = 0.0, sum2 = 0.0;
    uint kvrow0 = (b * uint(P.shape0.z) + hk) * uint(P.shape1.x);

    for (int j0 = lo; j0 < hi; j0 += K_TILE) {
        /* keys past hi repeat key hi-1 (a valid load) and are dropped below */
        uint kb[K_TILE], vb[K_TILE];
        float s[K_TILE];
        [[unroll]] for (int t = 0; t < K_TILE; t++) {
            uint j = uint(min(j0 + t, hi - 1));
            kb[t] = NORMED ? P.ws0.y + (kvrow0 + j) * uint(HEAD_DIM)
                           : kv_row(T_K, b, hk, j);
            vb[t] = kv_row(T_V, b, hk, j);
            s[t] = 0.0;
        }
        if (NORMED) {
            for (int d = 0; d < HEAD_DIM; d++) {
                float qd = qr[d];
                [[unroll]] for (int t = 0; t < K_TILE; t++) s[t] += qd * ws[kb[t] + uint(d)];
            }
        } else {
            for (int d = 0; d < HEAD_DIM; d++) {
                float qd = qr[d];
                [[unroll]] for (int t = 0; t < K_TILE; t++)
                    s[t] += qd * K_AT(kb[t], d);
            }
        }
        float bm = NEG_INF;
        [[unroll]] for (int t = 0; t < K_TILE; t++) {
            s[t] = j0 + t < hi ? finish_score(s[t], b, h, i, uint(j0 + t)) : NEG_INF;
            bm = nan_max(bm, s[t]);
        }
        if (bm == NEG_INF) continue;
        float pr[K_TILE];
        float c = tile_step(r, s, bm, j0, shift, sum1, sum2, pr);
        for (int d = 0; d < HEAD_DIM_V; d++) {
            float vv[K_TILE];
            [[unroll]] for (int t = 0; t < K_TILE; t++) vv[t] = V_AT(vb[t], d);
            o[d] = pv_column(o[d], c, pr, vv);
        }
    }
    finish_moments(r, shift, sum1, sum2);

    if (!SPLIT) {
        rs_finalize(r, o, b, h, i, row);
        return;
    }
    uint ob = store_partial_state(gid, r);
    for (int d = 0; d < HEAD_DIM_V; d++) ws[ob + uint(d)] = o[d];
}

/* Staged forward (STAGE_KV = 1, nsplit = 1). Rows are ordered (b, h, i), so
 * the rows of one KV slab (b, hk) — its `group` query heads — are
 * contiguous and a work-group's rows touch the slabs g0 / R .. (gend-1) / R
 * (R = group * Sq rows per slab). Within a slab a row's range [lo, hi) never
 * moves left as i grows (sdpa__row_range), so the rows' union lies in
 * [lo(i_first), min(hi(i_last), valid keys)), with i_first / i_last the least and
 * greatest i the group holds in that slab (0 and Sq-1 when it holds rows of
 * two heads). Every value that bounds a loop with a barrier comes from g0,
 * gend and the parameter block: uniform across the work-group. */
void fwd_staged()
{
    uint lid = gl_LocalInvocationID.x;
    uint gid = flat_id();
    uint rows = uint(P.misc.z);
    uint g0 = gid - lid;
    if (g0 >= rows) return; /* a whole group of 2-D grid padding: uniform */
    uint gend = min(g0 + WG_SIZE, rows);
    bool live = gid < rows;
    int Sq = P.shape0.w, Hq = P.shape0.y, Hkv = P.shape0.z, Skv = P.shape1.x;
    uint usq = uint(Sq);
    uint slab_rows = usq * uint(P.shape1.w);

    /* Past the end: compute (and never write) the last row's values, so every
     * load stays in bounds. */
    uint row = min(gid, rows - 1u);
    uint i = row % usq;
    uint h = (row / usq) % uint(Hq);
    uint b = row / (usq * uint(Hq));
    uint my_slab = row / slab_rows;
    int lo, hi;
    row_range(valid_keys(int(b)), int(i), lo, hi);

    float scale = head_scale(int(h));
    float qr[HEAD_DIM];
    if (NORMED) {
        uint base = P.ws0.x + row * uint(HEAD_DIM);
        for (int d = 0; d < HEAD_DIM; d++) qr[d] = ws[base + uint(d)] * scale;
    } else {
        for (int d = 0; d < HEAD_DIM; d++)
            qr[d] = BUF_LOAD(q_buf, tidx(T_Q, b, h, i, uint(d))) * scale;
    }
    float o[HEAD_DIM_V];
    for (int d = 0; d < HEAD_DIM_V; d++) o[d] = 0.0;

    RowState r = rs_start(sink_logit(h, true));
    float shift = 0.0, sum1 = 0.0, sum2 = 0.0;

    uint sl_last = (gend - 1u) / slab_rows;
    for (uint sl = g0 / slab_rows; sl <= sl_last; sl++) {
        uint r0 = max(g0, sl * slab_rows), r1 = min(gend, (sl + 1u) * slab_rows);
        uint sb = sl / uint(Hkv), shk = sl % uint(Hkv);
        int kvl = valid_keys(int(sb));
        int ia = int(r0 % usq), ib = int((r1 - 1u) % usq);
        if (r0 / usq != (r1 - 1u) / usq) {
            ia = 0;
            ib = Sq - 1;
        }
        int ulo, uhi, unused;
        row_range(kvl, ia, ulo, unused);
        row_range(kvl, ib, unused, uhi);
        uhi = min(uhi, kvl);
        bool mine = live && my_slab == sl && lo < hi;
        uint kbase = P.ws0.y + sl * uint(Skv) * uint(HEAD_DIM);

        for (int j0 = ulo; j0 < uhi; j0 += K_TILE) {
            /* everyone is done with the previous tile */
            memoryBarrierShared();
            barrier();
            /* keys past uhi repeat key uhi-1 (a valid load); no row keeps them */
            for (uint e = lid; e < uint(K_TILE * HEAD_DIM); e += WG_SIZE) {
                uint t = e / uint(HEAD_DIM), d = e % uint(HEAD_DIM);
                uint j = uint(min(j0 + int(t), uhi - 1));
                sh_k[e] = NORMED ? ws[kbase + j * uint(HEAD_DIM) + d]
                                 : K_AT(kv_row(T_K, sb, shk, j), d);
            }
            for (uint e = lid; e < uint(K_TILE * HEAD_DIM_V); e += WG_SIZE) {
                uint t = e / uint(HEAD_DIM_V), d = e % uint(HEAD_DIM_V);
                uint j = uint(min(j0 + int(t), uhi - 1));
                sh_v[e] = V_AT(kv_row(T_V, sb, shk, j), d);
            }
            memoryBarrierShared();
            barrier();
            /* divergent from here to the end of the iteration: no barrier */
            if (mine && j0 < hi && j0 + K_TILE > lo) {
                float s[K_TILE];
                [[unroll]] for (int t = 0; t < K_TILE; t++) s[t] = 0.0;
                for (int d = 0; d < HEAD_DIM; d++) {
                    float qd = qr[d];
                    [[unroll]] for (int t = 0; t < K_TILE; t++)
                        s[t] += qd * sh_k[t * HEAD_DIM + d];
                }
                float bm = NEG_INF;
                [[unroll]] for (int t = 0; t < K_TILE; t++) {
                    int j = j0 + t;
                    /* only this row's own keys: the tile serves the group's union */
                    s[t] = j >= lo && j < hi ? finish_score(s[t], b, h, i, uint(j)) : NEG_INF;
                    bm = nan_max(bm, s[t]);
                }
                if (bm != NEG_INF) {
                    float pr[K_TILE];
                    float c = tile_step(r, s, bm, j0, shift, sum1, sum2, pr);
                    for (int d = 0; d < HEAD_DIM_V; d++) {
                        float vv[K_TILE];
                        [[unroll]] for (int t = 0; t < K_TILE; t++) vv[t] = sh_v[t * HEAD_DIM_V + d];
                        o[d] = pv_column(o[d], c, pr, vv);
                    }
                }
            }
        }
    }
    if (!live) return;
    finish_moments(r, shift, sum1, sum2);
    rs_finalize(r, o, b, h, i, row);
}

void main()
{
    if (STAGE_KV != 0) fwd_staged();
    else fwd_direct();
}
