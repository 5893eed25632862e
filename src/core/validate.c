/*
 * validate.c — every description and every call's tensors are checked here,
 * once, before any backend sees them. Each failure gets the specific status
 * and a message naming the field (e.g. "tensors.k.shape[3] is 32 but q's head
 * dim D is 64"). Size arithmetic is checked for overflow throughout: a shape
 * whose element count or byte span does not fit int64/size_t is SDPA_ERR_SHAPE.
 */
#include "validate.h"
#include "overlap.h"

#include <float.h>
#include <math.h>
#include <stddef.h>

const char *const sdpa__fwd_names[SDPA__T_COUNT] = {
    "tensors.q", "tensors.k", "tensors.v", "tensors.out", "tensors.mask",
    "tensors.bias", "tensors.kv_len", "tensors.q_gain", "tensors.k_gain",
    "tensors.temperature", "tensors.lse", "tensors.stats"};
const char *const sdpa__bwd_names[SDPA__G_COUNT] = {
    "bwd.dout", "bwd.dq", "bwd.dk", "bwd.dv", "bwd.dq_gain", "bwd.dk_gain",
    "bwd.dtemperature"};

const sdpa_tensor *sdpa__fwd_slot(const sdpa_forward_tensors *t, int i)
{
    const sdpa_tensor *s[SDPA__T_COUNT] = {
        &t->q, &t->k, &t->v, &t->out, &t->mask, &t->bias, &t->kv_len,
        &t->q_gain, &t->k_gain, &t->temperature, &t->lse, &t->stats};
    return s[i];
}

const sdpa_tensor *sdpa__bwd_slot(const sdpa_backward_tensors *t, int i)
{
    const sdpa_tensor *s[SDPA__G_COUNT] = {&t->dout, &t->dq, &t->dk, &t->dv,
                                           &t->dq_gain, &t->dk_gain, &t->dtemperature};
    return s[i];
}

int64_t sdpa__tensor_span(const sdpa_tensor *t)
{
    int64_t span = 1;
    for (int a = 0; a < 4; a++)
        if (t->shape[a] > 1) span += (t->shape[a] - 1) * t->stride[a];
    return span;
}

sdpa_status sdpa__check_layout(sdpa_context *ctx, const char *name,
                               const sdpa_tensor *t, bool need_data)
{
    size_t esize = sdpa_dtype_size(t->dtype);
    SDPA__CHECK(ctx, esize > 0, SDPA_ERR_DTYPE, "%s.dtype %d is not a valid sdpa_dtype",
                name, (int)t->dtype);
    int64_t count = 1;
    for (int a = 0; a < 4; a++) {
        SDPA__CHECK(ctx, t->shape[a] >= 0, SDPA_ERR_SHAPE, "%s.shape[%d] is negative (%lld)",
                    name, a, (long long)t->shape[a]);
        SDPA__CHECK(ctx, t->shape[a] > 0, SDPA_ERR_EMPTY, "%s.shape[%d] is 0: empty tensor",
                    name, a);
        SDPA__CHECK(ctx, sdpa__mul_i64(count, t->shape[a], &count), SDPA_ERR_SHAPE,
                    "%s: element count overflows 64 bits", name);
    }
    int64_t span;
    /* strictly below INT64_MAX: the span below starts at offset + 1 */
    SDPA__CHECK(ctx, t->offset < (size_t)INT64_MAX, SDPA_ERR_STRIDE,
                "%s.offset %zu is too large", name, t->offset);
    span = (int64_t)t->offset + 1;
    for (int a = 0; a < 4; a++) {
        if (t->shape[a] == 1) continue;
        SDPA__CHECK(ctx, t->stride[a] >= 0, SDPA_ERR_STRIDE,
                    "%s.stride[%d] is negative (%lld); negative strides are not supported",
                    name, a, (long long)t->stride[a]);
        int64_t reach;
        SDPA__CHECK(ctx,
                    sdpa__mul_i64(t->shape[a] - 1, t->stride[a], &reach) &&
                        sdpa__add_i64(span, reach, &span),
                    SDPA_ERR_SHAPE, "%s: shape[%d] x stride[%d] overflows 64 bits", name, a, a);
    }
    size_t bytes;
    SDPA__CHECK(ctx, (uint64_t)span <= SIZE_MAX && sdpa__mul_size((size_t)span, esize, &bytes),
                SDPA_ERR_SHAPE, "%s: byte extent overflows size_t", name);
    if (!need_data) return SDPA_OK;
    SDPA__CHECK(ctx, !(t->buf && t->host), SDPA_ERR_INVALID_ARG,
                "%s has both buf and host set; set exactly one", name);
    SDPA__CHECK(ctx, t->buf || t->host, SDPA_ERR_NULL, "%s has neither buf nor host set",
                name);
    if (t->buf) {
        SDPA__CHECK(ctx, sdpa__buffer_context(t->buf) == ctx, SDPA_ERR_MISMATCHED_CONTEXT,
                    "%s.buf belongs to another context", name);
        SDPA__CHECK(ctx, bytes <= sdpa_buffer_size(t->buf), SDPA_ERR_STRIDE,
                    "%s: offset and strides reach byte %zu, past the end of its %zu-byte buffer",
                    name, bytes, sdpa_buffer_size(t->buf));
    }
    return SDPA_OK;
}

