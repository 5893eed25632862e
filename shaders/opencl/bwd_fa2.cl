/*
 * bwd_fa2.cl — attention backward for GPU-class devices in the
 * FlashAttention-2 structure (issue 17; docs/opencl.md, "GPU-class
 * backward"). Replaces bwd.cl's sdpa_bwd_dq and sdpa_bwd_dkdv (same names
 * and arguments, so cl_backward.c launches either; bwd.cl is assembled
 * before this file with BWD_FA2=1 and keeps sdpa_bwd_prep, which
 * precomputes D = rowsum(dO * O) and copies the LSE). CPU devices (PoCL)
 * keep bwd.cl's kernels. cl_plan.c (fa2_plan) takes these kernels on
 * GPU-class devices when the plan has no QK-norm, gains or temperature
 * (their gradients stay bwd.cl's).
 *
 *   sdpa_bwd_dkdv: a work-group owns FBC keys of one (batch, KV head). Its
 *     K and V rows are staged in local memory once; for each query head
 *     sharing the KV head and each tile of FKR query rows that can see the
 *     keys (band-aware), the Q and dO tiles (with LSE and D) are staged with
 *     float4 loads, S = K Q^T and dP = V dO^T are computed one element per
 *     work-item step, then P and dS = P (dP - D) (times the cap's
 *     derivative) go to local memory and each work-item accumulates its
 *     float4 pieces of dV += P dO and dK += dS Q in registers.
 *   sdpa_bwd_dq: the second pass, deterministic (no float atomics): a
 *     work-group owns FBR query rows of one (batch, query head), stages their
 *     q and dO once, walks tiles of FQK kept keys (K and V staged), recomputes
 *     P and dS the same way and accumulates dq = scale * dS K.
 *
 * Inputs are bwd.cl's packed buffers (pack.cl: q^ * scale, k^, v, dout as
 * rows, zero-padded to SqP / SkvP); the unused ones (transposed copies, norm
 * and gain arguments) keep the signatures equal. Invariants (bwd.cl's):
 * f32 accumulation; rows with lse = -inf contribute nothing; a dropped key
 * (band, kv_len, mask, -inf bias, -inf score) has p = dS = 0 and is
 * selected out of every sum, never multiplied, so NaN/Inf stored at dropped
 * keys or rows cannot reach other gradients; every sum runs in a fixed
 * order, so reruns are bit-identical. Needs HD and HDV multiples of 4 and
 * the work splits below to divide (the plan checks).
 */

#ifndef FBR
#define FBR 16 /* dQ pass: query rows per work-group */
#endif
#ifndef FQK
#define FQK 32 /* dQ pass: keys per tile */
#endif
#ifndef FBC
#define FBC 8 /* dK/dV pass: keys per work-group */
#endif
#ifndef FKR
#define FKR 32 /* dK/dV pass: query rows per tile */
#endif

#define FQ4 (HD / 4)  /* float4 pieces of a q / k row */
#define FV4 (HDV / 4) /* float4 pieces of a v / dO row */
#define FLQ (HD + 4)  /* local row strides (padded: no bank conflicts) */
#define FLV (HDV + 4)
#define F_NDQ (FBR * FQ4 / WG) /* dq float4 accumulators per work-item */
#define F_NSQ ((FBR * FQK + WG - 1) / WG) /* dQ pass scores per work-item (at most) */
#define F_NDK (FBC * FQ4 / WG) /* dk float4 accumulators per work-item */
#define F_NDV (FBC * FV4 / WG) /* dv float4 accumulators per work-item */
#define F_NSK ((FBC * FKR + WG - 1) / WG) /* dK/dV pass scores per work-item (at most) */
#if (FBR * FQ4) % WG || (FBC * FQ4) % WG || (FBC * FV4) % WG
#error "bwd_fa2.cl: the work split does not divide (cl_plan.c fa2_plan)"
#endif
#if FBR > WG || FKR > WG
#error "bwd_fa2.cl: one work-item per row loads L and D: FBR and FKR must not exceed WG"
#endif

/* Loop unrolling: fully unrolled, clang's AMD back end issues every local
 * read of the dot products and accumulations at once and spills (256 VGPRs
 * and 3.8 KB of spills per lane at D = 128 on gfx1030); so the loops over
 * D are unrolled by 4, those over a tile's keys or rows step by 4 and the
 * per-element score loops are not unrolled. */
