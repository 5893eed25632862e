/*
 * decode.cl — split-KV attention forward for decode shapes (few query rows,
 * long key range) that reads K and V in place, through their element
 * strides, instead of from the packed workspace fwd.cl needs.
 *
 * Each work-item owns DRB of the G * Sq rows of one KV head (the G = Hq / Hkv
 * query heads that share it, folded as in fwd.cl: rho = g * Sq + i) and one
 * chunk of `chunk` keys, walks the union of its rows' kept ranges inside the
 * chunk in tiles of DKT keys with an online softmax, and writes the
 * normalised partial output and its LSE to part_o/part_l in the layout
 * combine.cl merges (part_o[(s * R + r) * HDV + c], part_l[s * R + r],
 * r = (b * Hq + h) * Sq + i). Every (split, row) entry of an active row is
 * written, -inf / 0 where the chunk holds no kept key of the row.
 * Scores are dot products along D: q (packed by pack.cl, scale / temperature
 * and q gain applied, QK-norm never: the plan only takes this path without
 * QK-norm and k gain) times one K row, QV-wide vector loads when K's last
 * stride is 1 (kv_access.cl: vload on f32, vload_half on f16, 16-bit shifts
 * on bf16, int8 / nibbles times the block scale on q8_0 / q4_0, in
 * registers), scalar loads otherwise; V rows likewise with OV-wide loads.
 * K/V have their own dtype (KV_DT) and, paged, their rows come through the
 * block table (SDPA_K_ROW / SDPA_V_ROW) in the same loop. ALiBi enters the
 * per-key pass; with sinks split 0's rows start at m = sink, l = 1.
 *
 * Invariants (the same as fwd.cl): f32 accumulation; the score pipeline
 * (prelude.cl) per key; a dropped key (band, valid length, mask, -inf bias) has probability
 * exactly 0 and, in every tile that holds a dropped key for some row, is
 * selected out of the P V accumulation (p == 0 keeps the accumulator), never
 * multiplied, so NaN/Inf in K or V at dropped keys cannot reach a row; NaN scores at
 * kept keys propagate to their row; a row with no kept key in the chunk
 * writes lse -inf (combine.cl then writes 0 / -inf for fully empty rows).
 * Called by cl_forward.c (direct_kv plans) with a 1-D range: item
 * gid = (bhk * nsplit + split) * nrb + rb, local size DWG, global size
 * rounded up (items past the end return); then sdpa_combine.
 */

#ifndef HD
#define HD 64 /* head size of q and k */
#endif
#ifndef HDV
#define HDV 64 /* head size of v and out */
#endif
#ifndef QV
#define QV 16 /* width of the K / q vectors; divides HD */
#endif
#ifndef OV
#define OV 16 /* width of the V / output vectors; divides HDV */
#endif
#ifndef DRB
#define DRB 4 /* query rows per work-item */
#endif
#ifndef DWG
#define DWG 8 /* work-items per work-group */
#endif

#define DKT 16 /* keys per online-softmax tile (one float16 of scores per row) */
#define NQV (HD / QV)
#define NOVD (HDV / OV)
#define QVEC FLOATN(QV)
#define OVEC FLOATN(OV)

/* QV strided K elements d .. d + QV - 1 of the row at ke as a float vector
 * (scalar path). */
inline QVEC dec_gather_k(global const KVTYPE *p, long ke, long st, int d)
{
    float g[QV];
    for (int w = 0; w < QV; w++) g[w] = sdpa_kv_ld(p, ke, st, d + w);
    return VLOADN(QV)(0, g);
}

/* s[r][u] = q_r . K[j0 + u] for the tile's keys (KLOAD: the c-th QV-vector
 * of K row ke). */
#define DEC_QK(KLOAD)                                                 \
    {                                                                 \
        for (int r = 0; r < DRB; r++) {                               \
            global const float *qr = qp[r];                           \
            for (int u = 0; u < nt; u++) {                            \
                long ke = DEC_K_ROW(j0 + u);                          \
                QVEC acc = (QVEC)(0.0f);                              \
                SDPA_UNROLL for (int c = 0; c < NQV; c++)             \
                    acc = fma(VLOADN(QV)(c, qr), KLOAD, acc);         \
                s[r][u] = HSUMN(QV)(acc);                             \
            }                                                         \
        }                                                             \
    }