static bool is_float(sdpa_dtype d)
{
    return d == SDPA_DTYPE_F32 || d == SDPA_DTYPE_F16 || d == SDPA_DTYPE_BF16;
}

/* Expected dtype of a forward slot given q's dtype. */
static sdpa_dtype fwd_dtype(int slot, sdpa_dtype qd)
{
    switch (slot) {
    case SDPA__T_Q: case SDPA__T_K: case SDPA__T_V: case SDPA__T_OUT: return qd;
    case SDPA__T_MASK: return SDPA_DTYPE_U8;
    case SDPA__T_KV_LEN: return SDPA_DTYPE_I32;
    default: return SDPA_DTYPE_F32;
    }
}

/* Expected shape of slot; for mask/bias the batch and head axes may be 1. */
static void fwd_shape(const sdpa__problem *p, int slot, int64_t s[4])
{
    int64_t v[SDPA__T_COUNT][4] = {
        {p->B, p->Hq, p->Sq, p->D},   {p->B, p->Hkv, p->Skv, p->D},
        {p->B, p->Hkv, p->Skv, p->Dv}, {p->B, p->Hq, p->Sq, p->Dv},
        {p->B, p->Hq, p->Sq, p->Skv}, {p->B, p->Hq, p->Sq, p->Skv},
        {p->B, 1, 1, 1},              {1, 1, 1, p->D},
        {1, 1, 1, p->D},              {1, p->Hq, 1, 1},
        {p->B, p->Hq, p->Sq, 1},      {p->B, p->Hq, 1, SDPA_STAT_COUNT}};
    memcpy(s, v[slot], sizeof v[slot]);
}

/* What each axis of a forward slot means (the backward's tensors use the
 * slot they mirror); "unit" axes have extent 1 by definition. */
static const char *const k_axes[SDPA__T_COUNT][4] = {
    [SDPA__T_Q] = {"batch", "query heads", "queries", "head dim D"},
    [SDPA__T_K] = {"batch", "key/value heads", "keys", "head dim D"},
    [SDPA__T_V] = {"batch", "key/value heads", "keys", "value dim Dv"},
    [SDPA__T_OUT] = {"batch", "query heads", "queries", "value dim Dv"},
    [SDPA__T_MASK] = {"batch", "query heads", "queries", "keys"},
    [SDPA__T_BIAS] = {"batch", "query heads", "queries", "keys"},
    [SDPA__T_KV_LEN] = {"batch", "unit axis", "unit axis", "unit axis"},
    [SDPA__T_Q_GAIN] = {"unit axis", "unit axis", "unit axis", "head dim D"},
    [SDPA__T_K_GAIN] = {"unit axis", "unit axis", "unit axis", "head dim D"},
    [SDPA__T_TEMPERATURE] = {"unit axis", "query heads", "unit axis", "unit axis"},
    [SDPA__T_LSE] = {"batch", "query heads", "queries", "unit axis"},
    [SDPA__T_STATS] = {"batch", "query heads", "unit axis", "statistics"},
};

/* Checks got against want for forward slot `slot`; mask and bias
 * (broadcast01) may have extent 1 on the batch and head axes. */