#define FA2_PARTIAL _Pragma("unroll 4")
#define FA2_ACCUM_UNROLL _Pragma("unroll 1") /* steps of 4 keys / rows already */
#define FA2_ROLLED _Pragma("unroll 1")

/* Stages rows [0, nv) of a packed row-major array (n4 float4 per row) at
 * local row stride ls; rows nv..n are 0. */
inline void fa2_stage(local float *dst, global const float *src, int n, int n4, int ls, int nv)
{
    for (int e = get_local_id(0); e < n * n4; e += WG) {
        int r = e / n4, c = e % n4;
        float4 x = r < nv ? vload4(c, src + (long)r * n4 * 4) : (float4)(0.0f);
        vstore4(x, 0, dst + r * ls + c * 4);
    }
}

/* Row dot products a . b over n4 float4 pieces of local rows. */
inline float fa2_dot(local const float *a, local const float *b, int n4)
{
    float4 s = (float4)(0.0f);
    FA2_PARTIAL for (int c = 0; c < n4; c++) s = fma(vload4(c, a), vload4(c, b), s);
    return HSUMN(4)(s);
}

/* P and dS of row i (query index ii, head h) against key jj: the score
 * pipeline (prelude.cl) on the raw score s, p = exp(x - L) and
 * dS = p (dP - D) times the cap's derivative; both 0 where the key is
 * dropped (kept = the band / kv_len / row tests). */
#define FA2_PDS(s, dp, kept, L, Dd, b, h, ii, jj, p, ds)                     \
    {                                                                        \
        p = 0.0f;                                                            \
        ds = 0.0f;                                                           \
        bool keep_ = (kept);                                                 \
        if (keep_) {                                                         \
            float x_ = (s), dcap = 1.0f;                                     \
            SDPA_SCORE_CAP_D(float, x_, dcap);                               \
            x_ = SDPA_SCORE_TERMS(x_, &keep_, b, h, ii, jj);                 \
            p = x_ != SDPA_NEG_INF ? exp(x_ - (L)) : 0.0f;                   \
            ds = p != 0.0f ? p * ((dp) - (Dd)) * dcap : 0.0f;                \
        }                                                                    \
    }

/* FA2_PDS for the element of q / dO rows qr, dor (query index ii) and K /
 * V rows kr, vr (key jj), with the row's kept range from the band; `valid`:
 * both lie inside the staged tiles. Uses the kernel's b, h, off, left,
 * right, kvl. */
#define FA2_ELEMENT(qr, kr, dor, vr, ii, jj, valid, L, Dd, p, ds)                 \
    {                                                                            \
        long lo_, hi_;                                                           \
        sdpa_row_range(ii, off, left, right, kvl, &lo_, &hi_);                   \
        float s_ = fa2_dot(qr, kr, FQ4), dp_ = fa2_dot(dor, vr, FV4);            \
        FA2_PDS(s_, dp_, (valid) && (jj) >= lo_ && (jj) < hi_ && (L) != SDPA_NEG_INF, \
                L, Dd, b, h, ii, jj, p, ds);                                     \
    }

/* acc[x] += sum over t < NT of w_l[r * NT + t] * src_l[t * LS + 4 c ..] for
 * the work-item's N float4 accumulators (element lid + x WG: row r, piece c
 * of W4 per row), selecting (never multiplying) where the weight is 0. The
 * weights are read 4 at a time (NT is a multiple of 4). */
#define FA2_ACC1(a, w, row) a = (w) != 0.0f ? fma((float4)(w), vload4(c_, row), a) : a
#define FA2_ACCUM(acc, N, W4, w_l, NT, src_l, LS)                                \
    SDPA_UNROLL for (int x = 0; x < (N); x++) {                                  \
        int e_ = lid + x * WG, r_ = e_ / (W4), c_ = e_ % (W4);                   \
        FA2_ACCUM_UNROLL for (int t = 0; t < (NT); t += 4) {                     \
            float4 w_ = vload4(0, (w_l) + r_ * (NT) + t);                        \
            FA2_ACC1(acc[x], w_.s0, (src_l) + t * (LS));                         \
            FA2_ACC1(acc[x], w_.s1, (src_l) + (t + 1) * (LS));                   \
            FA2_ACC1(acc[x], w_.s2, (src_l) + (t + 2) * (LS));                   \
            FA2_ACC1(acc[x], w_.s3, (src_l) + (t + 3) * (LS));                   \
        }                                                                        \
    }

/* Stores the N accumulators (times mul) of rows r < nv, row r at element
 * base + r * s2 of a gradient with element stride s3. */
