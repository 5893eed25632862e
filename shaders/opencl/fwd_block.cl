/*
 * fwd_block.cl — fused attention forward for GPU-class devices, in the
 * FlashAttention-2 structure (built instead of fwd.cl's sdpa_fwd when
 * FWD_BLOCK = 1; cl_plan.c chooses it for CL_DEVICE_TYPE_GPU devices).
 *
 * A work-group of WG work-items owns a block of BR consecutive rows of the
 * G * Sq rows folded onto one (batch, KV head) (fwd.cl's row folding, so the
 * query heads sharing a KV head are served together). Its q rows are loaded
 * once into local memory (transposed, QT[d][r]); then for every tile of KT
 * keys of the group's kept range:
 *   1. the K^T tile (pack.cl's tile-major layout: one contiguous HD x KT
 *      block) is copied into local memory with coalesced float4 loads;
 *   2. S = Q K^T: each work-item computes a TR x TC block of scores from
 *      vector reads of QT and K^T (TR + TC values feed TR x TC FMAs);
 *   3. the V tile replaces the K tile in local memory while one work-item
 *      per row runs the row's score pipeline (prelude.cl: cap, terms, band,
 *      mask, bias), its online-softmax update and statistics (fwd.cl's
 *      FWD_STAT_* macros), writing P^T and the row's rescale factor;
 *   4. O = diag(alpha) O + P V: each work-item owns a TRO x TO block of the
 *      BR x HDV output in registers, from vector reads of P^T and V.
 * Four barriers per tile. All arithmetic and the softmax state are f32; the
 * tiles hold the packed workspace's f32 values, or with KV_DIRECT (K/V of
 * their own dtype, q8_0 / q4_0, paged) the caller's K/V converted or
 * dequantized as staged through kv_access.cl (pages via the block table).
 * ALiBi comes in the score pipeline; with sinks the row's softmax starts at
 * m = sink, l = 1 (SDPA_SINK_INIT, split 0 only). With SDPA_SUBGROUPS (and
 * no statistics) step 3 is run by a subgroup per row instead (FBLK_SG).
 *
 * Invariants (as fwd.cl): a dropped key has probability exactly 0 and, in
 * tiles where some row went through the per-key pass, is selected out of
 * P V (NaN/Inf in V at dropped keys cannot reach a row); a row without kept
 * keys writes out = 0, lse = -inf; NaN scores propagate; tiles outside the
 * group's union of kept ranges are never visited; with nsplit > 1 the
 * group's key slice is get_group_id(2)'s chunk and partials go to
 * part_o/part_l; HAS_STATS rows write their record (never split).
 * Needs (cl_plan.c, block_shape, checks them): BR <= WG, KT a power of two
 * >= 4, WG = (BR / TR) * (KT / TC) = (BR / TRO) * (HDV / TO), TR, TC, TRO
 * dividing BR or KT. Uses fwd.cl's macros (assembled right after it).
 * Called by cl_forward.c with local size (WG, 1, 1) and global size
 * (ceil(G * Sq / BR) * WG, B * Hkv, nsplit).
 */

#ifndef FWD_BLOCK
#define FWD_BLOCK 0 /* 1 = this kernel is sdpa_fwd (fwd.cl's is left out) */
#endif
#if FWD_BLOCK
#ifndef BR
#define BR 32 /* query rows per work-group */
#endif
#ifndef TR
#define TR 4 /* score block of a work-item: TR rows x TC keys */
#endif
#ifndef TC
#define TC 4
#endif
#ifndef TRO
#define TRO 4 /* output block of a work-item: TRO rows x TO columns of HDV */
#endif
#ifndef TO
#define TO 16
#endif

