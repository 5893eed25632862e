/*
 * prelude.cl — helpers shared by every libsdpa OpenCL kernel.
 *
 * What it does: storage-dtype loads/stores (f32 directly, f16 through
 * vload_half/vstore_half so no cl_khr_fp16 is needed, bf16 through bit
 * operations), vector-width helpers (FLOATN(n), VLOADN(n), VSTOREN(n) for
 * n in 1,2,4,8,16), the band test of DESIGN section 3, the QK-norm helpers,
 * the argument block common to the attention kernels (SDPA_COMMON_ARGS) and
 * the score pipeline every attention kernel calls (SDPA_SCORE_*).
 * Invariants: uses no extension (subgroups only with SDPA_SUBGROUPS); every
 * accumulation is f32; NaN stays NaN in conversions; stores round to
 * nearest even.
 * Who uses it: src/backend/opencl/cl_program.c prepends it (after
 * shaders/common/sdpa_shared.h) to every kernel file before building.
 */

#ifndef STORE_DT
#define STORE_DT 1 /* storage dtype of q/k/v/out and gradients: 1 f32, 2 f16, 3 bf16 */
#endif
/* Score inputs present (build options, cl_forward.c: sdpa__cl_score_options). */
#ifndef HAS_MASK
#define HAS_MASK 0 /* bool mask input */
#endif
#ifndef HAS_BIAS
#define HAS_BIAS 0 /* additive f32 bias input */
#endif
#ifndef HAS_SOFTCAP
#define HAS_SOFTCAP 0 /* s = softcap * tanh(s / softcap) before the additive terms */
#endif
#ifndef HAS_STATS
#define HAS_STATS 0 /* per-row statistics records for stats.cl */
#endif
#ifndef HAS_ALIBI
#define HAS_ALIBI 0 /* ALiBi slopes: s -= slope_h |i + off - j| (kv_access.cl) */
#endif
#ifndef HAS_SINKS
#define HAS_SINKS 0 /* attention sinks: one more softmax term per row (kv_access.cl) */
#endif

#define SDPA_NEG_INF (-INFINITY)

/* Subgroup reductions (issue 17): SDPA_SUBGROUPS = 1 (cl_plan.c sets it
 * where the device lists cl_khr_subgroups or cl_intel_subgroups) lets the
 * GPU-class kernels reduce a row over the lanes of a subgroup
 * (sub_group_reduce_*) instead of one work-item walking it through local
 * memory. The kernels never assume a subgroup size or a mapping of
 * work-items to subgroups: work is assigned from get_sub_group_id(),
 * get_sub_group_local_id() and get_sub_group_size(), and every collective
 * is reached by the whole subgroup. A compiler without the extension gets
 * one-work-item subgroups (below), or an error with SDPA_SUBGROUPS_REQUIRED
 * (the static gate's subgroup rows, which must not pass without the real
 * built-ins). */
#ifndef SDPA_SUBGROUPS
#define SDPA_SUBGROUPS 0
#endif
#if SDPA_SUBGROUPS
#if defined(cl_khr_subgroups)
#pragma OPENCL EXTENSION cl_khr_subgroups : enable
#elif defined(cl_intel_subgroups)
#pragma OPENCL EXTENSION cl_intel_subgroups : enable
#elif !defined(__opencl_c_subgroups)
#if defined(SDPA_SUBGROUPS_REQUIRED) && SDPA_SUBGROUPS_REQUIRED
#error "SDPA_SUBGROUPS: the compiler offers no subgroup extension"
#endif
/* The compiler has no subgroup built-ins (a driver listing the extension
 * without them; the cl-subgroups test persona on PoCL): subgroups of one
 * work-item, which give the local-memory form's work split (a row per
 * work-item) through the subgroup code. */
#define get_sub_group_size() 1u
#define get_num_sub_groups() ((uint)get_local_size(0))
#define get_sub_group_id() ((uint)get_local_id(0))
#define get_sub_group_local_id() 0u
#define sub_group_reduce_add(x) (x)
#define sub_group_reduce_max(x) (x)
#define sub_group_any(x) (x)
#endif
#endif
#if SDPA_SUBGROUPS
/* The subgroup's maximum of the lanes' values x, NaN when any lane holds
 * NaN (sub_group_reduce_max leaves NaN unspecified, so it never sees one). */
inline float sdpa_sg_max_nan(float x)
{
    int nan = isnan(x);
    float r = sub_group_reduce_max(nan ? SDPA_NEG_INF : x);
    return sub_group_any(nan) ? NAN : r;
}