#define FA2_STORE(acc, N, W4, nv, dst, base, s2, s3, mul)                       \
    SDPA_UNROLL for (int x = 0; x < (N); x++) {                                  \
        int e_ = lid + x * WG, r_ = e_ / (W4), c_ = e_ % (W4);                   \
        if (r_ < (nv))                                                           \
            fa2_store4(dst, (base) + r_ * (s2) + (long)c_ * 4 * (s3), s3, acc[x] * (mul)); \
    }

/* Stores a float4 of gradients at element e of a strided row. */
inline void fa2_store4(global STYPE *dst, long e, long st, float4 g)
{
    ST(dst, e, g.s0);
    ST(dst, e + st, g.s1);
    ST(dst, e + 2 * st, g.s2);
    ST(dst, e + 3 * st, g.s3);
}

/* Arguments: exactly bwd.cl's sdpa_bwd_dq (cl_backward.c sets them once
 * for either kernel). */
__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void sdpa_bwd_dq(global const float *Qs, global const float *Kt, global const float *Kp,
                 global const float *Vt /* here V as rows (cl_backward.c) */,
                 global const float *dOp,
                 global const float *Lp, global const float *Dsum,
                 SDPA_COMMON_ARGS,
                 global const STYPE *q, long q_off, long4 qs, float eps,
                 global const float *gain, long g_off, long g_st, int has_gain,
                 global const float *temp, long t_off, long t_st, int has_temp,
                 float scale,
                 global STYPE *dq, long dq_off, long4 dqs,
                 global float *gpart, global float *tpart)
{
    local float q_l[FBR * FLQ], do_l[FBR * FLV], k_l[FQK * FLQ], v_l[FQK * FLV];
    local float ds_l[FBR * FQK], L_l[FBR], D_l[FBR];
    (void)Kt; (void)q; (void)q_off; (void)qs; (void)eps; (void)gain; (void)g_off;
    (void)g_st; (void)has_gain; (void)temp; (void)t_off; (void)t_st; (void)has_temp;
    (void)gpart; (void)tpart;
    SDPA_COMMON_UNUSED;
    const int lid = (int)get_local_id(0);
    const long i0 = (long)get_group_id(0) * FBR;
    const long bh = get_group_id(1);
    const long b = bh / Hq;
    const int h = (int)(bh % Hq);
    const long bhk = b * Hkv + h / (Hq / Hkv);
    if (i0 >= Sq) return; /* the whole work-group */
    const long kvl = SDPA_KV_LEN(b);
    const long off = sdpa_diag_off(diag, diag_off, kvl, Sq);
    const int nr = (int)min((long)FBR, Sq - i0);
    /* kept keys of the rows: [lo of the first row, hi of the last) */
    long ulo, uhi, t0, t1;
    sdpa_row_range(i0, off, left, right, kvl, &ulo, &t0);
    sdpa_row_range(i0 + nr - 1, off, left, right, kvl, &t1, &uhi);
    fa2_stage(q_l, Qs + (bh * SqP + i0) * HD, FBR, FQ4, FLQ, nr);
    fa2_stage(do_l, dOp + (bh * SqP + i0) * HDV, FBR, FV4, FLV, nr);
    if (lid < FBR) {
        L_l[lid] = lid < nr ? Lp[bh * SqP + i0 + lid] : SDPA_NEG_INF;
        D_l[lid] = lid < nr ? Dsum[bh * SqP + i0 + lid] : 0.0f;
    }
    float4 acc[F_NDQ];
    SDPA_UNROLL for (int x = 0; x < F_NDQ; x++) acc[x] = (float4)(0.0f);

    for (long j0 = ulo; j0 < uhi; j0 += FQK) {
        int nk = (int)min((long)FQK, uhi - j0);
        fa2_stage(k_l, Kp + (bhk * SkvP + j0) * HD, FQK, FQ4, FLQ, nk);
        fa2_stage(v_l, Vt + (bhk * SkvP + j0) * HDV, FQK, FV4, FLV, nk);
        barrier(CLK_LOCAL_MEM_FENCE);
        FA2_ROLLED for (int x = 0; x < F_NSQ; x++) {
            int e = lid + x * WG, i = e / FQK, j = e % FQK;
            if (e >= FBR * FQK) break;
            float p, dsx;
            FA2_ELEMENT(q_l + i * FLQ, k_l + j * FLQ, do_l + i * FLV, v_l + j * FLV, i0 + i,
                        j0 + j, i < nr && j < nk, L_l[i], D_l[i], p, dsx);
            (void)p;
            ds_l[e] = dsx;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        FA2_ACCUM(acc, F_NDQ, FQ4, ds_l, FQK, k_l, FLQ);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    FA2_STORE(acc, F_NDQ, FQ4, nr, dq, dq_off + b * dqs.s0 + h * dqs.s1 + i0 * dqs.s2, dqs.s2,
              dqs.s3, scale);
}

/* Arguments: exactly bwd.cl's sdpa_bwd_dkdv. */
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
    local float k_l[FBC * FLQ], v_l[FBC * FLV], q_l[FKR * FLQ], do_l[FKR * FLV];
    local float p_l[FBC * FKR], ds_l[FBC * FKR], L_l[FKR], D_l[FKR];
    (void)Qst; (void)dOt; (void)k; (void)k_off; (void)ks; (void)eps; (void)gain;
    (void)g_off; (void)g_st; (void)has_gain; (void)gpart;
    SDPA_COMMON_UNUSED;
    const int lid = (int)get_local_id(0);
    const long j0 = (long)get_group_id(0) * FBC;
    const long bhk = get_group_id(1);
    const long b = bhk / Hkv;
    const int hk = (int)(bhk % Hkv);
    const int G = Hq / Hkv;
    if (j0 >= Skv) return; /* the whole work-group */
    const long kvl = SDPA_KV_LEN(b);
    const long off = sdpa_diag_off(diag, diag_off, kvl, Sq);
    const int nk = (int)min((long)FBC, Skv - j0);
    /* query rows that can see a key of the block: [ilo(j0), ihi(last kept)) */
    long jl = min(j0 + nk, kvl) - 1;
    long ulo = 0, uhi = Sq;
    if (right >= 0) ulo = max(ulo, j0 - off - right);
    if (left >= 0) uhi = min(uhi, jl - off + left + 1);
    if (jl < j0) uhi = ulo;
    fa2_stage(k_l, Kp + (bhk * SkvP + j0) * HD, FBC, FQ4, FLQ, nk);
    fa2_stage(v_l, Vp + (bhk * SkvP + j0) * HDV, FBC, FV4, FLV, nk);
    float4 ka[F_NDK], va[F_NDV];
    SDPA_UNROLL for (int x = 0; x < F_NDK; x++) ka[x] = (float4)(0.0f);
    SDPA_UNROLL for (int x = 0; x < F_NDV; x++) va[x] = (float4)(0.0f);

    for (int hh = 0; hh < G; hh++) {
        const int h = hk * G + hh;
        const long bh = b * Hq + h;
        for (long i0 = ulo; i0 < uhi; i0 += FKR) {
            int nr = (int)min((long)FKR, uhi - i0);
            fa2_stage(q_l, Qs + (bh * SqP + i0) * HD, FKR, FQ4, FLQ, nr);
            fa2_stage(do_l, dOp + (bh * SqP + i0) * HDV, FKR, FV4, FLV, nr);
            if (lid < FKR) {
                L_l[lid] = lid < nr ? Lp[bh * SqP + i0 + lid] : SDPA_NEG_INF;
                D_l[lid] = lid < nr ? Dsum[bh * SqP + i0 + lid] : 0.0f;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            FA2_ROLLED for (int x = 0; x < F_NSK; x++) {
                int e = lid + x * WG, j = e / FKR, i = e % FKR;
                if (e >= FBC * FKR) break;
                float p, dsx;
                FA2_ELEMENT(q_l + i * FLQ, k_l + j * FLQ, do_l + i * FLV, v_l + j * FLV, i0 + i,
                            j0 + j, i < nr && j < nk, L_l[i], D_l[i], p, dsx);
                p_l[e] = p;
                ds_l[e] = dsx;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            FA2_ACCUM(va, F_NDV, FV4, p_l, FKR, do_l, FLV);
            FA2_ACCUM(ka, F_NDK, FQ4, ds_l, FKR, q_l, FLQ);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    FA2_STORE(ka, F_NDK, FQ4, nk, dk, dk_off + b * dks.s0 + hk * dks.s1 + j0 * dks.s2, dks.s2,
              dks.s3, 1.0f);
    FA2_STORE(va, F_NDV, FV4, nk, dv, dv_off + b * dvs.s0 + hk * dvs.s1 + j0 * dvs.s2, dvs.s2,
              dvs.s3, 1.0f);
}
