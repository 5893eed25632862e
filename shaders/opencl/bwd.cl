/*
 * bwd.cl — fused attention backward, FlashAttention-2 style, with no atomics
 * (results are bit-identical from run to run).
 *
 *   sdpa_bwd_prep:  Lp[r] = lse of row r, Dsum[r] = sum_c dO[r,c] * O[r,c]
 *                   (rows padded per head to SqP: padding has -inf / 0);
 *                   with sinks also the row's -p_sink * Dsum for dsinks.
 * With sinks the lse is sink-inclusive, so p = exp(s - lse) below is the
 * sink-inclusive P and dS = P o (dP - D) needs nothing more; ALiBi is a
 * constant of the score (prelude.cl's pipeline), no gradient.
 *   sdpa_bwd_dq:    RPW query rows per work-item: recomputes p = exp(s - lse)
 *                   over the row's kept keys, dS = p * (dP - Dsum) (times the
 *                   cap's derivative: SDPA_SCORE_CAP_D), dq^ = scale * sum_j dS_j k^_j; then
 *                   the QK-norm backward gives dq, and per-row partials of the
 *                   q gain and temperature gradients go to workspace.
 *   sdpa_bwd_dkdv:  min(RPW, 2) keys per work-item: loops over the query heads that
 *                   share its KV head and over the query rows that can see
 *                   the key (band-aware), accumulating dv = sum p dO and
 *                   dk^ = sum dS (scale q^); then the norm backward.
 *   sdpa_reduce_cols: sums per-row partials column by column in a fixed
 *                   order (dq_gain, dk_gain, dtemperature, dsinks).
 *
 * Packed inputs (pack.cl; rows padded to SqP / SkvP with zeros): Qs and Qst
 * (q^ * scale, row-major and feature-major), Kp and Kt (k^; Kt in the
 * forward's tile-major layout with KT-key tiles), Vp and Vt, dOp and dOt.
 * Invariants: f32 accumulation; rows with lse = -inf contribute nothing;
 * dropped keys (a -inf score included, whatever the LSE) contribute exactly
 * nothing: their p and dS are selected to 0 and skipped in the dq, dk and dv
 * sums (never multiplied), so NaN/Inf stored in K or V at a dropped key
 * cannot reach dq, nor NaN/Inf in q or dO of a row reach the dk, dv of keys
 * the row drops. Called by cl_backward.c
 * with local size (WG, 1, 1).
 */

#ifndef HD
#define HD 64 /* head size of q and k */
#endif
#ifndef HDV
#define HDV 64 /* head size of v */
#endif
#ifndef WG
#define WG 8 /* work-items per work-group */
#endif
#ifndef KT
#define KT 16 /* forward key tile; the backward uses min(KT, 16) rows/keys per tile */
#endif
#ifndef OV
#define OV 16 /* vector width over HDV; divides HDV */
#endif
#ifndef QV
#define QV 16 /* vector width over HD; divides HD */
#endif
#ifndef BWD_FA2
#define BWD_FA2 0 /* 1 = sdpa_bwd_dq / sdpa_bwd_dkdv come from bwd_fa2.cl (GPU-class) */
#endif
#ifndef NORM
#define NORM 0 /* QK-norm: 0 none, 1 RMS, 2 layer, 3 L2 */
#endif

/* The backward walks tiles of at most 16 rows/keys (one vector). */
#if KT > 16
#define BKT 16
#else
#define BKT KT
#endif
#define TVEC FLOATN(BKT)
#define QVEC FLOATN(QV)
#define OVEC FLOATN(OV)
#define NQV (HD / QV)
#define NOV (HDV / OV)

