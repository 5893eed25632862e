/*
 * fwd.cl — fused attention forward. Each work-item owns RPW consecutive query
 * rows, walks the union of their kept key ranges in tiles of KT keys with an
 * online softmax, and keeps the rows' output accumulators and running (m, l)
 * in private memory (registers).
 *
 * Scores of a tile are outer products: for d in 0..HD-1,
 * s[r][0..KT) += q_r[d] * Kt[d][j0..j0+KT), so one vector load of K feeds
 * RPW rows x KW keys and no horizontal sums are needed; likewise each loaded
 * V vector feeds RPW rows (register blocking: this is what makes the kernel
 * fast on CPU OpenCL, where K/V otherwise stream from L2 once per row).
 * With STAGE_KV = 1 the work-group first copies the K^T and V tiles into
 * local memory (GPU style) and all its work-items walk the union of the
 * group's ranges (barriers need uniform loops). With KV_DIRECT (a K/V dtype
 * other than q's, q8_0 / q4_0, paged K/V) the tiles are always staged, from
 * the caller's K/V through kv_access.cl (converted or dequantized as they
 * are read, pages through the block table), not from the packed workspace.
 * ALiBi enters through the score pipeline (every tile per key); with sinks
 * a row's online softmax starts at m = sink, l = 1 (split 0 only).
 *
 * Inputs come packed by pack.cl: Qs (q after QK-norm, gain and scale, rows
 * padded to SqP), Kt (k after norm and gain, tile-major: tile j0 / KT is a
 * contiguous HD x KT block at Kt + j0 * HD, zero-padded to a multiple of 64
 * keys), Vp (v row-major, padded). The score inputs (SDPA_COMMON_ARGS,
 * prelude.cl) are read in place through their strides.
 *
 * Invariants: every accumulation is f32; a dropped key has probability
 * exactly 0 (true -inf, never a large negative) and, in tiles that went
 * through the per-key pass (the only ones that can hold dropped keys), is
 * selected out of the P V accumulation, never multiplied (so NaN/Inf stored
 * in V, or K, at keys a row drops cannot reach that row); a row with no kept key
 * writes out = 0 and lse = -inf; NaN scores propagate to their row; tiles
 * outside every row's band are never visited (band-aware skipping).
 * With nsplit > 1 (split-KV decode) the key range is cut into `chunk`-sized
 * pieces, one per get_group_id(2), and normalised partial outputs plus
 * their LSE go to part_o/part_l for combine.cl. With HAS_STATS each row
 * writes a row record (SDPA_CLRS_*) for stats.cl (never with nsplit > 1).
 * Rows: the G = Hq / Hkv query heads that share a KV head are folded into
 * one row space of G * Sq rows, so K/V tiles are shared across them.
 * Called by cl_forward.c with local size (WG, 1, 1) and global size
 * (ceil(G * Sq / (WG * RPW)) * WG, B * Hkv, nsplit).
 */

#ifndef HD
#define HD 64 /* head size of q and k (compile time, so loops unroll) */
#endif
#ifndef HDV
#define HDV 64 /* head size of v and out */
#endif
#ifndef WG
#define WG 8 /* work-items per work-group */
#endif
#ifndef RPW
#define RPW 1 /* query rows per work-item: 1, 2 or 4 (query tile = WG * RPW) */
#endif
#ifndef KT
#define KT 16 /* keys per tile: 2, 4, 8, 16, 32 or 64 (one rescale per tile) */
#endif
#ifndef OV
#define OV 16 /* width of the output accumulator vectors; divides HDV */
#endif
#ifndef STAGE_KV
#define STAGE_KV 0 /* 1 = stage K/V tiles in local memory (GPUs) */
#endif
#ifndef FWD_BLOCK
#define FWD_BLOCK 0 /* 1 = sdpa_fwd is fwd_block.cl's (GPU-class devices), not this file's */
#endif

/* Score vectors: KT keys as NKV vectors of KW lanes. */
#if KT > 16
#define KW 16
#else
#define KW KT
#endif
#define NKV (KT / KW)
#define KVEC FLOATN(KW)
#define OVEC FLOATN(OV)
#define NOV (HDV / OV)
/* Tiles need per-key work with masks, biases, statistics, or at band edges. */
#define FWD_PER_KEY (HAS_MASK || HAS_BIAS || HAS_STATS || HAS_ALIBI)

