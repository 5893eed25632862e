/*
 * kv_access.cl — the one place OpenCL kernels reach K and V in the caller's
 * memory, and the two per-row terms of issue 19 (DESIGN section 3: ALiBi,
 * sinks), shared by every attention kernel: fwd.cl, fwd_block.cl and
 * decode.cl read K/V through it, the score pipeline (prelude.cl) takes its
 * ALiBi term, and every forward starts its online softmax with SDPA_SINK_INIT.
 *
 * K/V storage (build options, cl_plan.c: sdpa__cl_plan_options):
 *   KV_DT     K/V dtype (sdpa_dtype numbers): 1 f32, 2 f16, 3 bf16, 6 q8_0,
 *             7 q4_0; independent of q's STORE_DT. q8_0 / q4_0 are ggml's
 *             blocks of 32 elements along the head dim (an f16 scale, then
 *             32 int8, or 16 bytes of nibble pairs: byte t holds element t
 *             low, t + 16 high, value scale * (nibble - 8)); offsets and
 *             strides then count blocks and the last stride is 1.
 *   KV_PAGED  1: keys live in a pool of pages; logical key j of batch b is
 *             slot j % page of page block_table[b][j / page] (entries are
 *             clamped into [0, npages): a device table is not validated).
 *   KV_DIRECT 1: the fused forwards (fwd.cl, fwd_block.cl) stage their K/V
 *             tiles from the caller's K/V through this file instead of the
 *             packed f32 workspace (pack.cl); cl_plan.c sets it for a K/V
 *             dtype other than q's, block types and pages.
 * Elements are converted or dequantized in registers as they are read, one
 * tile at a time: nothing here copies, gathers or dequantizes the cache as
 * a whole. Accumulation stays f32.
 *
 * Kernels take SDPA_KV_ARGS (set on the host by sdpa__cl_kv_args,
 * cl_forward.c) and address a row with SDPA_K_ROW / SDPA_V_ROW (b, hk, j);
 * sdpa_kv_ld reads one element of a row, sdpa_kv_vload_<n> n consecutive
 * ones (last stride 1; n divides 32), SDPA_KV_STAGE_KT / _V fill a local
 * tile. ALiBi: SDPA_ALIBI_TERM(h, i, j) = -slope_h |i + off - j| (the
 * caller's `off`; for an EXPLICIT diagonal the offset as given, alibi_off).
 * Sinks: SDPA_SINK_INIT(m, l, h, first) starts a row at m = sink_h, l = 1
 * (the sink is one more term of the denominator with no value), or at
 * m = -inf, l = 0 without a sink, for sink_h = -inf, and wherever `first`
 * is false (split-KV: only split 0 carries the sink, so combine.cl counts
 * it once). A row with no kept key then ends with out 0 and lse = sink_h.
 * Assembled by cl_program.c right after prelude.cl.
 */

#ifndef KV_DT
#define KV_DT STORE_DT
#endif
#ifndef KV_PAGED
#define KV_PAGED 0
#endif
#ifndef KV_DIRECT
#define KV_DIRECT 0
#endif

#if KV_DT == 6 || KV_DT == 7
#define KV_BLOCK 1
#define KVTYPE uchar
#define KV_BBYTES (KV_DT == 6 ? 34 : 18) /* bytes of one block of 32 elements */
#elif KV_DT == 2
#define KV_BLOCK 0
#define KVTYPE half
#elif KV_DT == 3
#define KV_BLOCK 0
#define KVTYPE ushort
#else
#define KV_BLOCK 0
#define KVTYPE float
#endif

#if KV_BLOCK
/* The block holding element d of the row at block `base`, and its scale. */
inline global const uchar *sdpa_kv_block(global const uchar *p, long base, int d, float *sc)
{
    global const uchar *blk = p + (base + d / 32) * KV_BBYTES;
    *sc = vload_half(0, (global const half *)blk);
    return blk + 2;
}
#endif

