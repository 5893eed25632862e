/*
 * fwd.comp — fused attention forward: one invocation owns one query row (or
 * one key split of it in split-KV decode), keeps q, the output accumulator
 * and the online-softmax state in registers and walks only the keys its band
 * and kv_len keep (band-aware skipping), K_TILE keys per step: score the
 * tile (loop over d, the K_TILE keys unrolled inside), update the running
 * maximum once, then rescale-and-accumulate P.V in one loop over Dv.
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

layout(local_size_x_id = 0) in;

void main()
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
    row_range(kv_len_of(int(b)), int(i), lo, hi);
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

    RowState r = rs_empty();
    float shift = 0.0, sum1 = 0.0, sum2 = 0.0;
    uint kvrow0 = (b * uint(P.shape0.z) + hk) * uint(P.shape1.x);
    uint ks = NORMED ? 1u : P.tstride[T_K].w, vs = P.tstride[T_V].w;

    for (int j0 = lo; j0 < hi; j0 += K_TILE) {
        /* keys past hi repeat key hi-1 (a valid load) and are dropped below */
        uint kb[K_TILE], vb[K_TILE];
        float s[K_TILE];
        [[unroll]] for (int t = 0; t < K_TILE; t++) {
            uint j = uint(min(j0 + t, hi - 1));
            kb[t] = NORMED ? P.ws0.y + (kvrow0 + j) * uint(HEAD_DIM)
                           : tidx(T_K, b, hk, j, 0u);
            vb[t] = tidx(T_V, b, hk, j, 0u);
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
                    s[t] += qd * BUF_LOAD(k_buf, kb[t] + uint(d) * ks);
            }
        }
        float bm = NEG_INF;
        [[unroll]] for (int t = 0; t < K_TILE; t++) {
            s[t] = j0 + t < hi ? finish_score(s[t], b, h, i, uint(j0 + t)) : NEG_INF;
            /* GLSL's max() may drop a NaN: keep it, so a NaN score makes its
             * row NaN (IEEE propagation) instead of looking empty */
            bm = isnan(s[t]) || isnan(bm) ? s[t] + bm : max(bm, s[t]);
        }
        if (bm == NEG_INF) continue;
        float c = 1.0;
        if (bm > r.m || isnan(bm)) c = rs_rescale(r, bm);
        float pr[K_TILE];
        [[unroll]] for (int t = 0; t < K_TILE; t++) {
            float st = s[t];
            pr[t] = 0.0;
            if (st == NEG_INF) continue;
            float e = exp(st - r.m);
            pr[t] = e;
            r.l += e;
            r.a += e * (st - r.m);
            if (HAS_STATS) {
                r.l2 += e * e;
                r.l3 += e * e * e;
                if (r.n == 0.0) shift = st;
                float x = st - shift;
                r.n += 1.0;
                sum1 += x;
                sum2 += x * x;
                r.smin = min(r.smin, st);
                r.smax = max(r.smax, st);
                if (j0 + t == 0) r.s0 = st;
            }
        }
        for (int d = 0; d < HEAD_DIM_V; d++) {
            /* c = e^(m_old - m_new) > 0 mathematically; when it underflows
             * to 0 an infinite accumulator must stay infinite (IEEE), not
             * become inf * 0 = NaN */
            float acc = isinf(o[d]) ? o[d] : o[d] * c;
            /* dropped keys (p = 0, including the padding that repeats key
             * hi-1) must not leak a NaN/Inf of V: select, don't multiply */
            [[unroll]] for (int t = 0; t < K_TILE; t++) {
                float vv = BUF_LOAD(v_buf, vb[t] + uint(d) * vs);
                acc += pr[t] != 0.0 ? pr[t] * vv : 0.0;
            }
            o[d] = acc;
        }
    }
    if (r.n > 0.0) {
        r.mean = shift + sum1 / r.n;
        r.m2 = max(0.0, sum2 - sum1 * sum1 / r.n);
    }

    if (!SPLIT) {
        rs_finalize(r, o, b, h, i, row);
        return;
    }
    uint base = P.ws0.w + gid * uint(PT_SIZE + HEAD_DIM_V);
    ws[base + PT_M] = r.m;
    ws[base + PT_L] = r.l;
    ws[base + PT_A] = r.a;
    ws[base + PT_L2] = r.l2;
    ws[base + PT_L3] = r.l3;
    ws[base + PT_N] = r.n;
    ws[base + PT_MEAN] = r.mean;
    ws[base + PT_M2] = r.m2;
    ws[base + PT_MIN] = r.smin;
    ws[base + PT_MAX] = r.smax;
    ws[base + PT_S0] = r.s0;
    for (int d = 0; d < HEAD_DIM_V; d++) ws[base + uint(PT_SIZE + d)] = o[d];
}