#if HAS_STATS
#define FWD_STAT_KEY(r, x, j)                      \
    if (x > SDPA_NEG_INF) {                        \
        st_n[r] += 1.0f;                           \
        st_sum[r] += x;                            \
        st_sq[r] = fma(x, x, st_sq[r]);            \
        st_min[r] = fmin(st_min[r], x);            \
        st_max[r] = fmax(st_max[r], x);            \
        if ((j) == 0) st_s0[r] = x;                \
    }
/* Sums relative to the running maximum (stats.cl: sdpa_row_entropy): the key
 * at the maximum is left out of l1..l3; where the tile raises the maximum
 * (mn != m[r], before l[r] and m[r] move) the old top joins them. */
#define FWD_STAT_TILE(r, alpha, mn, pv, sv)                            \
    {                                                                  \
        bool top_ = mn != m[r]; /* one key of the tile is the new top */ \
        if (top_) {                                                    \
            bool had = m[r] > SDPA_NEG_INF;                            \
            float a2 = alpha * alpha, old = had ? 1.0f : 0.0f;         \
            st_a[r] = had ? alpha * fma(m[r] - mn, l[r], st_a[r]) : 0.0f; \
            st_l1[r] = alpha * (st_l1[r] + old);                       \
            st_l2[r] = a2 * (st_l2[r] + old);                          \
            st_l3[r] = a2 * alpha * (st_l3[r] + old);                  \
        }                                                              \
        for (int t = 0; t < KT; t++) {                                 \
            float pt = pv[t];                                          \
            if (top_ && sv[t] == mn) {                                 \
                top_ = false;                                          \
            } else if (pt > 0.0f) {                                    \
                st_a[r] = fma(pt, sv[t] - mn, st_a[r]);                \
                st_l1[r] += pt;                                        \
                st_l2[r] = fma(pt, pt, st_l2[r]);                      \
                st_l3[r] = fma(pt * pt, pt, st_l3[r]);                 \
            }                                                          \
        }                                                              \
    }
#else
#define FWD_STAT_KEY(r, x, j)
#define FWD_STAT_TILE(r, alpha, mn, pv, sv)
#endif