/* OV strided V elements c .. c + OV - 1 of the row at ve (scalar path). */
inline OVEC dec_gather_v(global const KVTYPE *p, long ve, long st, int c)
{
    float g[OV];
    for (int w = 0; w < OV; w++) g[w] = sdpa_kv_ld(p, ve, st, c + w);
    return VLOADN(OV)(0, g);
}

/* o[r][c] += sum over the tile's keys u of p[r][u] * V[u] for every row r,
 * one output vector c at a time: each loaded V vector feeds the DRB rows'
 * accumulators (VLOAD: the c-th OV-vector of V row ve; UPDATE: one
 * accumulation step of row r). */
#define DEC_PV(VLOAD, UPDATE)                                     \
    {                                                             \
        for (int c = 0; c < NOVD; c++) {                          \
            OVEC acc[DRB];                                        \
            SDPA_UNROLL for (int r = 0; r < DRB; r++) acc[r] = o[r][c]; \
            for (int u = 0; u < nt; u++) {                        \
                long ve = DEC_V_ROW(j0 + u);                      \
                OVEC vv = VLOAD;                                  \
                SDPA_UNROLL for (int r = 0; r < DRB; r++) {       \
                    float pu = p[r][u];                           \
                    acc[r] = UPDATE;                              \
                }                                                 \
            }                                                     \
            SDPA_UNROLL for (int r = 0; r < DRB; r++) o[r][c] = acc[r]; \
        }                                                         \
    }

