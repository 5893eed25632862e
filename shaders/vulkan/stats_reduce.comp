/*
 * stats_reduce.comp — reduces the per-row statistics records (written by
 * rs_finalize in fwd.comp / combine.comp) to the stats output, one invocation
 * per (batch, query head), rows in order (deterministic). Definitions are
 * those of ../shared/conformance/README.md: means over non-empty rows, logit
 * moments over every kept (row, key) merged by Chan's rule, population std.
 * Dispatched by vk_dispatch.c last in a forward with stats.
 */
#version 450
#include "common.glsl"

layout(local_size_x_id = 0) in;

void main()
{
    uint gid = flat_id();
    int Sq = P.shape0.w, Hq = P.shape0.y;
    if (gid >= uint(P.shape0.x * Hq)) return;
    uint h = gid % uint(Hq), b = gid / uint(Hq);
    float n = 0.0, mean = 0.0, m2 = 0.0;
    float smin = 1.0 / 0.0, smax = NEG_INF;
    float ent = 0.0, entmin = 1.0 / 0.0, pmax = 0.0, sat = 0.0, jf = 0.0, sink = 0.0;
    float rowsn = 0.0, empty = 0.0;
    float thr = P.fpar.w;
    for (int i = 0; i < Sq; i++) {
        uint base = P.ws0.z + (gid * uint(Sq) + uint(i)) * uint(RS_SIZE);
        if (ws[base + RS_VALID] == 0.0) { empty += 1.0; continue; }
        rowsn += 1.0;
        float yn = ws[base + RS_N], ym = ws[base + RS_MEAN];
        float nn = n + yn;
        float d = ym - mean;
        mean += d * (yn / nn);
        m2 += ws[base + RS_M2] + d * d * (n * yn / nn);
        n = nn;
        smin = min(smin, ws[base + RS_MIN]);
        smax = max(smax, ws[base + RS_MAX]);
        float e = ws[base + RS_ENT];
        ent += e;
        entmin = min(entmin, e);
        float pm = ws[base + RS_PMAX];
        pmax += pm;
        if (pm > thr) sat += 1.0;
        jf += ws[base + RS_JFRO];
        sink += ws[base + RS_SINK];
    }
    float col[11];
    [[unroll]] for (int c = 0; c < 11; c++) col[c] = 0.0;
    if (rowsn > 0.0) {
        col[0] = mean;
        col[1] = sqrt(max(0.0, m2 / n));
        col[2] = smin;
        col[3] = smax;
        col[4] = ent / rowsn;
        col[5] = entmin;
        col[6] = pmax / rowsn;
        col[7] = sat / rowsn;
        col[8] = jf / rowsn;
        col[9] = sink / rowsn;
    }
    col[10] = empty;
    [[unroll]] for (int c = 0; c < 11; c++) stats_buf[tidx(T_STATS, b, h, 0u, uint(c))] = col[c];
}