/* One key tile: KSRC points at Kt[0][j0] with row stride KSTR, VSRC at V row j0. */
#define FWD_TILE(KSRC, KSTR, VSRC)                                                 \
    {                                                                              \
        KVEC s[RPW][NKV];                                                          \
        SDPA_UNROLL for (int r = 0; r < RPW; r++)                                  \
            SDPA_UNROLL for (int u = 0; u < NKV; u++) s[r][u] = (KVEC)(0.0f);      \
        for (int d = 0; d < HD; d++) {                                             \
            KVEC kv[NKV];                                                          \
            SDPA_UNROLL for (int u = 0; u < NKV; u++)                              \
                kv[u] = VLOADN(KW)(u, (KSRC) + d * (KSTR));                        \
            SDPA_UNROLL for (int r = 0; r < RPW; r++) {                            \
                KVEC qd = (KVEC)(qrow[r][d]);                                      \
                SDPA_UNROLL for (int u = 0; u < NKV; u++)                          \
                    s[r][u] = fma(qd, kv[u], s[r][u]);                             \
            }                                                                      \
        }                                                                          \
        float pv[RPW][KT];                                                         \
        bool sel = false; /* some key of the tile may be dropped for a row */      \
        SDPA_UNROLL for (int r = 0; r < RPW; r++) {                                \
            float sv[KT];                                                          \
            SDPA_UNROLL for (int u = 0; u < NKV; u++) {                            \
                s[r][u] = SDPA_SCORE_CAP(KVEC, s[r][u]);                           \
                VSTOREN(KW)(s[r][u], u, sv);                                       \
            }                                                                      \
            float tmax = SDPA_NEG_INF;                                             \
            if (FWD_PER_KEY || j0 < lo[r] || j0 + KT > hi[r]) {                    \
                sel = true;                                                        \
                for (int t = 0; t < KT; t++) {                                     \
                    long j = j0 + t;                                               \
                    float x = sv[t];                                               \
                    bool keep = j >= lo[r] && j < hi[r];                           \
                    x = SDPA_SCORE_TERMS(x, &keep, b, hr[r], ic[r], j);            \
                    FWD_STAT_KEY(r, x, j);                                         \
                    sv[t] = x;                                                     \
                    tmax = (isnan(x) || x > tmax) ? x : tmax;                      \
                }                                                                  \
            } else {                                                               \
                KVEC vm = s[r][0];                                                 \
                SDPA_UNROLL for (int u = 1; u < NKV; u++) vm = fmax(vm, s[r][u]);  \
                tmax = HMAXN(KW)(vm);                                              \
            }                                                                      \
            if (tmax != SDPA_NEG_INF) {                                            \
                float mn = isnan(tmax) ? tmax : fmax(m[r], tmax);                  \
                float alpha = mn == m[r] ? 1.0f : exp(m[r] - mn);                  \
                KVEC ps = (KVEC)(0.0f);                                            \
                SDPA_UNROLL for (int u = 0; u < NKV; u++) {                        \
                    KVEC pu = exp(VLOADN(KW)(u, sv) - (KVEC)(mn));                 \
                    ps += pu;                                                      \
                    VSTOREN(KW)(pu, u, pv[r]);                                     \
                }                                                                  \
                FWD_STAT_TILE(r, alpha, mn, pv[r], sv);                            \
                l[r] = fma(l[r], alpha, HSUMN(KW)(ps));                            \
                if (alpha != 1.0f)                                                 \
                    SDPA_UNROLL for (int c = 0; c < NOV; c++) o[r][c] *= alpha;    \
                m[r] = mn;                                                         \
            } else {                                                               \
                for (int t = 0; t < KT; t++) pv[r][t] = 0.0f;                      \
            }                                                                      \
        }                                                                          \
        /* P V; where a key may be dropped, select instead of multiplying so   \
         * NaN/Inf in V at dropped keys (p == 0) cannot reach the row */        \
        if (sel) {                                                                 \
            for (int t = 0; t < KT; t++) {                                         \
                SDPA_UNROLL for (int c = 0; c < NOV; c++) {                        \
                    OVEC vv = VLOADN(OV)(c, (VSRC) + t * HDV);                     \
                    SDPA_UNROLL for (int r = 0; r < RPW; r++)                      \
                        o[r][c] = pv[r][t] != 0.0f ? fma((OVEC)(pv[r][t]), vv, o[r][c]) \
                                                   : o[r][c];                      \
                }                                                                  \
            }                                                                      \
        } else {                                                                   \
            for (int t = 0; t < KT; t++) {                                         \
                SDPA_UNROLL for (int c = 0; c < NOV; c++) {                        \
                    OVEC vv = VLOADN(OV)(c, (VSRC) + t * HDV);                     \
                    SDPA_UNROLL for (int r = 0; r < RPW; r++)                      \
                        o[r][c] = fma((OVEC)(pv[r][t]), vv, o[r][c]);              \
                }                                                                  \
            }                                                                      \
        }                                                                          \
    }

