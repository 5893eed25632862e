/*
 * fwd_rows.comp — fused attention forward in which one invocation owns ROWS
 * query rows of one KV slab (b, kv head): consecutive rows in (h, i) order,
 * so GQA heads of a group share it too. Every K and V element the
 * invocation loads serves all its rows (ROWS FMAs per load instead of one).
 * The invocation walks the union of its rows' key ranges, K_TILE keys per
 * step, and each row drops (-inf) the keys outside its own [lo, hi).
 * Selected by sdpa_tile_config.q_tile > 1 (vk_plan.c); fwd.comp stays the
 * default.
 *
 * Why: on llvmpipe (lavapipe, Mesa 22) every storage-buffer load is a
 * per-lane bounds-checked load, even at a uniform address, and fwd.comp's
 * one load per FMA made loads ~85 % of its time (measured by replacing them
 * with arithmetic). On GPUs the trade (fewer loads, more registers, fewer
 * invocations) is what the tuner measures.
 *
 * Semantics are fwd.comp's (shared code in fwd_tile.glsl): f32 accumulation,
 * dropped keys have probability exactly 0, empty rows write zeros and lse
 * -inf, SPLIT writes one partial record per (row, split) for combine.comp.
 * Dispatched by vk_dispatch.c over B * Hkv * ceil(group * Sq / ROWS) * nsplit
 * invocations; rows past a slab's end are computed as empty and never
 * written.
 */
#version 450
#include "common.glsl"
#include "online_softmax.glsl"
#include "fwd_tile.glsl"

layout(local_size_x_id = 0) in;

/* Query rows per invocation (host: vk_pipeline.c, sdpa_tile_config.q_tile). */
layout(constant_id = 8) const int ROWS = 4;

void main()
{
    uint task = flat_id();
    uint nsplit = uint(P.misc.x);
    int Sq = P.shape0.w, Hq = P.shape0.y, Hkv = P.shape0.z, group = P.shape1.w;
    uint slab_rows = uint(Sq * group);
    uint blocks = (slab_rows + uint(ROWS) - 1u) / uint(ROWS);
    uint slabs = uint(P.shape0.x * Hkv);
    if (task >= slabs * blocks * nsplit) return;
    uint blk = task / nsplit;
    int split = int(task % nsplit);
    uint slab = blk / blocks;
    uint first = (blk % blocks) * uint(ROWS); /* first row within the slab */
    uint b = slab / uint(Hkv), hk = slab % uint(Hkv);
    int kvl = valid_keys(int(b));

    uint hh[ROWS], ii[ROWS];
    int lo[ROWS], hi[ROWS];
    bool live[ROWS];
    float qr[ROWS * HEAD_DIM];
    int ulo = 0x7fffffff, uhi = 0;
    [[unroll]] for (int r = 0; r < ROWS; r++) {
        uint w = first + uint(r);
        live[r] = w < slab_rows;
        uint wc = min(w, slab_rows - 1u); /* past the end: a valid row, never written */
        hh[r] = hk * uint(group) + wc / uint(Sq);
        ii[r] = wc % uint(Sq);
        row_range(kvl, int(ii[r]), lo[r], hi[r]);
        if (SPLIT) {
            int s0 = split * P.misc.y;
            lo[r] = max(lo[r], s0);
            hi[r] = max(lo[r], min(hi[r], s0 + P.misc.y));
        }
        if (!live[r]) hi[r] = lo[r];
        if (lo[r] < hi[r]) {
            ulo = min(ulo, lo[r]);
            uhi = max(uhi, hi[r]);
        }
        float scale = head_scale(int(hh[r]));
        uint row = (b * uint(Hq) + hh[r]) * uint(Sq) + ii[r];
        for (int d = 0; d < HEAD_DIM; d++)
            qr[r * HEAD_DIM + d] = scale * (NORMED ? ws[P.ws0.x + row * uint(HEAD_DIM) + uint(d)]
                                                   : BUF_LOAD(q_buf, tidx(T_Q, b, hh[r], ii[r], uint(d))));
    }
    float o[ROWS * HEAD_DIM_V];
    for (int e = 0; e < ROWS * HEAD_DIM_V; e++) o[e] = 0.0;

    RowState st[ROWS];
    float shift[ROWS], sum1[ROWS], sum2[ROWS];
    [[unroll]] for (int r = 0; r < ROWS; r++) {
        st[r] = rs_start(sink_logit(hh[r], split == 0));
        shift[r] = 0.0;
        sum1[r] = 0.0;
        sum2[r] = 0.0;
    }
    uint kvrow0 = slab * uint(P.shape1.x);

    for (int j0 = ulo; j0 < uhi; j0 += K_TILE) {
        /* keys past uhi repeat key uhi-1 (a valid load); no row keeps them */
        uint kb[K_TILE], vb[K_TILE];
        float s[ROWS][K_TILE];
        [[unroll]] for (int t = 0; t < K_TILE; t++) {
            uint j = uint(min(j0 + t, uhi - 1));
            kb[t] = NORMED ? P.ws0.y + (kvrow0 + j) * uint(HEAD_DIM) : kv_row(T_K, b, hk, j);
            vb[t] = kv_row(T_V, b, hk, j);
            [[unroll]] for (int r = 0; r < ROWS; r++) s[r][t] = 0.0;
        }
        for (int d = 0; d < HEAD_DIM; d++) {
            float kd[K_TILE];
            [[unroll]] for (int t = 0; t < K_TILE; t++)
                kd[t] = NORMED ? ws[kb[t] + uint(d)] : K_AT(kb[t], d);
            [[unroll]] for (int r = 0; r < ROWS; r++) {
                float qd = qr[r * HEAD_DIM + d];
                [[unroll]] for (int t = 0; t < K_TILE; t++) s[r][t] += qd * kd[t];
            }
        }
        float c[ROWS], pr[ROWS][K_TILE];
        bool any = false;
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
            if (bm != NEG_INF) {
                any = true;
                c[r] = tile_step(st[r], s[r], bm, j0, shift[r], sum1[r], sum2[r], pr[r]);
            }
        }
        if (!any) continue;
        for (int d = 0; d < HEAD_DIM_V; d++) {
            float vv[K_TILE];
            [[unroll]] for (int t = 0; t < K_TILE; t++) vv[t] = V_AT(vb[t], d);
            /* a row without keys in this tile has c = 1 and p = 0: unchanged */
            [[unroll]] for (int r = 0; r < ROWS; r++)
                o[r * HEAD_DIM_V + d] = pv_column(o[r * HEAD_DIM_V + d], c[r], pr[r], vv);
        }
    }

    [[unroll]] for (int r = 0; r < ROWS; r++) {
        if (!live[r]) continue;
        finish_moments(st[r], shift[r], sum1[r], sum2[r]);
        uint row = (b * uint(Hq) + hh[r]) * uint(Sq) + ii[r];
        if (!SPLIT) {
            for (int d = 0; d < HEAD_DIM_V; d++)
                BUF_STORE(out_buf, tidx(T_OUT, b, hh[r], ii[r], uint(d)),
                          rs_out(st[r], o[r * HEAD_DIM_V + d]));
            rs_store_row(st[r], b, hh[r], ii[r], row);
        } else {
            uint ob = store_partial_state(row * nsplit + uint(split), st[r]);
            for (int d = 0; d < HEAD_DIM_V; d++) ws[ob + uint(d)] = o[r * HEAD_DIM_V + d];
        }
    }
}
