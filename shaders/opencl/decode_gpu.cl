/*
 * decode_gpu.cl — split-KV decode forward for GPU-class devices (issue 17):
 * the direct decode path of docs/opencl.md ("GPU-class decode"), reading K
 * and V where the user keeps them, like decode.cl, but with a work-group
 * (DWG work-items) per (KV head, key chunk, block of DRB rows) instead of a
 * work-item. cl_plan.c (gdec_plan) takes it on GPU-class devices; CPU
 * devices (PoCL) keep decode.cl, whose rows-per-work-item form is fast
 * there. The kernel has decode.cl's name and arguments (SDPA_COMMON_ARGS,
 * then kv_access.cl's SDPA_KV_ARGS), so cl_forward.c launches either (one
 * work-group per (bhk, split, rb) here).
 *
 * Per work-group: the DRB of the G * Sq rows folded onto the KV head (all
 * query heads of a KV group, rho = g * Sq + i, as in fwd.cl) are served by
 * one pass over the chunk's keys. Per tile of DGK keys: (1) the K tile is
 * staged in local memory with coalesced float4 loads (consecutive
 * work-items read consecutive 16-byte pieces of a K row; element-wise loads
 * when K's last stride is not 1); (2) each work-item computes the scores of
 * one key for DRB / (DWG / DGK) rows from float4 reads of the staged q rows
 * and K rows, and runs the score pipeline (prelude.cl) on them; (3) the V
 * tile replaces K in local memory while one work-item per row does the
 * online-softmax update (with SDPA_SUBGROUPS, a subgroup per row: its
 * lanes share the row's keys and the max and sum are subgroup
 * reductions); (4) each work-item accumulates one float4 column of the
 * output for DRB / (DWG / (HDV / 4)) rows, in registers. The
 * partials (normalised output and LSE of the chunk) go to the layout
 * combine.cl merges, exactly as decode.cl writes them (part_o[(s * R + r) *
 * HDV + c], part_l[s * R + r]); every (split, row) entry of an active row is
 * written. Without SDPA_SUBGROUPS no extension is needed (the row
 * reductions go through local memory).
 *
 * Invariants (decode.cl's): f32 arithmetic and softmax state; with sinks
 * split 0's rows start at the sink (a row without kept keys ends with
 * out 0, lse = sink); a dropped key
 * (band, kv_len, mask, -inf bias) has p == 0 and is selected out of P V,
 * never multiplied, so NaN/Inf in K or V at dropped keys cannot reach a
 * row; NaN at kept keys propagates; a chunk without a kept key of the row
 * writes lse -inf. Needs HD and HDV multiples of 4, DWG >= HDV / 4 and
 * DWG >= DGK (the plan checks).
 */

/* K/V through kv_access.cl (issue 19's inputs, as decode.cl): in q's
 * storage type or another (KV_DT), q8_0 / q4_0 blocks dequantized in
 * registers, pages through the block table (SDPA_K_ROW / SDPA_V_ROW);
 * ALiBi comes in the score pipeline, sinks start split 0's rows at
 * m = sink, l = 1 (SDPA_SINK_INIT). */

#ifndef HD
#define HD 64 /* head size of q and k; a multiple of 4 */
#endif
#ifndef HDV
#define HDV 64 /* head size of v and out; a multiple of 4 */
#endif
#ifndef DRB
#define DRB 8 /* rows per work-group */
#endif
#ifndef DWG
#define DWG 64 /* work-items per work-group */
#endif
#ifndef DGK
#define DGK 32 /* keys per tile; <= DWG */
#endif

#define GQ4 (HD / 4)                      /* float4 pieces of a q / K row */
#define GV4 (HDV / 4)                     /* float4 pieces of a V / out row */
#define GKS (HD + 4)                      /* local row stride of K (padded: no bank conflicts) */
#define GVS (HDV + 4)                     /* local row stride of V */
#define GKV (DGK * (GKS > GVS ? GKS : GVS)) /* the shared K / V tile */
#define GSR (DWG / DGK)                   /* rows scored at once (lanes: GSR x DGK) */
#define GSP ((DRB + GSR - 1) / GSR)       /* score rows per work-item */
#define GOR (DWG / GV4)                   /* rows accumulated at once (lanes: GOR x GV4) */
#define GOP ((DRB + GOR - 1) / GOR)       /* output rows per work-item */

/* Partial unrolling of the loops over D and over a tile's keys: fully
 * unrolled, clang's AMD back end issues all their local reads at once and
 * runs out of VGPRs (231 at D = 64 on gfx1030, spills on gfx1100). */
#define GDEC_UNROLL _Pragma("unroll 4")

/* Elements d .. d + 3 of the K/V row at rb (kv_access.cl: elements, or
 * blocks for q8_0 / q4_0, whose last stride is 1) with element stride st,
 * as floats. */