static sdpa_status check_shape(sdpa_context *ctx, const char *name, int slot,
                               const int64_t got[4], const int64_t want[4], bool broadcast01)
{
    for (int a = 0; a < 4; a++) {
        bool may_be_1 = broadcast01 && a < 2 && want[a] != 1;
        bool ok = got[a] == want[a] || (may_be_1 && got[a] == 1);
        SDPA__CHECK(ctx, ok, SDPA_ERR_SHAPE,
                    "%s.shape[%d] (%s) is %lld, expected %lld%s", name, a, k_axes[slot][a],
                    (long long)got[a], (long long)want[a], may_be_1 ? " or 1 (broadcast)" : "");
    }
    return SDPA_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Rewrites the band into an equivalent one whose offset and window values lie
 * within about Sq + Skv, so that no backend's index arithmetic (int64 here,
 * often int32 in kernels) can overflow, whatever the user passed (|values| <
 * 2^62 by validation). Row i keeps keys j with lo(i) <= j < hi(i), where
 * lo = max(0, i + A), A = off - left, and hi = min(kv_len, i + B + 1),
 * B = off + right. For i in [0, Sq) and kv_len <= Skv, any A <= -Sq acts like
 * -Sq - 1 and any A >= Skv like Skv + 1 (the same for B), so clamping A and B
 * there changes nothing; an edge that can never bind becomes -1. */
static void canonical_band(sdpa__problem *p, int64_t off, int64_t left, int64_t right)
{
    const int64_t lim = p->Sq + p->Skv + 1;
    if (p->diagonal != SDPA_DIAGONAL_EXPLICIT) {
        /* off = 0 or kv_len - Sq lies in [-Sq, Skv]: larger windows never bind */
        p->diagonal_offset = 0;
        p->window_left = left >= lim ? -1 : left;
        p->window_right = right >= lim ? -1 : right;
        return;
    }
    int64_t A = left >= 0 ? clamp64(off - left, -p->Sq - 1, p->Skv + 1) : 0;
    int64_t B = right >= 0 ? clamp64(off + right, -p->Sq - 1, p->Skv + 1) : 0;
    if (left >= 0 && A <= -p->Sq) left = -1;  /* lo is always 0 */
    if (right >= 0 && B >= p->Skv) right = -1; /* hi is always kv_len */
    if (left >= 0 && right >= 0) {
        if (A > B) { /* lo > hi - 1 on every row: all rows empty */
            A = B = -p->Sq - 1;
        }
        p->diagonal_offset = A;
        p->window_left = 0;
        p->window_right = B - A;
    } else if (left >= 0) {
        p->diagonal_offset = A;
        p->window_left = 0;
        p->window_right = -1;
    } else if (right >= 0) {
        p->diagonal_offset = B;
        p->window_left = -1;
        p->window_right = 0;
    } else {
        p->diagonal_offset = 0;
        p->window_left = p->window_right = -1;
    }
}

/* The f32 backends compute with scale, softcap and qk_norm_eps in f32: each
 * must be a normal f32 value (in [FLT_MIN, FLT_MAX]), or the f32 result would
 * differ from the float64 reference (1e39 becomes inf and every output NaN; a
 * subnormal cap or eps may be flushed to 0 and divide by it). Runs after the
 * sign / NaN checks of validate_scalars, so a value reaching here is > 0. */
static sdpa_status check_f32_attrs(sdpa_context *ctx, const sdpa_attention_desc *d,
                                   const sdpa__problem *p)
{
    const struct { const char *name; double v; bool check; } a[] = {
        {"scale", p->scale, true}, /* the sentinels resolve to 1/sqrt(D), 1/D: in range */
        {"softcap", d->softcap, d->softcap != 0},
        {"qk_norm_eps", d->qk_norm_eps, true}};
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        SDPA__CHECK(ctx, !a[i].check || (a[i].v >= FLT_MIN && a[i].v <= FLT_MAX),
                    SDPA_ERR_INVALID_ARG,
                    "%s is %g: outside the f32 range [%g, %g] the kernels compute in",
                    a[i].name, a[i].v, (double)FLT_MIN, (double)FLT_MAX);
    return SDPA_OK;
}