__kernel void sdpa_bwd_prep(global const STYPE *dout, long d_off, long4 ds,
                            global const STYPE *out, long o_off, long4 os,
                            global const float *lse, long l_off, long4 ls,
                            long RP, int Hq, int Sq, int SqP,
                            global float *Lp, global float *Dsum,
                            global const float *sinks, long sk_off, long sk_st,
                            global float *dsp)
{
    long r = get_global_id(0); /* over B * Hq * SqP: padding rows get -inf / 0 */
    if (r >= RP) return;
    long bh = r / SqP, i = r % SqP;
    long b = bh / Hq, h = bh % Hq;
    (void)sinks; (void)sk_off; (void)sk_st; (void)dsp;
    if (i >= Sq) {
        Lp[r] = SDPA_NEG_INF;
        Dsum[r] = 0.0f;
#if HAS_SINKS
        dsp[(b * SqP + i) * Hq + h] = 0.0f;
#endif
        return;
    }
    long db = d_off + b * ds.s0 + h * ds.s1 + i * ds.s2;
    long ob = o_off + b * os.s0 + h * os.s1 + i * os.s2;
    float acc = 0.0f;
    for (int c = 0; c < HDV; c++)
        acc = fma(LD(dout, db + c * ds.s3), LD(out, ob + c * os.s3), acc);
    Dsum[r] = acc;
    float L = lse[l_off + b * ls.s0 + h * ls.s1 + i * ls.s2];
    Lp[r] = L;
#if HAS_SINKS
    /* d sink_h = -sum_{b,i} p_sink D (p_sink = e^{sink - lse}; 0 without a
     * sink), summed per head by sdpa_reduce_cols over (b, i) rows */
    float sk = sinks[sk_off + h * sk_st];
    dsp[(b * SqP + i) * Hq + h] = sk == SDPA_NEG_INF ? 0.0f : -exp(sk - L) * acc;
#endif
}

/* QK-norm backward on one row: g[] holds dL/dx^ (x^ = gain * n(x)) on entry
 * and dL/dx on exit; part (if non-NULL) receives dL/dx^ * n(x). */
inline void sdpa_norm_back(float *g, global const STYPE *x, long base, long st,
                           global const float *gain, long g_off, long g_st,
                           int has_gain, float eps, global float *part)
{
    float mean;
    float rn = sdpa_norm_params(x, base, st, HD, NORM, eps, &mean);
    float un = 0.0f, usum = 0.0f;
    for (int d = 0; d < HD; d++) {
        float n = (LD(x, base + d * st) - mean) * rn;
        if (part) part[d] = g[d] * n;
        float u = has_gain ? g[d] * gain[g_off + d * g_st] : g[d];
        g[d] = u;
        un = fma(u, n, un);
        usum += u;
    }
#if NORM == 0
    (void)un; (void)usum;
#else
#if NORM == 3
    float k = un;
#else
    float k = un / (float)HD;
#endif
    float mu = NORM == 2 ? usum / (float)HD : 0.0f;
    for (int d = 0; d < HD; d++) {
        float n = (LD(x, base + d * st) - mean) * rn;
        g[d] = rn * (g[d] - mu - n * k);
    }
#endif
}

#ifndef RPW
#define RPW 1 /* query rows per work-item in the dQ pass (register blocking) */
#endif
/* Keys per work-item in the dK/dV pass (two accumulator sets per key). */
#if RPW > 2
#define KPW 2
#else
#define KPW RPW
#endif
#define BWD_PER_KEY (HAS_MASK || HAS_BIAS || HAS_ALIBI)