inline float4 gdec_load4(global const KVTYPE *p, long rb, long st, int d)
{
#if KV_BLOCK
    (void)st;
    return SDPA_KV_VLOADN(4)(p, rb, d);
#else
    /* one element offset (AMD: 20 fewer VGPRs than rb and d kept apart) */
    long e = rb + (long)d * st;
    if (st == 1) return SDPA_KV_VLOADN(4)(p, e, 0);
    return (float4)(sdpa_kv_ld(p, e, st, 0), sdpa_kv_ld(p, e, st, 1),
                    sdpa_kv_ld(p, e, st, 2), sdpa_kv_ld(p, e, st, 3));
#endif
}

/* Stages keys [j0, j0 + nt) of K (x = kx, xs = kxs, ROW = SDPA_K_ROW) or V
 * (vx, vxs, SDPA_V_ROW), n4 float4 pieces per row, at local row stride ls;
 * rows past nt are 0. Uses the kernel's b, hk and lid. */
#define GDEC_STAGE(dst, x, xs, ROW, j0, nt, n4, ls)                              \
    for (int e_ = lid; e_ < DGK * (n4); e_ += DWG) {                            \
        int u_ = e_ / (n4), c_ = e_ % (n4);                                     \
        float4 y_ = (float4)(0.0f);                                             \
        if (u_ < (nt)) y_ = gdec_load4((x), ROW(b, hk, (j0) + u_), (xs).s3, c_ * 4); \
        vstore4(y_, 0, (dst) + u_ * (ls) + c_ * 4);                             \
    }