__kernel __attribute__((reqd_work_group_size(DWG, 1, 1)))
void sdpa_decode(global const float *Qs,
                 SDPA_COMMON_ARGS, SDPA_KV_ARGS,
                 long nbhk, int nrb, int nsplit, int chunk,
                 global float *part_o, global float *part_l)
{
    long gid = get_global_id(0);
    int rb = (int)(gid % nrb);
    long t = gid / nrb;
    int split = (int)(t % nsplit);
    long bhk = t / nsplit;
    if (bhk >= nbhk) return;
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

    long lo[DRB], hi[DRB], ic[DRB];
    int hr[DRB];
    bool act[DRB];
    long ulo = Skv, uhi = 0;
    for (int r = 0; r < DRB; r++) {
        long rho = (long)rb * DRB + r;
        act[r] = rho < NR;
        sdpa_fold_row(rho, NR, hk, G, Sq, off, left, right, kvl, slo, shi, &hr[r], &ic[r],
                      &lo[r], &hi[r], &ulo, &uhi);
    }

    OVEC o[DRB][NOVD];
    float m[DRB], l[DRB];
    for (int r = 0; r < DRB; r++) {
        SDPA_SINK_INIT(m[r], l[r], hr[r], split == 0);
        SDPA_UNROLL for (int c = 0; c < NOVD; c++) o[r][c] = (OVEC)(0.0f);
    }
    global const float *qp[DRB];
    for (int r = 0; r < DRB; r++) qp[r] = Qs + ((b * Hq + hr[r]) * SqP + ic[r]) * HD;
    bool kvec = kxs.s3 == 1, vvec = vxs.s3 == 1;
    /* rows of key j: through the block table, or from the head's base */
#if KV_PAGED
#define DEC_K_ROW(j) SDPA_K_ROW(b, hk, (j))
#define DEC_V_ROW(j) SDPA_V_ROW(b, hk, (j))
#else
    const long kb = SDPA_K_ROW(b, hk, 0), vb = SDPA_V_ROW(b, hk, 0);
#define DEC_K_ROW(j) (kb + (j) * kxs.s2)
#define DEC_V_ROW(j) (vb + (j) * vxs.s2)
#endif

    for (long j0 = ulo; j0 < uhi; j0 += DKT) {
        int nt = (int)min((long)DKT, uhi - j0);
        float s[DRB][DKT];
        if (nt < DKT)
            for (int r = 0; r < DRB; r++)
                for (int u = nt; u < DKT; u++) s[r][u] = 0.0f;
        /* Scores, row by row: the tile's K rows (DKT x HD) stay in L1 after
         * the first row reads them. */
        if (kvec)
            DEC_QK(SDPA_KV_VLOADN(QV)(kx, ke, c * QV))
        else
            DEC_QK(dec_gather_k(kx, ke, kxs.s3, c * QV))
        /* Per key (DKT = 16 lanes): the score pipeline (prelude.cl) on the
         * band's keys; then
         * one rescale. Lanes past nt hold 0 and are dropped. */
        float p[DRB][DKT];
        bool full[DRB], live[DRB]; /* every lane kept / some lane kept */
        const int16 lane = (int16)(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
        for (int r = 0; r < DRB; r++) {
            float16 x = vload16(0, s[r]);
            x = SDPA_SCORE_CAP(float16, x);
            int a0 = (int)clamp(lo[r] - j0, (long)-1, (long)DKT);
            int a1 = (int)clamp(min(hi[r], j0 + nt) - j0, (long)-1, (long)DKT);
            int16 keep = (lane >= (int16)(a0)) & (lane < (int16)(a1));
#if HAS_MASK || HAS_BIAS || HAS_ALIBI
            if (any(keep)) {
                float xs[DKT];
                int ks_[DKT];
                vstore16(x, 0, xs);
                vstore16(keep, 0, ks_);
                for (int u = a0 < 0 ? 0 : a0; u < a1; u++) {
                    long j = j0 + u;
                    bool kp = true;
                    xs[u] = SDPA_SCORE_TERMS(xs[u], &kp, b, hr[r], ic[r], j);
                    ks_[u] = kp ? -1 : 0;
                }
                x = vload16(0, xs);
                keep = vload16(0, ks_);
            }
#endif
            full[r] = all(keep);
            live[r] = any(keep);
            x = select((float16)(SDPA_NEG_INF), x, keep);
            float tmax = any(isnan(x)) ? NAN : HMAXN(16)(x);
            if (tmax != SDPA_NEG_INF) {
                float mn = isnan(tmax) ? tmax : fmax(m[r], tmax);
                float alpha = mn == m[r] ? 1.0f : exp(m[r] - mn);
                float16 e = exp(x - (float16)(mn));
                vstore16(e, 0, p[r]);
                l[r] = fma(l[r], alpha, HSUMN(16)(e));
                if (alpha != 1.0f)
                    SDPA_UNROLL for (int c = 0; c < NOVD; c++) o[r][c] *= alpha;
                m[r] = mn;
            } else {
                vstore16((float16)(0.0f), 0, p[r]);
            }
        }
        /* P V. Where some row of the tile drops a key, select, never
         * multiply, where p == 0 (so NaN/Inf in V there cannot reach it). */
        bool sel = false, any_live = false;
        for (int r = 0; r < DRB; r++) {
            sel = sel || (live[r] && !full[r]);
            any_live = any_live || live[r];
        }
        if (any_live) {
            if (vvec && !sel)
                DEC_PV(SDPA_KV_VLOADN(OV)(vx, ve, c * OV), fma((OVEC)(pu), vv, acc[r]))
            else if (vvec)
                DEC_PV(SDPA_KV_VLOADN(OV)(vx, ve, c * OV),
                       pu != 0.0f ? fma((OVEC)(pu), vv, acc[r]) : acc[r])
            else
                DEC_PV(dec_gather_v(vx, ve, vxs.s3, c * OV),
                       pu != 0.0f ? fma((OVEC)(pu), vv, acc[r]) : acc[r])
        }
    }

    for (int r = 0; r < DRB; r++) {
        if (!act[r]) continue;
        float inv = l[r] == 0.0f ? 0.0f : 1.0f / l[r];
        long pr = (long)split * R + ((b * Hq + hr[r]) * Sq + ic[r]);
        SDPA_UNROLL for (int c = 0; c < NOVD; c++)
            VSTOREN(OV)(o[r][c] * inv, c, part_o + pr * HDV);
        part_l[pr] = l[r] == 0.0f ? SDPA_NEG_INF : m[r] + log(l[r]);
    }
}