static sdpa_status validate_scalars(sdpa_context *ctx, const sdpa_attention_desc *d,
                                    sdpa__problem *p)
{
    const int64_t lim = (int64_t)1 << 62;
    if (d->scale == SDPA_SCALE_DEFAULT) {
        p->scale = 1.0 / sqrt((double)p->D);
    } else if (d->scale == SDPA_SCALE_MUP) {
        p->scale = 1.0 / (double)p->D;
    } else {
        SDPA__CHECK(ctx, isfinite(d->scale) && d->scale > 0, SDPA_ERR_INVALID_ARG,
                    "scale is %g: must be finite and > 0, or SDPA_SCALE_DEFAULT / SDPA_SCALE_MUP",
                    d->scale);
        p->scale = d->scale;
    }
    SDPA__CHECK(ctx, (int)d->diagonal >= 0 && d->diagonal <= SDPA_DIAGONAL_EXPLICIT,
                SDPA_ERR_INVALID_ARG, "diagonal %d is not an sdpa_diagonal", (int)d->diagonal);
    SDPA__CHECK(ctx, d->diagonal_offset > -lim && d->diagonal_offset < lim,
                SDPA_ERR_INVALID_ARG, "diagonal_offset %lld is out of range",
                (long long)d->diagonal_offset);
    SDPA__CHECK(ctx, d->window_left >= -1 && d->window_left < lim, SDPA_ERR_INVALID_ARG,
                "window_left is %lld: must be -1 (unbounded) or >= 0",
                (long long)d->window_left);
    SDPA__CHECK(ctx, d->window_right >= -1 && d->window_right < lim, SDPA_ERR_INVALID_ARG,
                "window_right is %lld: must be -1 (unbounded) or >= 0",
                (long long)d->window_right);
    SDPA__CHECK(ctx, isfinite(d->softcap) && d->softcap >= 0, SDPA_ERR_INVALID_ARG,
                "softcap is %g: must be 0 (none) or a finite value > 0", d->softcap);
    SDPA__CHECK(ctx, (int)d->qk_norm >= 0 && d->qk_norm <= SDPA_QK_NORM_L2,
                SDPA_ERR_INVALID_ARG, "qk_norm %d is not an sdpa_qk_norm", (int)d->qk_norm);
    SDPA__CHECK(ctx, isfinite(d->qk_norm_eps) && d->qk_norm_eps > 0, SDPA_ERR_INVALID_ARG,
                "qk_norm_eps is %g: must be finite and > 0", d->qk_norm_eps);
    SDPA__CHECK(ctx, isfinite(d->stats_saturation) && d->stats_saturation > 0 &&
                         d->stats_saturation <= 1,
                SDPA_ERR_INVALID_ARG, "stats_saturation is %g: must lie in (0, 1]",
                d->stats_saturation);
    SDPA__TRY(check_f32_attrs(ctx, d, p));
    p->diagonal = d->diagonal;
    canonical_band(p, d->diagonal_offset, d->window_left, d->window_right);
    p->softcap = d->softcap;
    p->qk_norm = d->qk_norm;
    p->qk_norm_eps = d->qk_norm_eps;
    p->stats_saturation = d->stats_saturation;
    return SDPA_OK;
}