#if !FWD_BLOCK
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sdpa_fwd(global const float *Qs, global const float *Kt, global const float *Vp,
              SDPA_COMMON_ARGS, SDPA_KV_ARGS,
              global STYPE *out, long o_off, long4 os,
              global float *lse, long l_off, long4 ls, int has_lse,
              global float *rowstats,
              int nsplit, int chunk, global float *part_o, global float *part_l)
{
    /* Rows of a work-group are the G = Hq / Hkv query heads sharing one KV
     * head, folded: row index rho = (h - hk * G) * Sq + i, so every loaded K/V
     * tile serves all of them (GQA decode reads K/V once per KV head). */
    int lid = get_local_id(0);
    long ibase = ((long)get_group_id(0) * WG + lid) * RPW;
    long bhk = get_group_id(1);
    int split = get_group_id(2);
    int G = Hq / Hkv;
    long NR = (long)G * Sq;
    long b = bhk / Hkv;
    int hk = (int)(bhk % Hkv);
    long kvl = SDPA_KV_LEN(b);
    long off = sdpa_diag_off(diag, diag_off, kvl, Sq);
    long slo = 0, shi = Skv;
    if (nsplit > 1) {
        slo = (long)split * chunk;
        shi = (long)(split + 1) * chunk;
    }
    SDPA_COMMON_UNUSED;
    SDPA_KV_UNUSED;

    long lo[RPW], hi[RPW], ic[RPW];
    int hr[RPW];
    bool act[RPW];
    global const float *qrow[RPW];
    long ulo = Skv, uhi = 0; /* union of this work-item's row ranges */
    SDPA_UNROLL for (int r = 0; r < RPW; r++) {
        act[r] = ibase + r < NR;
        sdpa_fold_row(ibase + r, NR, hk, G, Sq, off, left, right, kvl, slo, shi, &hr[r], &ic[r],
                      &lo[r], &hi[r], &ulo, &uhi);
        qrow[r] = Qs + ((b * Hq + hr[r]) * SqP + ic[r]) * HD;
    }

    OVEC o[RPW][NOV];
    float m[RPW], l[RPW];
    SDPA_UNROLL for (int r = 0; r < RPW; r++) {
        SDPA_SINK_INIT(m[r], l[r], hr[r], split == 0);
        SDPA_UNROLL for (int c = 0; c < NOV; c++) o[r][c] = (OVEC)(0.0f);
    }
#if HAS_STATS
    float st_a[RPW], st_l1[RPW], st_l2[RPW], st_l3[RPW], st_n[RPW], st_sum[RPW], st_sq[RPW];
    float st_min[RPW], st_max[RPW], st_s0[RPW];
    for (int r = 0; r < RPW; r++) {
        st_a[r] = st_l1[r] = st_l2[r] = st_l3[r] = st_n[r] = st_sum[r] = st_sq[r] = 0.0f;
        st_min[r] = INFINITY;
        st_max[r] = st_s0[r] = SDPA_NEG_INF;
    }
#endif
    global const float *kt = Kt + bhk * HD * SDPA_PAD64(Skv);
    global const float *vp = Vp + bhk * SkvP * HDV;

#if STAGE_KV || KV_DIRECT
    local float kt_l[HD * KT];
    local float v_l[KT * HDV];
    /* Group-uniform range: union over the group's rows. */
    long glo = Skv, ghi = 0;
    long g0 = (long)get_group_id(0) * WG * RPW;
    for (long rho = g0; rho < min(g0 + WG * RPW, NR); rho++) {
        long a, z;
        sdpa_row_range(rho % Sq, off, left, right, kvl, &a, &z);
        a = max(a, slo);
        z = min(z, shi);
        if (a < z) {
            glo = min(glo, a);
            ghi = max(ghi, z);
        }
    }
    for (long j0 = glo / KT * KT; j0 < ghi; j0 += KT) {
        barrier(CLK_LOCAL_MEM_FENCE);
#if KV_DIRECT /* the caller's K/V, converted or dequantized as staged */
        SDPA_KV_STAGE_KT(kt_l, b, hk, j0, KT, lid, WG);
        SDPA_KV_STAGE_V(v_l, b, hk, j0, KT, lid, WG);
#else
        for (int e = lid; e < HD * KT; e += WG)
            kt_l[e] = kt[j0 * HD + e];
        for (int e = lid; e < KT * HDV; e += WG)
            v_l[e] = vp[j0 * HDV + e];
#endif
        barrier(CLK_LOCAL_MEM_FENCE);
        if (j0 + KT > ulo && j0 < uhi)
            FWD_TILE(kt_l, KT, v_l)
    }
#else
    for (long j0 = ulo / KT * KT; j0 < uhi; j0 += KT)
        FWD_TILE(kt + j0 * HD, KT, vp + j0 * HDV)
#endif

    SDPA_UNROLL for (int r = 0; r < RPW; r++) {
        if (!act[r]) continue;
        long i = ic[r];
        int h = hr[r];
        long bh = b * Hq + h;
        float inv = l[r] == 0.0f ? 0.0f : 1.0f / l[r];
        float row_lse = l[r] == 0.0f ? SDPA_NEG_INF : m[r] + log(l[r]);
        if (nsplit > 1) {
            long pr = (long)split * get_num_groups(1) * NR + bh * Sq + i;
            SDPA_UNROLL for (int c = 0; c < NOV; c++)
                VSTOREN(OV)(o[r][c] * inv, c, part_o + pr * HDV);
            part_l[pr] = row_lse;
            continue;
        }
        long obase = o_off + b * os.s0 + h * os.s1 + i * os.s2;
        SDPA_UNROLL for (int c = 0; c < NOV; c++) {
            float ov[OV];
            VSTOREN(OV)(o[r][c] * inv, 0, ov);
            for (int e = 0; e < OV; e++) ST(out, obase + (c * OV + e) * os.s3, ov[e]);
        }
        if (has_lse) lse[l_off + b * ls.s0 + h * ls.s1 + i * ls.s2] = row_lse;
#if HAS_STATS
        sdpa_rowstat_store(rowstats + (bh * Sq + i) * SDPA_CLRS_SIZE, st_n[r], st_sum[r],
                           st_sq[r], st_min[r], st_max[r], m[r], l[r], st_a[r], st_l1[r],
                           st_l2[r], st_l3[r], st_s0[r]);
#endif
    }
}
#endif /* !FWD_BLOCK */