/* The online-softmax update of one row of n logits s[0..n) (-inf: dropped)
 * whose maximum tmax the subgroup has reduced (sdpa_sg_max_nan), by the
 * whole subgroup (fwd_block.cl, decode_gpu.cl): each lane writes the
 * probabilities of its keys to p[u * pst] (0 for a dropped key; p may be
 * s), lane 0 moves the row's state *m, *l on; returns the factor alpha
 * that rescales the row's earlier output. Every lane's sum depends on its
 * read of *m, so lane 0's write cannot overtake another lane's read. */
inline float sdpa_sg_softmax_row(local const float *s, local float *p, int pst, int n,
                                 float tmax, local float *m, local float *l)
{
    const int sl = (int)get_sub_group_local_id(), ss = (int)get_sub_group_size();
    float alpha = 1.0f, mo = *m;
    if (tmax == SDPA_NEG_INF) { /* uniform in the subgroup */
        for (int u = sl; u < n; u += ss) p[u * pst] = 0.0f;
        return alpha;
    }
    float mn = isnan(tmax) ? tmax : fmax(mo, tmax);
    alpha = mn == mo ? 1.0f : exp(mo - mn);
    float sum = 0.0f;
    for (int u = sl; u < n; u += ss) {
        float pu = s[u] == SDPA_NEG_INF ? 0.0f : exp(s[u] - mn);
        p[u * pst] = pu;
        sum += pu;
    }
    sum = sub_group_reduce_add(sum);
    if (sl == 0) {
        *l = fma(*l, alpha, sum);
        *m = mn;
    }
    return alpha;
}
#endif

/* Full unrolling of short loops over vector accumulators keeps them in
 * registers (usable inside macros). */
#define SDPA_UNROLL _Pragma("unroll")

#define SDPA_CAT_(a, b) a##b
#define SDPA_CAT(a, b) SDPA_CAT_(a, b)

/* float vectors of width n (float1 = float) and their loads/stores. */
typedef float float1;
#define FLOATN(n) SDPA_CAT(float, n)
#define VLOAD_1(o, p) ((p)[(o)])
#define VLOAD_2 vload2
#define VLOAD_4 vload4
#define VLOAD_8 vload8
#define VLOAD_16 vload16
#define VSTORE_1(v, o, p) ((p)[(o)] = (v))
#define VSTORE_2 vstore2
#define VSTORE_4 vstore4
#define VSTORE_8 vstore8
#define VSTORE_16 vstore16
#define VLOADN(n) SDPA_CAT(VLOAD_, n)
#define VSTOREN(n) SDPA_CAT(VSTORE_, n)

/* Horizontal sum / max of a float vector of width n: HSUMN(n)(v), HMAXN(n)(v).
 * Tree reductions (lo + hi halves), so they vectorise. HMAX drops NaN lanes
 * like fmax. */
inline float sdpa_hsum_1(float v) { return v; }
inline float sdpa_hsum_2(float2 v) { return v.s0 + v.s1; }
inline float sdpa_hsum_4(float4 v) { return sdpa_hsum_2(v.lo + v.hi); }
inline float sdpa_hsum_8(float8 v) { return sdpa_hsum_4(v.lo + v.hi); }
inline float sdpa_hsum_16(float16 v) { return sdpa_hsum_8(v.lo + v.hi); }
inline float sdpa_hmax_1(float v) { return v; }
inline float sdpa_hmax_2(float2 v) { return fmax(v.s0, v.s1); }
inline float sdpa_hmax_4(float4 v) { return sdpa_hmax_2(fmax(v.lo, v.hi)); }
inline float sdpa_hmax_8(float8 v) { return sdpa_hmax_4(fmax(v.lo, v.hi)); }
inline float sdpa_hmax_16(float16 v) { return sdpa_hmax_8(fmax(v.lo, v.hi)); }
#define HSUMN(n) SDPA_CAT(sdpa_hsum_, n)
#define HMAXN(n) SDPA_CAT(sdpa_hmax_, n)

/* bf16 conversions (q/out, and K/V in kv_access.cl, may be bf16). */
inline float sdpa_bf16_to_f32(ushort b) { return as_float(((uint)b) << 16); }
inline ushort sdpa_f32_to_bf16(float f)
{
    uint u = as_uint(f);
    if (isnan(f))
        return (ushort)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (ushort)(u >> 16);
}

/* Storage element type of q/out/gradients and its conversions. */
#if STORE_DT == 2
#define STYPE half
#define LD(p, e) vload_half((size_t)(e), (p))
#define ST(p, e, v) vstore_half_rte((v), (size_t)(e), (p))
#elif STORE_DT == 3
#define STYPE ushort
#define LD(p, e) sdpa_bf16_to_f32((p)[(e)])
#define ST(p, e, v) ((p)[(e)] = sdpa_f32_to_bf16(v))
#else
#define STYPE float
#define LD(p, e) ((p)[(e)])
#define ST(p, e, v) ((p)[(e)] = (v))
#endif