/* Element d of the K/V row at `base` (elements; blocks for q8_0 / q4_0)
 * whose elements are `st` apart (1 for the block types), as f32. */
inline float sdpa_kv_ld(global const KVTYPE *p, long base, long st, int d)
{
#if KV_BLOCK
    (void)st;
    float sc;
    global const uchar *q = sdpa_kv_block(p, base, d, &sc);
    int t = d & 31;
#if KV_DT == 6
    return sc * (float)((global const char *)q)[t];
#else
    uchar by = q[t & 15];
    return sc * (float)((t < 16 ? (by & 15) : (by >> 4)) - 8);
#endif
#elif KV_DT == 2
    return vload_half((size_t)(base + d * st), p);
#elif KV_DT == 3
    return sdpa_bf16_to_f32(p[base + d * st]);
#else
    return p[base + d * st];
#endif
}

/* n consecutive elements d .. d + n - 1 of the row at `base` (last stride
 * 1; d a multiple of n and n dividing 32, so a block type's vector lies in
 * one block and one nibble half) as a float vector: sdpa_kv_vload_<n>. */
inline float sdpa_kv_vload_1(global const KVTYPE *p, long base, int d)
{
    return sdpa_kv_ld(p, base, 1, d);
}
#if KV_DT == 6
#define SDPA_KV_VLOAD_BODY(n)                                                   \
    float sc;                                                                   \
    global const uchar *q = sdpa_kv_block(p, base, d, &sc);                     \
    return sc * convert_float##n(vload##n(0, (global const char *)q + (d & 31)));