/* Vector widths of the local reads: rows of QT / P^T, keys of K^T, columns of V. */
#if TR % 4 == 0
#define BVR_ 4
#elif TR % 2 == 0
#define BVR_ 2
#else
#define BVR_ 1
#endif
#if TRO % 4 == 0
#define BVO_ 4
#elif TRO % 2 == 0
#define BVO_ 2
#else
#define BVO_ 1
#endif
#if TO % 4 == 0
#define BVT_ 4
#elif TO % 2 == 0
#define BVT_ 2
#else
#define BVT_ 1
#endif
#if TC % 4 == 0
#define BVC_ 4
#elif TC % 2 == 0
#define BVC_ 2
#else
#define BVC_ 1
#endif
#define BKV (HD > HDV ? HD : HDV) /* the shared K / V tile */
#define SLD (KT + 1)              /* row stride of the score tile (no bank conflicts) */

#ifndef BLOCK_UNROLL_N
#define BLOCK_UNROLL_N 4 /* unrolling of the d and key loops (register pressure) */
#endif
#define BLOCK_UNROLL _Pragma(SDPA_STR(unroll BLOCK_UNROLL_N))
#define SDPA_STR_(x) #x
#define SDPA_STR(x) SDPA_STR_(x)

/* Step 3 by a subgroup per row (SDPA_SUBGROUPS, prelude.cl): the row's keys
 * are shared by the subgroup's lanes, its max and sum are subgroup
 * reductions, and its state (m, l, kept range, head, index) lives in local
 * memory (l in inv_l). Not with statistics, whose per-row records stay with
 * one work-item per row. */
#define FBLK_SG (SDPA_SUBGROUPS && !HAS_STATS)