/* Keys of the tile-major packed K (pack.cl transpose = 2): a multiple of 64. */
#define SDPA_PAD64(n) ((((long)(n)) + 63) / 64 * 64)

/* Diagonal offset of DESIGN section 3: kind 0 top-left, 1 bottom-right,
 * 2 explicit. */
inline long sdpa_diag_off(int kind, long explicit_off, long kvl, long Sq)
{
    return kind == 1 ? kvl - Sq : (kind == 2 ? explicit_off : 0);
}

/* Kept-key range [lo, hi) of row i from kv_len and the band. */
inline void sdpa_row_range(long i, long off, long left, long right, long kvl,
                           long *lo, long *hi)
{
    long a = 0, b = kvl;
    if (left >= 0 && i + off - left > a) a = i + off - left;
    if (right >= 0 && i + off + right + 1 < b) b = i + off + right + 1;
    *lo = a;
    *hi = b > a ? b : a;
}

/* Row rho of the G * Sq query rows folded onto KV head hk (fwd.cl,
 * decode.cl): its query head *hr, query index *ic and kept-key range
 * [*lo, *hi) inside the key slice [slo, shi). An inactive row (rho >= NR,
 * past the end of the work) stands in as row NR - 1 with an empty range. A
 * non-empty range widens the work-item's union [*ulo, *uhi). */
inline void sdpa_fold_row(long rho, long NR, int hk, int G, int Sq, long off, long left,
                          long right, long kvl, long slo, long shi, int *hr, long *ic,
                          long *lo, long *hi, long *ulo, long *uhi)
{
    bool act = rho < NR;
    if (!act) rho = NR - 1;
    *hr = hk * G + (int)(rho / Sq);
    *ic = rho % Sq;
    sdpa_row_range(*ic, off, left, right, kvl, lo, hi);
    *lo = max(*lo, slo);
    *hi = min(*hi, shi);
    if (*hi < *lo || !act) *hi = *lo;
    if (*lo < *hi) {
        *ulo = min(*ulo, *lo);
        *uhi = max(*uhi, *hi);
    }
}

/* Softcap c tanh(x / c) of scores x of type T (float or floatN), accurate
 * for every c in [FLT_MIN, FLT_MAX]: where |x / c| < 2^-12, tanh(x / c) is
 * (x / c)(1 - ~2^-25), so x itself is kept (x / c may be subnormal, or
 * flushed to 0, when c is huge). SDPA_SOFTCAP_TH takes tanh(x / c) made by
 * the caller (the backward keeps it for the derivative). */
#define SDPA_CAP_SMALL(T, x, c) (fabs((x) / (T)(c)) < (T)(0x1p-12f))
#define SDPA_SOFTCAP_TH(T, x, c, th) select((T)(c) * (th), (x), SDPA_CAP_SMALL(T, x, c))
#define SDPA_SOFTCAP(T, x, c) SDPA_SOFTCAP_TH(T, x, c, tanh((x) / (T)(c)))

/* Valid keys of batch b (kv_len clamped into [0, Skv]; Skv without kv_len). */
inline long sdpa_kv_len(global const int *kv_len, long off, long stride0,
                        int has, long b, long Skv)
{
    if (!has) return Skv;
    long v = kv_len[off + b * stride0];
    return v < 0 ? 0 : (v > Skv ? Skv : v);
}

/* The arguments every attention kernel (sdpa_fwd, sdpa_decode, sdpa_bwd_dq,
 * sdpa_bwd_dkdv, sdpa_unf_softmax) takes, in this order, after its own
 * leading buffers: dimensions, band, the score inputs. Set once on the host
 * by sdpa__cl_common_args (cl_forward.c); a new score input goes here, in
 * that function and in the score pipeline below. */
#define SDPA_COMMON_ARGS                                                   \
    int Hq, int Hkv, int Sq, int Skv, int SqP, int SkvP,                   \
    int diag, long diag_off, long left, long right, float softcap,         \
    global const int *kvlen, long kl_off, long kl_st, int has_kvlen,       \
    global const uchar *mask, long m_off, long4 ms,                        \
    global const float *bias, long b_off, long4 bs                         \
    SDPA_ALIBI_ARGS SDPA_SINKS_ARGS
/* ALiBi (offset, slopes) and sinks, present only when built in, so the
 * kernels of problems without them take exactly the arguments they took
 * before (kernel arguments cost registers on some GPUs). */