#if !BWD_FA2 /* GPU-class plans take bwd_fa2.cl's dQ and dK/dV kernels instead */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sdpa_bwd_dq(global const float *Qs, global const float *Kt, global const float *Kp,
                 global const float *Vt, global const float *dOp,
                 global const float *Lp, global const float *Dsum,
                 SDPA_COMMON_ARGS,
                 global const STYPE *q, long q_off, long4 qs, float eps,
                 global const float *gain, long g_off, long g_st, int has_gain,
                 global const float *temp, long t_off, long t_st, int has_temp,
                 float scale,
                 global STYPE *dq, long dq_off, long4 dqs,
                 global float *gpart, global float *tpart)
{
    long ibase = ((long)get_group_id(0) * WG + get_local_id(0)) * RPW;
    long bh = get_group_id(1);
    long b = bh / Hq;
    int h = (int)(bh % Hq);
    long bhk = b * Hkv + h / (Hq / Hkv);
    long kvl = SDPA_KV_LEN(b);
    long off = sdpa_diag_off(diag, diag_off, kvl, Sq);
    SDPA_COMMON_UNUSED;

    long lo[RPW], hi[RPW], ic[RPW];
    bool act[RPW];
    float L[RPW], Dd[RPW];
    global const float *qrow[RPW];
    global const float *grow[RPW];
    long ulo = Skv, uhi = 0;
    SDPA_UNROLL for (int r = 0; r < RPW; r++) {
        act[r] = ibase + r < Sq;
        ic[r] = act[r] ? ibase + r : Sq - 1;
        sdpa_row_range(ic[r], off, left, right, kvl, &lo[r], &hi[r]);
        L[r] = Lp[bh * SqP + ic[r]];
        Dd[r] = Dsum[bh * SqP + ic[r]];
        if (!act[r] || L[r] == SDPA_NEG_INF) hi[r] = lo[r]; /* empty row: no gradient */
        if (lo[r] < hi[r]) {
            ulo = min(ulo, lo[r]);
            uhi = max(uhi, hi[r]);
        }
        qrow[r] = Qs + (bh * SqP + ic[r]) * HD;
        grow[r] = dOp + (bh * SqP + ic[r]) * HDV;
    }
    QVEC acc[RPW][NQV];
    float tacc[RPW];
    SDPA_UNROLL for (int r = 0; r < RPW; r++) {
        tacc[r] = 0.0f;
        SDPA_UNROLL for (int c = 0; c < NQV; c++) acc[r][c] = (QVEC)(0.0f);
    }
    global const float *kt = Kt + bhk * HD * SDPA_PAD64(Skv);
    global const float *vt = Vt + bhk * HDV * SkvP;
    global const float *kp = Kp + bhk * SkvP * HD;

    for (long j0 = ulo / BKT * BKT; j0 < uhi; j0 += BKT) {
        TVEC s[RPW], dp[RPW];
        SDPA_UNROLL for (int r = 0; r < RPW; r++) s[r] = dp[r] = (TVEC)(0.0f);
        for (int d = 0; d < HD; d++) {
            TVEC kv = VLOADN(BKT)(0, kt + ((j0 / KT) * HD + d) * KT + j0 % KT);
            SDPA_UNROLL for (int r = 0; r < RPW; r++) s[r] = fma((TVEC)(qrow[r][d]), kv, s[r]);
        }
        for (int c = 0; c < HDV; c++) {
            TVEC vv = VLOADN(BKT)(0, vt + c * SkvP + j0);
            SDPA_UNROLL for (int r = 0; r < RPW; r++) dp[r] = fma((TVEC)(grow[r][c]), vv, dp[r]);
        }
        float dsv[RPW][BKT];
        SDPA_UNROLL for (int r = 0; r < RPW; r++) {
            if (j0 + BKT <= lo[r] || j0 >= hi[r]) {
                for (int t = 0; t < BKT; t++) dsv[r][t] = 0.0f;
            } else if (BWD_PER_KEY || j0 < lo[r] || j0 + BKT > hi[r]) {
                float sv[BKT], dpv[BKT];
                VSTOREN(BKT)(s[r], 0, sv);
                VSTOREN(BKT)(dp[r], 0, dpv);
                for (int t = 0; t < BKT; t++) {
                    long j = j0 + t;
                    bool keep = j >= lo[r] && j < hi[r];
                    float dsx = 0.0f;
                    if (keep) {
                        float x = sv[t], dcap = 1.0f;
                        SDPA_SCORE_CAP_D(float, x, dcap);
                        x = SDPA_SCORE_TERMS(x, &keep, b, h, ic[r], j);
                        /* a -inf score drops the key, whatever the LSE */
                        float p = x != SDPA_NEG_INF ? exp(x - L[r]) : 0.0f;
                        /* p == 0 (-inf bias): dP may hold V's garbage */
                        dsx = p != 0.0f ? p * (dpv[t] - Dd[r]) * dcap : 0.0f;
                        if (dsx != 0.0f) tacc[r] = fma(dsx, sv[t], tacc[r]);
                    }
                    dsv[r][t] = dsx;
                }
            } else {
                TVEC x = s[r], dcap = (TVEC)(1.0f);
                SDPA_SCORE_CAP_D(TVEC, x, dcap);
                /* a -inf score (an infinite q or k) drops its key: p and dS
                 * exactly 0 even under a NaN LSE or a NaN dP */
                TVEC p = select((TVEC)(0.0f), exp(x - (TVEC)(L[r])),
                                isnotequal(x, (TVEC)(SDPA_NEG_INF)));
                TVEC dsx = select((TVEC)(0.0f), p * (dp[r] - (TVEC)(Dd[r])) * dcap,
                                  isnotequal(p, (TVEC)(0.0f)));
                tacc[r] += HSUMN(BKT)(select((TVEC)(0.0f), dsx * s[r],
                                             isnotequal(dsx, (TVEC)(0.0f))));
                VSTOREN(BKT)(dsx, 0, dsv[r]);
            }
        }
        /* dq += dS k; select instead of multiplying so NaN/Inf in K at
         * dropped keys (dS == 0) cannot reach dq (in any tile: an infinite
         * score drops its key wherever it lies) */
        for (int t = 0; t < BKT; t++) {
            SDPA_UNROLL for (int c = 0; c < NQV; c++) {
                QVEC kk = VLOADN(QV)(c, kp + (j0 + t) * HD);
                SDPA_UNROLL for (int r = 0; r < RPW; r++)
                    acc[r][c] = dsv[r][t] != 0.0f ? fma((QVEC)(dsv[r][t]), kk, acc[r][c])
                                                  : acc[r][c];
            }
        }
    }

    float mul = has_temp ? temp[t_off + h * t_st] : scale;
    SDPA_UNROLL for (int r = 0; r < RPW; r++) {
        if (!act[r]) continue;
        long i = ic[r];
        float g[HD];
        SDPA_UNROLL for (int c = 0; c < NQV; c++) VSTOREN(QV)(acc[r][c] * mul, c, g);
        long qb = q_off + b * qs.s0 + h * qs.s1 + i * qs.s2;
        sdpa_norm_back(g, q, qb, qs.s3, gain, g_off, g_st, has_gain, eps,
                       has_gain ? gpart + (bh * Sq + i) * HD : (global float *)0);
        long ob = dq_off + b * dqs.s0 + h * dqs.s1 + i * dqs.s2;
        for (int d = 0; d < HD; d++) ST(dq, ob + d * dqs.s3, g[d]);
        if (has_temp) tpart[(b * Sq + i) * Hq + h] = tacc[r] / mul;
    }
}

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sdpa_bwd_dkdv(global const float *Qs, global const float *Qst,
                   global const float *Kp, global const float *Vp,
                   global const float *dOp, global const float *dOt,
                   global const float *Lp, global const float *Dsum,
                   SDPA_COMMON_ARGS,
                   global const STYPE *k, long k_off, long4 ks, float eps,
                   global const float *gain, long g_off, long g_st, int has_gain,
                   global STYPE *dk, long dk_off, long4 dks,
                   global STYPE *dv, long dv_off, long4 dvs,
                   global float *gpart)
{
    long jbase = ((long)get_group_id(0) * WG + get_local_id(0)) * KPW;
    long bhk = get_group_id(1);
    long b = bhk / Hkv;
    int hk = (int)(bhk % Hkv);
    int G = Hq / Hkv;
    long kvl = SDPA_KV_LEN(b);
    long off = sdpa_diag_off(diag, diag_off, kvl, Sq);
    SDPA_COMMON_UNUSED;

    /* Rows that can see key j: i in [ilo, ihi) (exact, from the band). */
    long ilo[KPW], ihi[KPW], jc[KPW];
    bool act[KPW];
    global const float *krow[KPW];
    global const float *vrow[KPW];
    long ulo = Sq, uhi = 0;
    SDPA_UNROLL for (int e = 0; e < KPW; e++) {
        long j = jbase + e;
        act[e] = j < Skv;
        jc[e] = act[e] ? j : Skv - 1;
        ilo[e] = 0;
        ihi[e] = Sq;
        if (right >= 0) ilo[e] = max(ilo[e], jc[e] - off - right);
        if (left >= 0) ihi[e] = min(ihi[e], jc[e] - off + left + 1);
        if (!act[e] || jc[e] >= kvl || ihi[e] < ilo[e]) ihi[e] = ilo[e];
        if (ilo[e] < ihi[e]) {
            ulo = min(ulo, ilo[e]);
            uhi = max(uhi, ihi[e]);
        }
        krow[e] = Kp + (bhk * SkvP + jc[e]) * HD;
        vrow[e] = Vp + (bhk * SkvP + jc[e]) * HDV;
    }
    QVEC ka[KPW][NQV];
    OVEC va[KPW][NOV];
    SDPA_UNROLL for (int e = 0; e < KPW; e++) {
        SDPA_UNROLL for (int c = 0; c < NQV; c++) ka[e][c] = (QVEC)(0.0f);
        SDPA_UNROLL for (int c = 0; c < NOV; c++) va[e][c] = (OVEC)(0.0f);
    }

    for (int hh = 0; hh < G; hh++) {
        int h = hk * G + hh;
        long bh = b * Hq + h;
        global const float *qst = Qst + bh * HD * SqP;
        global const float *dot = dOt + bh * HDV * SqP;
        global const float *qsp = Qs + bh * SqP * HD;
        global const float *dop = dOp + bh * SqP * HDV;
        global const float *lp = Lp + bh * SqP;
        global const float *dsp = Dsum + bh * SqP;
        for (long i0 = ulo / BKT * BKT; i0 < uhi; i0 += BKT) {
            TVEC s[KPW], dp[KPW];
            SDPA_UNROLL for (int e = 0; e < KPW; e++) s[e] = dp[e] = (TVEC)(0.0f);
            for (int d = 0; d < HD; d++) {
                TVEC qv = VLOADN(BKT)(0, qst + d * SqP + i0);
                SDPA_UNROLL for (int e = 0; e < KPW; e++) s[e] = fma((TVEC)(krow[e][d]), qv, s[e]);
            }
            for (int c = 0; c < HDV; c++) {
                TVEC gv = VLOADN(BKT)(0, dot + c * SqP + i0);
                SDPA_UNROLL for (int e = 0; e < KPW; e++) dp[e] = fma((TVEC)(vrow[e][c]), gv, dp[e]);
            }
            TVEC Lv = VLOADN(BKT)(0, lp + i0), Dv = VLOADN(BKT)(0, dsp + i0);
            float pv[KPW][BKT], dsv[KPW][BKT];
            SDPA_UNROLL for (int e = 0; e < KPW; e++) {
                if (i0 + BKT <= ilo[e] || i0 >= ihi[e]) {
                    for (int t = 0; t < BKT; t++) pv[e][t] = dsv[e][t] = 0.0f;
                } else if (BWD_PER_KEY || i0 < ilo[e] || i0 + BKT > ihi[e]) {
                    float sv[BKT], dpv[BKT];
                    VSTOREN(BKT)(s[e], 0, sv);
                    VSTOREN(BKT)(dp[e], 0, dpv);
                    for (int t = 0; t < BKT; t++) {
                        long i = i0 + t;
                        float L = lp[i];
                        bool keep = i >= ilo[e] && i < ihi[e] && L != SDPA_NEG_INF;
                        float p = 0.0f, dsx = 0.0f;
                        if (keep) {
                            float x = sv[t], dcap = 1.0f;
                            SDPA_SCORE_CAP_D(float, x, dcap);
                            x = SDPA_SCORE_TERMS(x, &keep, b, h, i, jc[e]);
                            p = x != SDPA_NEG_INF ? exp(x - L) : 0.0f;
                            dsx = p != 0.0f ? p * (dpv[t] - dsp[i]) * dcap : 0.0f;
                        }
                        pv[e][t] = p;
                        dsv[e][t] = dsx;
                    }
                } else {
                    TVEC x = s[e], dcap = (TVEC)(1.0f);
                    SDPA_SCORE_CAP_D(TVEC, x, dcap);
                    /* rows with lse = -inf (empty) and -inf scores get p = 0 */
                    TVEC p = select((TVEC)(0.0f), exp(x - Lv),
                                    isgreater(Lv, (TVEC)(SDPA_NEG_INF)) &
                                        isnotequal(x, (TVEC)(SDPA_NEG_INF)));
                    TVEC dsx = select((TVEC)(0.0f), p * (dp[e] - Dv) * dcap,
                                      isnotequal(p, (TVEC)(0.0f)));
                    VSTOREN(BKT)(p, 0, pv[e]);
                    VSTOREN(BKT)(dsx, 0, dsv[e]);
                }
            }
            /* select, don't multiply: a row that drops the key (p = dS = 0)
             * must not bring its NaN/Inf dO or q along */
            for (int t = 0; t < BKT; t++) {
                SDPA_UNROLL for (int c = 0; c < NOV; c++) {
                    OVEC oo = VLOADN(OV)(c, dop + (i0 + t) * HDV);
                    SDPA_UNROLL for (int e = 0; e < KPW; e++)
                        va[e][c] = pv[e][t] != 0.0f ? fma((OVEC)(pv[e][t]), oo, va[e][c])
                                                    : va[e][c];
                }
                SDPA_UNROLL for (int c = 0; c < NQV; c++) {
                    QVEC qq = VLOADN(QV)(c, qsp + (i0 + t) * HD);
                    SDPA_UNROLL for (int e = 0; e < KPW; e++)
                        ka[e][c] = dsv[e][t] != 0.0f ? fma((QVEC)(dsv[e][t]), qq, ka[e][c])
                                                     : ka[e][c];
                }
            }
        }
    }

    SDPA_UNROLL for (int e = 0; e < KPW; e++) {
        if (!act[e]) continue;
        long j = jc[e];
        float g[HD];
        SDPA_UNROLL for (int c = 0; c < NQV; c++) VSTOREN(QV)(ka[e][c], c, g);
        long kb = k_off + b * ks.s0 + hk * ks.s1 + j * ks.s2;
        sdpa_norm_back(g, k, kb, ks.s3, gain, g_off, g_st, has_gain, eps,
                       has_gain ? gpart + (bhk * Skv + j) * HD : (global float *)0);
        long okb = dk_off + b * dks.s0 + hk * dks.s1 + j * dks.s2;
        for (int d = 0; d < HD; d++) ST(dk, okb + d * dks.s3, g[d]);
        long ovb = dv_off + b * dvs.s0 + hk * dvs.s1 + j * dvs.s2;
        SDPA_UNROLL for (int c = 0; c < NOV; c++) {
            float vv[OV];
            VSTOREN(OV)(va[e][c], 0, vv);
            for (int x = 0; x < OV; x++) ST(dv, ovb + (c * OV + x) * dvs.s3, vv[x]);
        }
    }
}
#endif /* !BWD_FA2 */

__kernel void sdpa_reduce_cols(global const float *part, long nrows, int ncols,
                               global float *dst, long d_off, long d_st)
{
    int c = get_global_id(0);
    if (c >= ncols) return;
    float acc = 0.0f;
    for (long r = 0; r < nrows; r++) acc += part[r * ncols + c];
    dst[d_off + c * d_st] = acc;
}