sdpa_status sdpa__validate_desc(sdpa_context *ctx, const sdpa_attention_desc *desc,
                                sdpa__shape_key *key)
{
    if (!desc || !key) return SDPA__FAIL(ctx, SDPA_ERR_NULL, "attention description is NULL");
    sdpa_attention_desc full; /* fields past an older caller's size: defaults */
    sdpa_attention_desc_init(&full);
    SDPA__TRY(sdpa__struct_take(ctx, &full, sizeof full, desc, SDPA_ATTENTION_DESC_SIZE_V1,
                                "desc", "call sdpa_attention_desc_init first"));
    desc = &full;
    memset(key, 0, sizeof *key);
    sdpa__problem *p = &key->problem;
    const sdpa_forward_tensors *t = &desc->tensors;

    for (int i = SDPA__T_Q; i <= SDPA__T_OUT; i++) {
        const sdpa_tensor *x = sdpa__fwd_slot(t, i);
        SDPA__CHECK(ctx, x->dtype != SDPA_DTYPE_NONE, SDPA_ERR_INVALID_ARG,
                    "%s is required but absent (dtype SDPA_DTYPE_NONE)", sdpa__fwd_names[i]);
        SDPA__TRY(sdpa__check_layout(ctx, sdpa__fwd_names[i], x, false));
    }
    SDPA__CHECK(ctx, is_float(t->q.dtype), SDPA_ERR_DTYPE,
                "tensors.q.dtype is %s: must be f32, f16 or bf16", sdpa_dtype_name(t->q.dtype));
    p->dtype = t->q.dtype;
    p->B = t->q.shape[0];
    p->Hq = t->q.shape[1];
    p->Sq = t->q.shape[2];
    p->D = t->q.shape[3];
    p->Hkv = t->k.shape[1];
    p->Skv = t->k.shape[2];
    p->Dv = t->v.shape[3];
    SDPA__CHECK(ctx, p->Hq % p->Hkv == 0, SDPA_ERR_SHAPE,
                "query heads (%lld) must be a multiple of key/value heads (%lld)",
                (long long)p->Hq, (long long)p->Hkv);

    for (int i = 0; i < SDPA__T_COUNT; i++) {
        const sdpa_tensor *x = sdpa__fwd_slot(t, i);
        key->dtypes[i] = x->dtype;
        memcpy(key->shapes[i], x->shape, sizeof x->shape);
        if (x->dtype == SDPA_DTYPE_NONE) continue;
        const char *name = sdpa__fwd_names[i];
        if (i > SDPA__T_OUT) SDPA__TRY(sdpa__check_layout(ctx, name, x, false));
        sdpa_dtype want = fwd_dtype(i, p->dtype);
        SDPA__CHECK(ctx, x->dtype == want, SDPA_ERR_DTYPE, "%s.dtype is %s, expected %s", name,
                    sdpa_dtype_name(x->dtype), sdpa_dtype_name(want));
        int64_t shape[4];
        fwd_shape(p, i, shape);
        SDPA__TRY(check_shape(ctx, name, i, x->shape, shape,
                              i == SDPA__T_MASK || i == SDPA__T_BIAS));
    }
    p->has_mask = t->mask.dtype != SDPA_DTYPE_NONE;
    p->has_bias = t->bias.dtype != SDPA_DTYPE_NONE;
    p->has_kv_len = t->kv_len.dtype != SDPA_DTYPE_NONE;
    p->has_q_gain = t->q_gain.dtype != SDPA_DTYPE_NONE;
    p->has_k_gain = t->k_gain.dtype != SDPA_DTYPE_NONE;
    p->has_temperature = t->temperature.dtype != SDPA_DTYPE_NONE;
    p->has_lse = t->lse.dtype != SDPA_DTYPE_NONE;
    p->has_stats = t->stats.dtype != SDPA_DTYPE_NONE;
    SDPA__TRY(validate_scalars(ctx, desc, p));
    SDPA__CHECK(ctx, !(p->has_q_gain || p->has_k_gain) || p->qk_norm != SDPA_QK_NORM_NONE,
                SDPA_ERR_INVALID_ARG, "tensors.q_gain/k_gain need qk_norm != SDPA_QK_NORM_NONE");
    return SDPA_OK;
}

static sdpa_status check_kv_len_values(sdpa_context *ctx, const sdpa__problem *p,
                                       const sdpa_tensor *t)
{
    if (!t->host) return SDPA_OK; /* device values are clamped by the kernels */
    const int32_t *v = t->host;
    for (int64_t b = 0; b < p->B; b++) {
        int32_t n = v[(int64_t)t->offset + b * (t->shape[0] > 1 ? t->stride[0] : 0)];
        SDPA__CHECK(ctx, n >= 0 && n <= p->Skv, SDPA_ERR_INVALID_ARG,
                    "tensors.kv_len[%lld] is %d: must lie in [0, Skv=%lld]", (long long)b,
                    (int)n, (long long)p->Skv);
    }
    return SDPA_OK;
}

/* x against the plan's dtype and shape of forward slot `slot`. */
static sdpa_status check_call_tensor(sdpa_context *ctx, const char *name, int slot,
                                     const sdpa_tensor *x, sdpa_dtype want_dtype,
                                     const int64_t want_shape[4], bool output)
{
    SDPA__CHECK(ctx, x->dtype == want_dtype, SDPA_ERR_DTYPE, "%s.dtype is %s, the plan has %s",
                name, sdpa_dtype_name(x->dtype), sdpa_dtype_name(want_dtype));
    if (want_dtype == SDPA_DTYPE_NONE) return SDPA_OK;
    SDPA__TRY(check_shape(ctx, name, slot, x->shape, want_shape, false));
    for (int a = 0; output && a < 4; a++)
        SDPA__CHECK(ctx, x->shape[a] == 1 || x->stride[a] != 0, SDPA_ERR_STRIDE,
                    "%s.stride[%d] is 0 on an axis of extent %lld: an output cannot broadcast",
                    name, a, (long long)x->shape[a]);
    SDPA__TRY(sdpa__check_layout(ctx, name, x, true));
    return output ? sdpa__check_no_self_overlap(ctx, name, x) : SDPA_OK;
}