/* n floats at local p (aligned to n) as one vector read, spread into a[0..n) */
#define BLOCK_LREAD(n, p, a) VSTOREN(n)(*(local const FLOATN(n) *)(p), 0, (a))

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sdpa_fwd(global const float *Qs, global const float *Kt, global const float *Vp,
              SDPA_COMMON_ARGS, SDPA_KV_ARGS,
              global STYPE *out, long o_off, long4 os,
              global float *lse, long l_off, long4 ls, int has_lse,
              global float *rowstats,
              int nsplit, int chunk, global float *part_o, global float *part_l)
{
    local float4 qt_l4[(HD * BR + 3) / 4];
    local float4 kv_l4[(BKV * KT + 3) / 4];
    local float4 p_l4[(KT * BR + 3) / 4];
    local float s_l[BR * SLD];
    local float alpha_l[BR], inv_l[BR];
    local int sel_l;
#if FBLK_SG
    local float m_l[BR];
    local int rlo_l[BR], rhi_l[BR], rhr_l[BR], ric_l[BR];
#endif
    local float *qt_l = (local float *)qt_l4, *kv_l = (local float *)kv_l4;
    local float *p_l = (local float *)p_l4;

    const int lid = get_local_id(0);
    const int G = Hq / Hkv;
    const long NR = (long)G * Sq;
    const long g0 = (long)get_group_id(0) * BR;
    const long bhk = get_group_id(1);
    const int split = get_group_id(2);
    const long b = bhk / Hkv;
    const int hk = (int)(bhk % Hkv);
    const long kvl = SDPA_KV_LEN(b);
    const long off = sdpa_diag_off(diag, diag_off, kvl, Sq);
    long slo = 0, shi = Skv;
    if (nsplit > 1) {
        slo = (long)split * chunk;
        shi = (long)(split + 1) * chunk;
    }
    SDPA_COMMON_UNUSED;
    SDPA_KV_UNUSED;

    /* q rows, once: QT[d][r] (rows past the end are 0) */
    for (int e = lid; e < BR * HD; e += WG) {
        int r = e / HD, d = e - r * HD;
        long rho = g0 + r;
        float x = 0.0f;
        if (rho < NR) {
            long hr = hk * G + rho / Sq, ic = rho % Sq;
            x = Qs[((b * Hq + hr) * SqP + ic) * HD + d];
        }
        qt_l[d * BR + r] = x;
    }
    /* the group's key range: union of its rows' kept ranges */
    long glo = Skv, ghi = 0;
    BLOCK_UNROLL for (int r = 0; r < BR; r++) {
        int hr_;
        long ic_, lo_, hi_;
        sdpa_fold_row(g0 + r, NR, hk, G, Sq, off, left, right, kvl, slo, shi, &hr_, &ic_,
                      &lo_, &hi_, &glo, &ghi);
    }

    /* the row this work-item runs the softmax for (lid < BR) */
    const bool rowt = lid < BR;
    int hr0 = 0;
    long ic0 = 0, lo_0 = 0, hi_0 = 0, ulo_ = Skv, uhi_ = 0;
    sdpa_fold_row(g0 + (rowt ? lid : 0), NR, hk, G, Sq, off, left, right, kvl, slo, shi,
                  &hr0, &ic0, &lo_0, &hi_0, &ulo_, &uhi_);
    /* key indices fit 32 bits (Skv <= 2^30, cl_plan.c) */
    const int lo0 = (int)lo_0, hi0 = rowt ? (int)hi_0 : (int)lo_0;
    const int r = 0; /* index of the row in fwd.cl's per-row arrays */
    float m[1], l[1];
    SDPA_SINK_INIT(m[0], l[0], hr0, split == 0);
#if HAS_STATS
    float st_a[1], st_l1[1], st_l2[1], st_l3[1], st_n[1], st_sum[1], st_sq[1];
    float st_min[1], st_max[1], st_s0[1];
    st_a[0] = st_l1[0] = st_l2[0] = st_l3[0] = st_n[0] = st_sum[0] = st_sq[0] = 0.0f;
    st_min[0] = INFINITY;
    st_max[0] = st_s0[0] = SDPA_NEG_INF;
#endif
#if FBLK_SG
    if (rowt) { /* seen after the first tile's barrier */
        m_l[lid] = m[0];
        inv_l[lid] = l[0];
        rlo_l[lid] = lo0;
        rhi_l[lid] = hi0;
        rhr_l[lid] = hr0;
        ric_l[lid] = (int)ic0;
    }
#endif

    /* this work-item's blocks of S and of O */
    const int sr0 = lid / (KT / TC) * TR, sc0 = lid % (KT / TC) * TC;
    const int or0 = lid / (HDV / TO) * TRO, oc0 = lid % (HDV / TO) * TO;
    float o[TRO][TO];
    SDPA_UNROLL for (int i = 0; i < TRO; i++)
        SDPA_UNROLL for (int c = 0; c < TO; c++) o[i][c] = 0.0f;

    global const float *kt = Kt + bhk * HD * SDPA_PAD64(Skv);
    global const float *vp = Vp + bhk * SkvP * HDV;
    for (int j0 = (int)glo / KT * KT; j0 < (int)ghi; j0 += KT) {
        /* 1. K^T tile */
        barrier(CLK_LOCAL_MEM_FENCE);
#if KV_DIRECT /* the caller's K/V through kv_access.cl */
        SDPA_KV_STAGE_KT(kv_l, b, hk, j0, KT, lid, WG);
#else
        {
            global const float4 *src = (global const float4 *)(kt + (size_t)j0 * HD);
            for (int e = lid; e < HD * KT / 4; e += WG) kv_l4[e] = src[e];
        }
#endif
        if (lid == 0) sel_l = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        /* 2. raw scores of the TR x TC block */
        {
            float acc[TR][TC];
            SDPA_UNROLL for (int i = 0; i < TR; i++)
                SDPA_UNROLL for (int c = 0; c < TC; c++) acc[i][c] = 0.0f;
            BLOCK_UNROLL for (int d = 0; d < HD; d++) {
                float qa[TR], ka[TC];
                SDPA_UNROLL for (int i = 0; i < TR; i += BVR_)
                    BLOCK_LREAD(BVR_, qt_l + d * BR + sr0 + i, qa + i);
                SDPA_UNROLL for (int c = 0; c < TC; c += BVC_)
                    BLOCK_LREAD(BVC_, kv_l + d * KT + sc0 + c, ka + c);
                SDPA_UNROLL for (int i = 0; i < TR; i++)
                    SDPA_UNROLL for (int c = 0; c < TC; c++)
                        acc[i][c] = fma(qa[i], ka[c], acc[i][c]);
            }
            SDPA_UNROLL for (int i = 0; i < TR; i++)
                SDPA_UNROLL for (int c = 0; c < TC; c++)
                    s_l[(sr0 + i) * SLD + sc0 + c] = acc[i][c];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        /* 3. V tile (K is done with) while the row work-items run the softmax */
#if KV_DIRECT
        SDPA_KV_STAGE_V(kv_l, b, hk, j0, KT, lid, WG);
#else
        {
            global const float4 *src = (global const float4 *)(vp + (size_t)j0 * HDV);
            for (int e = lid; e < KT * HDV / 4; e += WG) kv_l4[e] = src[e];
        }
#endif
#if FBLK_SG
        for (int rr = (int)get_sub_group_id(); rr < BR; rr += (int)get_num_sub_groups()) {
            const int sl = (int)get_sub_group_local_id(), ss = (int)get_sub_group_size();
            local float *sv = s_l + rr * SLD;
            const int lo = rlo_l[rr], hi = rhi_l[rr];
            float tmax = SDPA_NEG_INF;
            bool per_key = FWD_PER_KEY || j0 < lo || j0 + KT > hi; /* uniform */
            for (int t = sl; t < KT; t += ss) {
                float x = SDPA_SCORE_CAP(float, sv[t]);
                if (per_key) {
                    int j = j0 + t;
                    bool keep = j >= lo && j < hi;
                    x = SDPA_SCORE_TERMS(x, &keep, b, rhr_l[rr], ric_l[rr], j);
                }
                sv[t] = x;
                tmax = (isnan(x) || x > tmax) ? x : tmax;
            }
            if (per_key && sl == 0) sel_l = 1;
            tmax = sdpa_sg_max_nan(tmax);
            float alpha =
                sdpa_sg_softmax_row(sv, p_l + rr, BR, KT, tmax, m_l + rr, inv_l + rr);
            if (sl == 0) alpha_l[rr] = alpha;
        }
#else
        if (rowt) {
            local float *sv = s_l + lid * SLD;
            float tmax = SDPA_NEG_INF;
            bool per_key = FWD_PER_KEY || j0 < lo0 || j0 + KT > hi0;
            BLOCK_UNROLL for (int t = 0; t < KT; t++) {
                float x = SDPA_SCORE_CAP(float, sv[t]);
                if (per_key) {
                    int j = j0 + t;
                    bool keep = j >= lo0 && j < hi0;
                    x = SDPA_SCORE_TERMS(x, &keep, b, hr0, ic0, j);
                    FWD_STAT_KEY(r, x, j);
                }
                sv[t] = x;
                tmax = (isnan(x) || x > tmax) ? x : tmax;
            }
            if (per_key) sel_l = 1;
            float alpha = 1.0f;
            if (tmax != SDPA_NEG_INF) {
                float mn = isnan(tmax) ? tmax : fmax(m[0], tmax);
                alpha = mn == m[0] ? 1.0f : exp(m[0] - mn);
                float ps = 0.0f;
#if HAS_STATS
                float pv[KT], svs[KT];
#endif
                BLOCK_UNROLL for (int t = 0; t < KT; t++) {
                    float pt = exp(sv[t] - mn);
                    ps += pt;
                    p_l[t * BR + lid] = pt;
#if HAS_STATS
                    pv[t] = pt;
                    svs[t] = sv[t];
#endif
                }
                FWD_STAT_TILE(r, alpha, mn, pv, svs);
                l[0] = fma(l[0], alpha, ps);
                m[0] = mn;
            } else {
                BLOCK_UNROLL for (int t = 0; t < KT; t++) p_l[t * BR + lid] = 0.0f;
            }
            alpha_l[lid] = alpha;
        }
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        /* 4. O = diag(alpha) O + P V on the TRO x TO block */
        SDPA_UNROLL for (int i = 0; i < TRO; i++) {
            float a = alpha_l[or0 + i];
            if (a != 1.0f)
                SDPA_UNROLL for (int c = 0; c < TO; c++) o[i][c] *= a;
        }
        if (sel_l) {
            BLOCK_UNROLL for (int t = 0; t < KT; t++) {
                float pa[TRO], va[TO];
                SDPA_UNROLL for (int i = 0; i < TRO; i += BVO_)
                    BLOCK_LREAD(BVO_, p_l + t * BR + or0 + i, pa + i);
                SDPA_UNROLL for (int c = 0; c < TO; c += BVT_)
                    BLOCK_LREAD(BVT_, kv_l + t * HDV + oc0 + c, va + c);
                /* a branch per row, not a select per output (which would hold
                 * a second copy of the accumulators) */
                SDPA_UNROLL for (int i = 0; i < TRO; i++)
                    if (pa[i] != 0.0f)
                        SDPA_UNROLL for (int c = 0; c < TO; c++)
                            o[i][c] = fma(pa[i], va[c], o[i][c]);
            }
        } else {
            BLOCK_UNROLL for (int t = 0; t < KT; t++) {
                float pa[TRO], va[TO];
                SDPA_UNROLL for (int i = 0; i < TRO; i += BVO_)
                    BLOCK_LREAD(BVO_, p_l + t * BR + or0 + i, pa + i);
                SDPA_UNROLL for (int c = 0; c < TO; c += BVT_)
                    BLOCK_LREAD(BVT_, kv_l + t * HDV + oc0 + c, va + c);
                SDPA_UNROLL for (int i = 0; i < TRO; i++)
                    SDPA_UNROLL for (int c = 0; c < TO; c++)
                        o[i][c] = fma(pa[i], va[c], o[i][c]);
            }
        }
    }

    /* the rows' results: lse, statistics, 1 / l for the output blocks */
    const long obh = b * Hq;
#if FBLK_SG
    if (rowt) { /* the state the subgroups kept (last written before a barrier) */
        m[0] = m_l[lid];
        l[0] = inv_l[lid];
    }
#endif
    if (rowt) {
        float inv = l[0] == 0.0f ? 0.0f : 1.0f / l[0];
        float row_lse = l[0] == 0.0f ? SDPA_NEG_INF : m[0] + log(l[0]);
        inv_l[lid] = inv;
        if (g0 + lid < NR) {
            long bh = obh + hr0;
            if (nsplit > 1) {
                part_l[(long)split * get_num_groups(1) * NR + bh * Sq + ic0] = row_lse;
            } else {
                if (has_lse) lse[l_off + b * ls.s0 + hr0 * ls.s1 + ic0 * ls.s2] = row_lse;
#if HAS_STATS
                sdpa_rowstat_store(rowstats + (bh * Sq + ic0) * SDPA_CLRS_SIZE, st_n[0],
                                   st_sum[0], st_sq[0], st_min[0], st_max[0], m[0], l[0],
                                   st_a[0], st_l1[0], st_l2[0], st_l3[0], st_s0[0]);
#endif
            }
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    SDPA_UNROLL for (int i = 0; i < TRO; i++) {
        long rho = g0 + or0 + i;
        long h = hk * G + rho / Sq, ic = rho % Sq;
        float inv = inv_l[or0 + i];
        if (rho >= NR) {
        } else if (nsplit > 1) {
            long pr = (long)split * get_num_groups(1) * NR + (obh + h) * Sq + ic;
            SDPA_UNROLL for (int c = 0; c < TO; c++)
                part_o[pr * HDV + oc0 + c] = o[i][c] * inv;
        } else {
            long obase = o_off + b * os.s0 + h * os.s1 + ic * os.s2;
            SDPA_UNROLL for (int c = 0; c < TO; c++)
                ST(out, obase + (oc0 + c) * os.s3, o[i][c] * inv);
        }
    }
}
#endif