#if HAS_ALIBI
#define SDPA_ALIBI_ARGS , long alibi_off, global const float *alibi, long al_off, long al_st
#define SDPA_ALIBI_UNUSED (void)alibi_off; (void)alibi; (void)al_off; (void)al_st
#else
#define SDPA_ALIBI_ARGS
#define SDPA_ALIBI_UNUSED
#endif
#if HAS_SINKS
#define SDPA_SINKS_ARGS , global const float *sinks, long sk_off, long sk_st
#define SDPA_SINKS_UNUSED (void)sinks; (void)sk_off; (void)sk_st
#else
#define SDPA_SINKS_ARGS
#define SDPA_SINKS_UNUSED
#endif
/* The block's arguments a kernel may leave unread (by build options). */
#define SDPA_COMMON_UNUSED                                                 \
    (void)Hkv; (void)SqP; (void)SkvP; (void)softcap; (void)mask; (void)m_off; \
    (void)ms; (void)bias; (void)b_off; (void)bs; SDPA_ALIBI_UNUSED; SDPA_SINKS_UNUSED
/* Valid keys of batch b, from the block. */
#define SDPA_KV_LEN(b) sdpa_kv_len(kvlen, kl_off, kl_st, has_kvlen, (b), Skv)

/* The score pipeline, one definition for every kernel: (1) the softcap of
 * the raw score (SDPA_SCORE_CAP on a float or a vector of scores, or
 * SDPA_SCORE_CAP_D with the cap's derivative for the backward), then (2) the
 * additive terms and (3) the drop decision of key j of row (b, h, i)
 * (sdpa_score_terms: *keep enters as the band / kv_len test; the mask and a
 * -inf bias clear it; the result is the logit, -inf for a dropped key).
 * SDPA_SCORE does all three for one key. */
#if HAS_SOFTCAP
#define SDPA_SCORE_CAP(T, x) SDPA_SOFTCAP(T, x, softcap)
#define SDPA_SCORE_CAP_D(T, x, dcap)                 \
    {                                                \
        T th_ = tanh((x) / (T)(softcap));            \
        x = SDPA_SOFTCAP_TH(T, x, softcap, th_);     \
        dcap = (T)(1.0f) - th_ * th_;                \
    }
#else
#define SDPA_SCORE_CAP(T, x) (x)
#define SDPA_SCORE_CAP_D(T, x, dcap)
#endif
inline float sdpa_score_terms(float x, bool *keep, global const uchar *mask, long m_off,
                              long4 ms, global const float *bias, long b_off, long4 bs,
                              long b, long h, long i, long j, float alibi)
{
    (void)mask; (void)m_off; (void)ms; (void)bias; (void)b_off; (void)bs;
    (void)b; (void)h; (void)i; (void)j; (void)alibi;
#if HAS_MASK
    if (*keep) *keep = mask[m_off + b * ms.s0 + h * ms.s1 + i * ms.s2 + j * ms.s3] != 0;
#endif
#if HAS_BIAS
    if (*keep) { /* a -inf bias drops the key, even where the score is NaN */
        float bb = bias[b_off + b * bs.s0 + h * bs.s1 + i * bs.s2 + j * bs.s3];
        *keep = bb != SDPA_NEG_INF;
        x += bb;
    }
#endif
#if HAS_ALIBI
    x += alibi; /* -slope_h |i + off - j| (SDPA_ALIBI_TERM, kv_access.cl) */
#endif
    return *keep ? x : SDPA_NEG_INF;
}
/* SDPA_ALIBI_TERM (kv_access.cl, assembled after this file) reads the
 * kernel's `off` (the band's diagonal offset of the row's batch). */
#define SDPA_SCORE_TERMS(x, keep, b, h, i, j)                                      \
    sdpa_score_terms((x), (keep), mask, m_off, ms, bias, b_off, bs, (b), (h), (i), (j), \
                     SDPA_ALIBI_TERM((h), (i), (j)))
#define SDPA_SCORE(x, keep, b, h, i, j) SDPA_SCORE_TERMS(SDPA_SCORE_CAP(float, x), keep, b, h, i, j)

/* QK-norm of DESIGN section 3 (norm: 0 none, 1 RMS, 2 layer, 3 L2) over one
 * strided row of `dim` elements: returns r and *mean such that the
 * normalised element is (x - *mean) * r. Two passes, f32. */
inline float sdpa_norm_params(global const STYPE *x, long base, long st, int dim,
                              int norm, float eps, float *mean)
{
    float mu = 0.0f, acc = 0.0f;
    *mean = 0.0f;
    if (norm == 0) return 1.0f;
    if (norm == 2) {
        for (int d = 0; d < dim; d++) mu += LD(x, base + d * st);
        mu /= (float)dim;
    }
    for (int d = 0; d < dim; d++) {
        float c = LD(x, base + d * st) - mu;
        acc = fma(c, c, acc);
    }
    *mean = mu;
    if (norm == 3) return 1.0f / sqrt(acc + eps);
    return 1.0f / sqrt(acc / (float)dim + eps);
}