sdpa_status sdpa__validate_forward_call(sdpa_context *ctx, const sdpa__shape_key *key,
                                        const sdpa_forward_tensors *t, bool backward)
{
    if (!t) return SDPA__FAIL(ctx, SDPA_ERR_NULL, "forward tensors are NULL");
    for (int i = 0; i < SDPA__T_COUNT; i++)
        SDPA__TRY(check_call_tensor(ctx, sdpa__fwd_names[i], i, sdpa__fwd_slot(t, i),
                                    key->dtypes[i], key->shapes[i],
                                    !backward && (i == SDPA__T_OUT || i == SDPA__T_LSE ||
                                                  i == SDPA__T_STATS)));
    if (key->problem.has_kv_len)
        SDPA__TRY(check_kv_len_values(ctx, &key->problem, &t->kv_len));
    return SDPA_OK;
}

sdpa_status sdpa__validate_backward_call(sdpa_context *ctx, const sdpa__shape_key *key,
                                         const sdpa_backward_tensors *g)
{
    if (!g) return SDPA__FAIL(ctx, SDPA_ERR_NULL, "backward tensors are NULL");
    const int src[SDPA__G_COUNT] = {SDPA__T_OUT, SDPA__T_Q, SDPA__T_K, SDPA__T_V,
                                    SDPA__T_Q_GAIN, SDPA__T_K_GAIN, SDPA__T_TEMPERATURE};
    for (int i = 0; i < SDPA__G_COUNT; i++) {
        const sdpa_tensor *x = sdpa__bwd_slot(g, i);
        sdpa_dtype want = key->dtypes[src[i]];
        bool optional = i >= SDPA__G_DQ_GAIN;
        if (optional && x->dtype == SDPA_DTYPE_NONE) continue;
        SDPA__CHECK(ctx, !(optional && want == SDPA_DTYPE_NONE), SDPA_ERR_INVALID_ARG,
                    "%s is given but the plan has no %s", sdpa__bwd_names[i],
                    sdpa__fwd_names[src[i]]);
        SDPA__CHECK(ctx, x->dtype != SDPA_DTYPE_NONE, SDPA_ERR_INVALID_ARG,
                    "%s is required but absent", sdpa__bwd_names[i]);
        SDPA__TRY(check_call_tensor(ctx, sdpa__bwd_names[i], src[i], x, want, key->shapes[src[i]],
                                    i != SDPA__G_DOUT));
    }
    return SDPA_OK;
}

sdpa_status sdpa__validate_aliasing(sdpa_context *ctx, const sdpa_forward_tensors *t,
                                    const sdpa_backward_tensors *g)
{
    const sdpa_tensor *x[SDPA__T_COUNT + SDPA__G_COUNT];
    const char *name[SDPA__T_COUNT + SDPA__G_COUNT];
    bool output[SDPA__T_COUNT + SDPA__G_COUNT];
    int n = 0;
    for (int i = 0; i < SDPA__T_COUNT; i++) {
        if (g && i == SDPA__T_STATS) continue; /* the backward does not read it */
        x[n] = sdpa__fwd_slot(t, i);
        name[n] = sdpa__fwd_names[i];
        output[n++] = !g && (i == SDPA__T_OUT || i == SDPA__T_LSE || i == SDPA__T_STATS);
    }
    for (int i = 0; g && i < SDPA__G_COUNT; i++) {
        x[n] = sdpa__bwd_slot(g, i);
        name[n] = sdpa__bwd_names[i];
        output[n++] = i != SDPA__G_DOUT;
    }
    /* every pair with an output in it, once; inputs may share memory */
    for (int i = 0; i < n; i++)
        for (int j = 0; output[i] && j < n; j++)
            if (j != i && (!output[j] || j > i))
                SDPA__TRY(sdpa__check_disjoint(ctx, name[i], x[i], name[j], x[j]));
    return SDPA_OK;
}