__kernel __attribute__((reqd_work_group_size(DWG, 1, 1)))
void sdpa_decode(global const float *Qs,
                 SDPA_COMMON_ARGS, SDPA_KV_ARGS,
                 long nbhk, int nrb, int nsplit, int chunk,
                 global float *part_o, global float *part_l)
{
    local float q_l[DRB * HD];
    local float kv_l[GKV];
    local float s_l[DRB * DGK]; /* logits, then p */
    local float a_l[DRB], m_l[DRB], l_l[DRB];
    local int lo_l[DRB], hi_l[DRB], hr_l[DRB], ic_l[DRB], span_l[2];
    const int lid = (int)get_local_id(0);
    long grp = get_group_id(0);
    int rb = (int)(grp % nrb);
    long t = grp / nrb;
    int split = (int)(t % nsplit);
    long bhk = t / nsplit;
    SDPA_COMMON_UNUSED;
    SDPA_KV_UNUSED;
    int G = Hq / Hkv;
    long NR = (long)G * Sq;
    long b = bhk / Hkv;
    int hk = (int)(bhk % Hkv);
    long R = nbhk * NR; /* = B * Hq * Sq */
    long kvl = SDPA_KV_LEN(b);
    long off = sdpa_diag_off(diag, diag_off, kvl, Sq);
    long slo = (long)split * chunk, shi = min((long)(split + 1) * chunk, (long)Skv);

    /* Rows: their heads, indices and kept ranges in this chunk; the union. */
    if (lid < DRB) {
        long lo, hi, ic, ulo = Skv, uhi = 0;
        int hr;
        sdpa_fold_row((long)rb * DRB + lid, NR, hk, G, Sq, off, left, right, kvl, slo, shi,
                      &hr, &ic, &lo, &hi, &ulo, &uhi);
        lo_l[lid] = (int)lo;
        hi_l[lid] = (int)hi;
        hr_l[lid] = hr;
        ic_l[lid] = (int)ic;
        SDPA_SINK_INIT(m_l[lid], l_l[lid], hr, split == 0);
    }
    for (int e = lid; e < DRB * HD; e += DWG) {
        int r = e / HD;
        long rho = (long)rb * DRB + r;
        long hr = hk * G + (rho < NR ? rho : NR - 1) / Sq, ic = (rho < NR ? rho : NR - 1) % Sq;
        q_l[e] = rho < NR ? Qs[((b * Hq + hr) * SqP + ic) * HD + e % HD] : 0.0f;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        int ulo = Skv, uhi = 0;
        for (int r = 0; r < DRB; r++)
            if (lo_l[r] < hi_l[r]) {
                ulo = min(ulo, lo_l[r]);
                uhi = max(uhi, hi_l[r]);
            }
        span_l[0] = ulo;
        span_l[1] = uhi;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    const int ulo = span_l[0], uhi = span_l[1];

    const int su = lid % DGK, sg = lid / DGK;  /* scores: key su, rows sg + GSR x */
    const int oc = lid % GV4, og = lid / GV4;  /* outputs: column piece oc, rows og + GOR x */
    const bool olane = og < GOR;
    float4 acc[GOP];
    SDPA_UNROLL for (int x = 0; x < GOP; x++) acc[x] = (float4)(0.0f);

    for (int j0 = ulo; j0 < uhi; j0 += DGK) {
        int nt = min(DGK, uhi - j0);
        GDEC_STAGE(kv_l, kx, kxs, SDPA_K_ROW, j0, nt, GQ4, GKS);
        barrier(CLK_LOCAL_MEM_FENCE);
        /* (2) scores and the score pipeline: logits (-inf = dropped) */
        float4 sc[GSP];
        SDPA_UNROLL for (int x = 0; x < GSP; x++) sc[x] = (float4)(0.0f);
        GDEC_UNROLL for (int c = 0; c < GQ4; c++) {
            float4 kk = vload4(c, kv_l + su * GKS);
            SDPA_UNROLL for (int x = 0; x < GSP; x++) {
                int r = sg + x * GSR;
                if (GSP * GSR == DRB || r < DRB) sc[x] = fma(vload4(c, q_l + r * HD), kk, sc[x]);
            }
        }
        SDPA_UNROLL for (int x = 0; x < GSP; x++) {
            int r = sg + x * GSR;
            if (GSP * GSR != DRB && r >= DRB) continue;
            int j = j0 + su;
            bool keep = su < nt && j >= lo_l[r] && j < hi_l[r];
            float y = SDPA_SCORE_CAP(float, HSUMN(4)(sc[x]));
            s_l[r * DGK + su] = keep ? SDPA_SCORE_TERMS(y, &keep, b, hr_l[r], ic_l[r], j)
                                     : SDPA_NEG_INF;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* (3) V replaces K; one work-item per row: online softmax */
        GDEC_STAGE(kv_l, vx, vxs, SDPA_V_ROW, j0, nt, GV4, GVS);
#if SDPA_SUBGROUPS
        /* a subgroup per row: its lanes share the row's keys, the max and the
         * sum are subgroup reductions (any subgroup size; prelude.cl) */
        for (int r = (int)get_sub_group_id(); r < DRB; r += (int)get_num_sub_groups()) {
            const int sl = (int)get_sub_group_local_id(), ss = (int)get_sub_group_size();
            local float *sr = s_l + r * DGK;
            float tmax = SDPA_NEG_INF;
            bool nan = false;
            for (int u = sl; u < DGK; u += ss) {
                nan = nan || isnan(sr[u]);
                tmax = fmax(tmax, sr[u]);
            }
            tmax = sdpa_sg_max_nan(nan ? NAN : tmax);
            float alpha = sdpa_sg_softmax_row(sr, sr, 1, DGK, tmax, m_l + r, l_l + r);
            if (sl == 0) a_l[r] = alpha;
        }
#else
        if (lid < DRB) {
            local float *sr = s_l + lid * DGK;
            float tmax = SDPA_NEG_INF;
            bool nan = false;
            GDEC_UNROLL for (int u = 0; u < DGK; u++) {
                nan = nan || isnan(sr[u]);
                tmax = fmax(tmax, sr[u]);
            }
            if (nan) tmax = NAN;
            float alpha = 1.0f, mo = m_l[lid];
            if (tmax != SDPA_NEG_INF) {
                float mn = isnan(tmax) ? tmax : fmax(mo, tmax);
                alpha = mn == mo ? 1.0f : exp(mo - mn);
                float sum = 0.0f;
                GDEC_UNROLL for (int u = 0; u < DGK; u++) {
                    float pu = sr[u] == SDPA_NEG_INF ? 0.0f : exp(sr[u] - mn);
                    sr[u] = pu;
                    sum += pu;
                }
                l_l[lid] = fma(l_l[lid], alpha, sum);
                m_l[lid] = mn;
            } else {
                for (int u = 0; u < DGK; u++) sr[u] = 0.0f;
            }
            a_l[lid] = alpha;
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        /* (4) P V, selecting (never multiplying) where p == 0 */
        if (olane) {
            SDPA_UNROLL for (int x = 0; x < GOP; x++) {
                int r = og + x * GOR;
                if (GOP * GOR != DRB && r >= DRB) continue;
                float al = a_l[r];
                if (al != 1.0f) acc[x] *= al;
            }
            for (int u = 0; u < nt; u++) {
                float4 vv = vload4(oc, kv_l + u * GVS);
                SDPA_UNROLL for (int x = 0; x < GOP; x++) {
                    int r = og + x * GOR;
                    if (GOP * GOR != DRB && r >= DRB) continue;
                    float pu = s_l[r * DGK + u];
                    acc[x] = pu != 0.0f ? fma((float4)(pu), vv, acc[x]) : acc[x];
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

    /* Partials: normalised output and the chunk's LSE per active row. */
    if (olane) {
        SDPA_UNROLL for (int x = 0; x < GOP; x++) {
            int r = og + x * GOR;
            if ((GOP * GOR != DRB && r >= DRB) || (long)rb * DRB + r >= NR) continue;
            float l = l_l[r];
            float inv = l == 0.0f ? 0.0f : 1.0f / l;
            long pr = (long)split * R + ((b * Hq + hr_l[r]) * Sq + ic_l[r]);
            vstore4(acc[x] * inv, oc, part_o + pr * HDV);
        }
    }
    if (lid < DRB && (long)rb * DRB + lid < NR) {
        float l = l_l[lid];
        long pr = (long)split * R + ((b * Hq + hr_l[lid]) * Sq + ic_l[lid]);
        part_l[pr] = l == 0.0f ? SDPA_NEG_INF : m_l[lid] + log(l);
    }
}