#elif KV_DT == 7
#define SDPA_KV_VLOAD_BODY(n)                                                   \
    float sc;                                                                   \
    global const uchar *q = sdpa_kv_block(p, base, d, &sc);                     \
    int t = d & 31;                                                             \
    uchar##n by = vload##n(0, q + (t & 15));                                    \
    if (t < 16) by &= (uchar##n)(15);                                           \
    else by >>= (uchar##n)(4);                                                  \
    return sc * (convert_float##n(by) - (float##n)(8.0f));
#elif KV_DT == 2
#define SDPA_KV_VLOAD_BODY(n) return vload_half##n(0, p + base + d);
#elif KV_DT == 3
#define SDPA_KV_VLOAD_BODY(n) \
    return as_float##n(convert_uint##n(vload##n(0, p + base + d)) << 16);
#else
#define SDPA_KV_VLOAD_BODY(n) return vload##n(0, p + base + d);
#endif
#define SDPA_KV_VLOAD_DEF(n)                                                    \
    inline float##n sdpa_kv_vload_##n(global const KVTYPE *p, long base, int d) \
    {                                                                           \
        SDPA_KV_VLOAD_BODY(n)                                                   \
    }
SDPA_KV_VLOAD_DEF(2)
SDPA_KV_VLOAD_DEF(4)
SDPA_KV_VLOAD_DEF(8)
SDPA_KV_VLOAD_DEF(16)
#define SDPA_KV_VLOADN(n) SDPA_CAT(sdpa_kv_vload_, n)

/* The K/V source in a kernel's signature: k and v (or the pools k_pages,
 * v_pages) with offsets and strides, and the block table. */
#define SDPA_KV_ARGS                                                             \
    global const KVTYPE *kx, long kx_off, long4 kxs,                             \
    global const KVTYPE *vx, long vx_off, long4 vxs SDPA_KV_TABLE_ARGS
#define SDPA_KV_UNUSED                                                           \
    (void)kx; (void)kx_off; (void)kxs; (void)vx; (void)vx_off; (void)vxs
/* The block table's arguments only with KV_PAGED (kernel arguments cost
 * registers on some GPUs). */
#if KV_PAGED
#define SDPA_KV_TABLE_ARGS \
    , global const int *btab, long bt_off, long bt_s0, long bt_s3, int kv_page, int kv_npages
#define SDPA_KV_TABLE btab, bt_off, bt_s0, bt_s3, kv_page, kv_npages
#else
#define SDPA_KV_TABLE_ARGS
#define SDPA_KV_TABLE NULL, 0, 0, 0, 1, 1
#endif

/* Base (elements, or blocks) of logical key j's row of KV head hk, batch b. */
inline long sdpa_kv_row(long off, long4 st, global const int *bt, long bt_off, long bt_s0,
                        long bt_s3, int page, int npages, long b, long hk, long j)
{
#if KV_PAGED
    long pg = bt[bt_off + b * bt_s0 + (j / page) * bt_s3];
    pg = clamp(pg, 0L, (long)npages - 1);
    return off + pg * st.s0 + hk * st.s1 + (j % page) * st.s2;
#else
    (void)bt; (void)bt_off; (void)bt_s0; (void)bt_s3; (void)page; (void)npages;
    return off + b * st.s0 + hk * st.s1 + j * st.s2;
#endif
}
#define SDPA_K_ROW(b, hk, j) sdpa_kv_row(kx_off, kxs, SDPA_KV_TABLE, (b), (hk), (j))
#define SDPA_V_ROW(b, hk, j) sdpa_kv_row(vx_off, vxs, SDPA_KV_TABLE, (b), (hk), (j))

/* A tile of nk keys from j0 into local memory, work-item lid of nthr
 * (consecutive work-items on consecutive elements of a row): K^T as
 * dst[d * nk + t] (HD x nk, pack.cl's tile-major layout), V as
 * dst[t * HDV + c]; keys at or past Skv are 0. */
#define SDPA_KV_STAGE_KT(dst, b, hk, j0, nk, lid, nthr)                           \
    for (int e_ = (lid); e_ < (nk) * HD; e_ += (nthr)) {                          \
        int t_ = e_ / HD, d_ = e_ - t_ * HD;                                      \
        long j_ = (j0) + t_;                                                      \
        (dst)[d_ * (nk) + t_] =                                                   \
            j_ < Skv ? sdpa_kv_ld(kx, SDPA_K_ROW((b), (hk), j_), kxs.s3, d_) : 0.0f; \
    }
#define SDPA_KV_STAGE_V(dst, b, hk, j0, nk, lid, nthr)                            \
    for (int e_ = (lid); e_ < (nk) * HDV; e_ += (nthr)) {                         \
        int t_ = e_ / HDV, c_ = e_ - t_ * HDV;                                    \
        long j_ = (j0) + t_;                                                      \
        (dst)[e_] =                                                               \
            j_ < Skv ? sdpa_kv_ld(vx, SDPA_V_ROW((b), (hk), j_), vxs.s3, c_) : 0.0f; \
    }

/* ALiBi: the term key j of row i of query head h gets (step 4 of the score,
 * after the softcap, with the bias, before the drop decision). */
#if HAS_ALIBI
inline float sdpa_alibi(global const float *al, long al_off, long al_st, long h, long i,
                        long aoff, long j)
{
    long dist = i + aoff - j;
    return -al[al_off + h * al_st] * (float)(dist < 0 ? -dist : dist);
}
#define SDPA_ALIBI_TERM(h, i, j) \
    sdpa_alibi(alibi, al_off, al_st, (h), (i), diag == 2 ? alibi_off : off, (j))
#else
#define SDPA_ALIBI_TERM(h, i, j) 0.0f
#endif

/* Online-softmax start (m, l) of a row of query head h (see the top). */
#if HAS_SINKS
#define SDPA_SINK_INIT(m, l, h, first)                                            \
    {                                                                             \
        float sk_ = (first) ? sinks[sk_off + (long)(h) * sk_st] : SDPA_NEG_INF;   \
        (m) = sk_;                                                                \
        (l) = sk_ == SDPA_NEG_INF ? 0.0f : 1.0f;                                  \
    }
#else
#define SDPA_SINK_INIT(m, l, h, first) \
    {                                  \
        (m) = SDPA_NEG_INF;            \
        (l) = 0.0f;                    \
    }
#endif
