/*
 * validate.c — every description and every call's tensors are checked here,
 * once, before any backend sees them. Each failure gets the specific status
 * and a message naming the field (e.g. "tensors.k.shape[3] is 32 but q's head
 * dim D is 64"). Size arithmetic is checked for overflow throughout: a shape
 * whose element count or byte span does not fit int64/size_t is SDPA_ERR_SHAPE.
 */
#include "validate.h"
#include "capabilities.h"
#include "overlap.h"

#include <float.h>
#include <math.h>
#include <stddef.h>

sdpa_tensor sdpa__tensor_units(const sdpa_tensor *t)
{
    sdpa_tensor u = *t;
    int64_t blk = sdpa_dtype_block_elems(t->dtype);
    if (blk > 1 && t->shape[3] > 0) u.shape[3] = t->shape[3] / blk;
    return u;
}

int64_t sdpa__tensor_span(const sdpa_tensor *t)
{
    sdpa_tensor units = sdpa__tensor_units(t);
    t = &units;
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
    int64_t blk = sdpa_dtype_block_elems(t->dtype);
    if (blk > 1) { /* block types: the last axis holds whole, consecutive blocks */
        SDPA__CHECK(ctx, t->shape[3] % blk == 0, SDPA_ERR_SHAPE,
                    "%s.shape[3] is %lld: a %s tensor's last axis must be a multiple of %lld",
                    name, (long long)t->shape[3], sdpa_dtype_name(t->dtype), (long long)blk);
        SDPA__CHECK(ctx, t->shape[3] <= blk || t->stride[3] == 1, SDPA_ERR_STRIDE,
                    "%s.stride[3] is %lld: a %s tensor's last axis must hold consecutive "
                    "blocks (stride 1; strides count blocks)",
                    name, (long long)t->stride[3], sdpa_dtype_name(t->dtype));
    }
    sdpa_tensor units = sdpa__tensor_units(t);
    t = &units; /* from here on, shapes in storage units */
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

/* Expected shape of forward slot `slot` (its axes column). */
static void fwd_shape(const sdpa__problem *p, int slot, int64_t s[4])
{
    for (int a = 0; a < 4; a++) s[a] = sdpa__axis_extent(sdpa__fwd_info[slot].axes[a], p);
}

/* Checks got against want for forward slot `slot`; axes in `broadcast` (a
 * mask, slots.h) may also have extent 1. */
static sdpa_status check_shape(sdpa_context *ctx, const char *name, int slot,
                               const int64_t got[4], const int64_t want[4], unsigned broadcast)
{
    for (int a = 0; a < 4; a++) {
        bool may_be_1 = (broadcast >> a & 1u) && want[a] != 1;
        bool ok = got[a] == want[a] || (may_be_1 && got[a] == 1);
        SDPA__CHECK(ctx, ok, SDPA_ERR_SHAPE,
                    "%s.shape[%d] (%s) is %lld, expected %lld%s", name, a,
                    sdpa__axis_meaning(sdpa__fwd_info[slot].axes[a]),
                    (long long)got[a], (long long)want[a], may_be_1 ? " or 1 (broadcast)" : "");
    }
    return SDPA_OK;
}

static int64_t clamp64(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* Rewrites the band into an equivalent one whose offset and window values lie
 * within about Sq + Skv, so that no backend's index arithmetic (int64 here,
 * often int32 in kernels) can overflow, whatever the user passed (|values| <
 * 2^62 by validation). Row i keeps keys j with lo(i) <= j < hi(i), where
 * lo = max(0, i + A), A = off - left, and hi = min(keys, i + B + 1),
 * B = off + right, for the batch's valid key count keys. For i in [0, Sq) and
 * keys <= Skv, any A <= -Sq acts like
 * -Sq - 1 and any A >= Skv like Skv + 1 (the same for B), so clamping A and B
 * there changes nothing; an edge that can never bind becomes -1. */
static void canonical_band(sdpa__problem *p, int64_t off, int64_t left, int64_t right)
{
    const int64_t lim = p->Sq + p->Skv + 1;
    if (p->diagonal != SDPA_DIAGONAL_EXPLICIT) {
        /* off = 0 or keys - Sq lies in [-Sq, Skv]: larger windows never bind */
        p->diagonal_offset = 0;
        p->window_left = left >= lim ? -1 : left;
        p->window_right = right >= lim ? -1 : right;
        return;
    }
    int64_t A = left >= 0 ? clamp64(off - left, -p->Sq - 1, p->Skv + 1) : 0;
    int64_t B = right >= 0 ? clamp64(off + right, -p->Sq - 1, p->Skv + 1) : 0;
    if (left >= 0 && A <= -p->Sq) left = -1;  /* lo is always 0 */
    if (right >= 0 && B >= p->Skv) right = -1; /* hi is always keys */
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

/* The attribute table (SDPA__ATTRS in slots.h) as data: where each field
 * lies in the description and in the problem, how to read it, its rule. */
typedef enum attr_kind { ATTR_DOUBLE, ATTR_INT64, ATTR_ENUM } attr_kind;
typedef enum attr_rule {
    RULE_SCALE, RULE_ENUM, RULE_OFFSET, RULE_WINDOW, RULE_CAP, RULE_POS, RULE_UNIT
} attr_rule;
typedef struct attr_info {
    const char *name, *type;
    size_t desc_off, prob_off;
    attr_kind kind;
    attr_rule rule;
    bool f32;
    int max; /* RULE_ENUM */
} attr_info;

#define ATTR_KIND(f) \
    _Generic(((sdpa_attention_desc *)0)->f, double: ATTR_DOUBLE, int64_t: ATTR_INT64, default: ATTR_ENUM)
static const attr_info k_attrs[] = {
#define SDPA__X(f, ctype, def, rule, f32, max)                                             \
    {#f, #ctype, offsetof(sdpa_attention_desc, f), offsetof(sdpa__problem, f), ATTR_KIND(f), \
     RULE_##rule, f32, max},
    SDPA__ATTRS(SDPA__X)
#undef SDPA__X
};

/* One attribute's rule; each failure names the field (SDPA_ERR_INVALID_ARG). */
static sdpa_status check_attr(sdpa_context *ctx, const sdpa_attention_desc *d, const attr_info *a)
{
    const int64_t lim = (int64_t)1 << 62;
    const char *base = (const char *)d + a->desc_off;
    double x = 0;
    int64_t n = 0;
    int e = 0;
    switch (a->kind) {
    case ATTR_DOUBLE: memcpy(&x, base, sizeof x); break;
    case ATTR_INT64: memcpy(&n, base, sizeof n); break;
    case ATTR_ENUM: memcpy(&e, base, sizeof e); break;
    }
    switch (a->rule) {
    case RULE_SCALE:
        if (x == SDPA_SCALE_DEFAULT || x == SDPA_SCALE_MUP) return SDPA_OK;
        SDPA__CHECK(ctx, isfinite(x) && x > 0, SDPA_ERR_INVALID_ARG,
                    "%s is %g: must be finite and > 0, or SDPA_SCALE_DEFAULT / SDPA_SCALE_MUP",
                    a->name, x);
        break;
    case RULE_ENUM:
        SDPA__CHECK(ctx, e >= 0 && e <= a->max, SDPA_ERR_INVALID_ARG, "%s %d is not an %s",
                    a->name, e, a->type);
        break;
    case RULE_OFFSET:
        SDPA__CHECK(ctx, n > -lim && n < lim, SDPA_ERR_INVALID_ARG, "%s %lld is out of range",
                    a->name, (long long)n);
        break;
    case RULE_WINDOW:
        SDPA__CHECK(ctx, n >= -1 && n < lim, SDPA_ERR_INVALID_ARG,
                    "%s is %lld: must be -1 (unbounded) or >= 0", a->name, (long long)n);
        break;
    case RULE_CAP:
        SDPA__CHECK(ctx, isfinite(x) && x >= 0, SDPA_ERR_INVALID_ARG,
                    "%s is %g: must be 0 (none) or a finite value > 0", a->name, x);
        break;
    case RULE_POS:
        SDPA__CHECK(ctx, isfinite(x) && x > 0, SDPA_ERR_INVALID_ARG,
                    "%s is %g: must be finite and > 0", a->name, x);
        break;
    case RULE_UNIT:
        SDPA__CHECK(ctx, isfinite(x) && x > 0 && x <= 1, SDPA_ERR_INVALID_ARG,
                    "%s is %g: must lie in (0, 1]", a->name, x);
        break;
    }
    return SDPA_OK;
}

/* The f32 backends compute with the attributes marked f32 in f32 (the
 * rows with f32 = 1): each non-zero resolved value must be a normal f32 value
 * (in [FLT_MIN, FLT_MAX]), or the f32 result would differ from the float64
 * reference (1e39 becomes inf and every output NaN; a subnormal cap or eps
 * may be flushed to 0 and divide by it). Runs after the rules, so a value
 * reaching here is >= 0. */
static sdpa_status check_f32_attr(sdpa_context *ctx, const sdpa__problem *p, const attr_info *a)
{
    if (!a->f32 || a->kind != ATTR_DOUBLE) return SDPA_OK;
    double v;
    memcpy(&v, (const char *)p + a->prob_off, sizeof v);
    SDPA__CHECK(ctx, v == 0 || (v >= FLT_MIN && v <= FLT_MAX), SDPA_ERR_INVALID_ARG,
                "%s is %g: outside the f32 range [%g, %g] the kernels compute in", a->name, v,
                (double)FLT_MIN, (double)FLT_MAX);
    return SDPA_OK;
}

static sdpa_status validate_scalars(sdpa_context *ctx, const sdpa_attention_desc *d,
                                    sdpa__problem *p)
{
    const size_t n = sizeof k_attrs / sizeof k_attrs[0];
    for (size_t i = 0; i < n; i++) SDPA__TRY(check_attr(ctx, d, &k_attrs[i]));
#define SDPA__X(f, ctype, def, rule, f32, max) p->f = d->f;
    SDPA__ATTRS(SDPA__X)
#undef SDPA__X
    if (d->scale == SDPA_SCALE_DEFAULT) p->scale = 1.0 / sqrt((double)p->D);
    else if (d->scale == SDPA_SCALE_MUP) p->scale = 1.0 / (double)p->D;
    for (size_t i = 0; i < n; i++) SDPA__TRY(check_f32_attr(ctx, p, &k_attrs[i]));
    canonical_band(p, d->diagonal_offset, d->window_left, d->window_right);
    /* ALiBi needs the offset itself, not the band's canonical form (only
     * set with ALiBi, so it splits no plan cache entry otherwise) */
    p->alibi_offset =
        p->has_alibi_slopes && p->diagonal == SDPA_DIAGONAL_EXPLICIT ? d->diagonal_offset : 0;
    return SDPA_OK;
}

/* The problem extent an axis letter stands for, to fill from the required
 * tensors (NULL for the fixed letters C and 1). */
static int64_t *extent_ref(sdpa__problem *p, char c)
{
    switch (c) {
    case 'B': return &p->B;
    case 'Q': return &p->Hq;
    case 'K': return &p->Hkv;
    case 's': return &p->Sq;
    case 'k': return &p->Skv;
    case 'D': return &p->D;
    case 'V': return &p->Dv;
    case 'P': return &p->pages;
    case 'G': return &p->page;
    case 'T': return &p->max_pages;
    default: return NULL;
    }
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

    /* The required tensors, in table order, define the problem's extents:
     * each axis letter takes its extent from the first one that has it (q:
     * B, Hq, Sq, D; k: Hkv, Skv; v: Dv); the shape checks below hold every
     * tensor to them. */
    const bool paged = t->block_table.dtype != SDPA_DTYPE_NONE;
    /* the other kind's K/V first: a missing block table is named as such,
     * not as a missing k */
    for (int i = 0; i < SDPA__T_COUNT; i++)
        SDPA__CHECK(ctx,
                    !sdpa__slot_forbidden(i, paged) || sdpa__fwd_slot(t, i)->dtype == SDPA_DTYPE_NONE,
                    SDPA_ERR_INVALID_ARG,
                    paged ? "%s is given in a paged call (tensors.block_table is given): paged "
                            "K/V come in tensors.k_pages and tensors.v_pages"
                          : "%s is given without tensors.block_table (paged K/V need it)",
                    sdpa__fwd_info[i].name);
    for (int i = 0; i < SDPA__T_COUNT; i++) {
        const sdpa_tensor *x = sdpa__fwd_slot(t, i);
        const char *name = sdpa__fwd_info[i].name;
        if (!sdpa__slot_required(i, paged)) continue;
        SDPA__CHECK(ctx, x->dtype != SDPA_DTYPE_NONE, SDPA_ERR_INVALID_ARG,
                    "%s is required but absent (dtype SDPA_DTYPE_NONE)", name);
        SDPA__TRY(sdpa__check_layout(ctx, name, x, false));
        for (int a = 0; a < 4; a++) {
            int64_t *e = extent_ref(p, sdpa__fwd_info[i].axes[a]);
            if (e && *e == 0) *e = x->shape[a];
        }
    }
    if (paged) { /* the block table gives the batch and the logical key count */
        const sdpa_tensor *bt = &t->block_table;
        SDPA__TRY(sdpa__check_layout(ctx, "tensors.block_table", bt, false));
        p->max_pages = bt->shape[3];
        SDPA__CHECK(ctx, sdpa__mul_i64(p->max_pages, p->page, &p->Skv) && p->Skv < INT32_MAX,
                    SDPA_ERR_SHAPE,
                    "paged K/V: max_pages (%lld) x page (%lld) keys must stay below 2^31",
                    (long long)p->max_pages, (long long)p->page);
        SDPA__CHECK(ctx, t->kv_len.dtype != SDPA_DTYPE_NONE, SDPA_ERR_INVALID_ARG,
                    "paged K/V (tensors.block_table) need tensors.kv_len: the valid keys "
                    "per batch");
        SDPA__CHECK(ctx, t->v_pages.dtype == t->k_pages.dtype, SDPA_ERR_DTYPE,
                    "tensors.v_pages.dtype is %s but tensors.k_pages.dtype is %s: K and V "
                    "share one storage dtype", sdpa_dtype_name(t->v_pages.dtype),
                    sdpa_dtype_name(t->k_pages.dtype));
    }
    SDPA__CHECK(ctx, is_float(t->q.dtype), SDPA_ERR_DTYPE,
                "tensors.q.dtype is %s: must be f32, f16 or bf16", sdpa_dtype_name(t->q.dtype));
    p->dtype = t->q.dtype;
    const sdpa_tensor *kt = paged ? &t->k_pages : &t->k;
    const char *kname = paged ? "tensors.k_pages" : "tensors.k";
    p->kv_dtype = kt->dtype;
    SDPA__CHECK(ctx, is_float(kt->dtype) || sdpa__dtype_is_block(kt->dtype), SDPA_ERR_DTYPE,
                "%s.dtype is %s: K/V must be f32, f16, bf16, q8_0 or q4_0", kname,
                sdpa_dtype_name(kt->dtype));
    SDPA__CHECK(ctx, !sdpa__dtype_is_block(kt->dtype) || (p->D % 32 == 0 && p->Dv % 32 == 0),
                SDPA_ERR_SHAPE, "%s.dtype is %s: D (%lld) and Dv (%lld) must be multiples of 32",
                kname, sdpa_dtype_name(kt->dtype), (long long)p->D, (long long)p->Dv);
    SDPA__CHECK(ctx, p->Hq % p->Hkv == 0, SDPA_ERR_SHAPE,
                "query heads (%lld) must be a multiple of key/value heads (%lld)",
                (long long)p->Hq, (long long)p->Hkv);

    for (int i = 0; i < SDPA__T_COUNT; i++) {
        const sdpa_tensor *x = sdpa__fwd_slot(t, i);
        key->dtypes[i] = x->dtype;
        memcpy(key->shapes[i], x->shape, sizeof x->shape);
        if (x->dtype == SDPA_DTYPE_NONE) continue;
        const char *name = sdpa__fwd_info[i].name;
        if (sdpa__fwd_info[i].optional) SDPA__TRY(sdpa__check_layout(ctx, name, x, false));
        sdpa_dtype want = sdpa__slot_dtype(i, p->dtype, p->kv_dtype);
        SDPA__CHECK(ctx, x->dtype == want, SDPA_ERR_DTYPE, "%s.dtype is %s, expected %s", name,
                    sdpa_dtype_name(x->dtype), sdpa_dtype_name(want));
        int64_t shape[4];
        fwd_shape(p, i, shape);
        SDPA__TRY(check_shape(ctx, name, i, x->shape, shape, sdpa__fwd_info[i].broadcast));
    }
#define SDPA__SET_OPT(f) p->has_##f = t->f.dtype != SDPA_DTYPE_NONE;
#define SDPA__SET_PAGED(f) SDPA__SET_OPT(f)
#define SDPA__SET_KV(f)
#define SDPA__SET_REQ(f)
#define SDPA__X(id, f, role, dt, axes, bc, pres, grad) SDPA__SET_##pres(f)
    SDPA__FWD_SLOTS(SDPA__X)
#undef SDPA__X
#undef SDPA__SET_OPT
#undef SDPA__SET_PAGED
#undef SDPA__SET_KV
#undef SDPA__SET_REQ
    SDPA__TRY(validate_scalars(ctx, desc, p));
    SDPA__CHECK(ctx, !(p->has_q_gain || p->has_k_gain) || p->qk_norm != SDPA_QK_NORM_NONE,
                SDPA_ERR_INVALID_ARG, "tensors.q_gain/k_gain need qk_norm != SDPA_QK_NORM_NONE");
    return SDPA_OK;
}

sdpa_status sdpa__validate_flags(sdpa_context *ctx, const sdpa__problem *p, unsigned flags)
{
    if (!(flags & SDPA_PLAN_BACKWARD)) return SDPA_OK;
    SDPA__CHECK(ctx, !sdpa__dtype_is_block(p->kv_dtype), SDPA_ERR_INVALID_ARG,
                "K/V dtype %s is forward only: SDPA_PLAN_BACKWARD needs f32, f16 or bf16 K/V",
                sdpa_dtype_name(p->kv_dtype));
    SDPA__CHECK(ctx, !p->has_block_table, SDPA_ERR_INVALID_ARG,
                "paged K/V (tensors.block_table) are forward only: SDPA_PLAN_BACKWARD cannot "
                "be set");
    return SDPA_OK;
}

/* The largest value an i32 slot may hold (slots.h): kv_len counts keys,
 * block_table indexes pool pages. */
static int64_t value_bound(int slot, const sdpa__problem *p)
{
    return slot == SDPA__T_BLOCK_TABLE ? p->pages - 1 : p->Skv;
}

/* The values of a host tensor of an i32 slot lie in [0, value_bound];
 * device values are clamped by the kernels. */
static sdpa_status check_count_values(sdpa_context *ctx, const sdpa__problem *p, int slot,
                                      const char *name, const sdpa_tensor *t)
{
    const int64_t bound = value_bound(slot, p);
    if (!t->host) return SDPA_OK;
    const int32_t *v = t->host;
    int64_t flat = 0;
    for (int64_t i0 = 0; i0 < t->shape[0]; i0++)
        for (int64_t i1 = 0; i1 < t->shape[1]; i1++)
            for (int64_t i2 = 0; i2 < t->shape[2]; i2++)
                for (int64_t i3 = 0; i3 < t->shape[3]; i3++, flat++) {
                    const int64_t idx[4] = {i0, i1, i2, i3};
                    int64_t e = (int64_t)t->offset;
                    for (int a = 0; a < 4; a++)
                        if (t->shape[a] > 1) e += idx[a] * t->stride[a];
                    SDPA__CHECK(ctx, v[e] >= 0 && v[e] <= bound, SDPA_ERR_INVALID_ARG,
                                "%s[%lld] is %d: must lie in [0, %s=%lld]", name,
                                (long long)flat, (int)v[e],
                                slot == SDPA__T_BLOCK_TABLE ? "pages-1" : "Skv",
                                (long long)bound);
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
    SDPA__TRY(check_shape(ctx, name, slot, x->shape, want_shape, SDPA__BCAST_NONE));
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
        SDPA__TRY(check_call_tensor(ctx, sdpa__fwd_info[i].name, i, sdpa__fwd_slot(t, i),
                                    key->dtypes[i], key->shapes[i],
                                    sdpa__fwd_is_output(i, backward)));
    for (int i = 0; i < SDPA__T_COUNT; i++)
        if (sdpa__fwd_info[i].dtype == SDPA__DT_I32 && key->dtypes[i] != SDPA_DTYPE_NONE)
            SDPA__TRY(check_count_values(ctx, &key->problem, i, sdpa__fwd_info[i].name,
                                         sdpa__fwd_slot(t, i)));
    return SDPA_OK;
}

sdpa_status sdpa__validate_backward_call(sdpa_context *ctx, const sdpa__shape_key *key,
                                         const sdpa_backward_tensors *g)
{
    if (!g) return SDPA__FAIL(ctx, SDPA_ERR_NULL, "backward tensors are NULL");
    for (int i = 0; i < SDPA__G_COUNT; i++) {
        const sdpa_tensor *x = sdpa__bwd_slot(g, i);
        const char *name = sdpa__bwd_info[i].name;
        const int src = sdpa__bwd_of[i];
        sdpa_dtype want = key->dtypes[src];
        bool optional = sdpa__bwd_info[i].optional;
        if (optional && x->dtype == SDPA_DTYPE_NONE) continue;
        SDPA__CHECK(ctx, !(optional && want == SDPA_DTYPE_NONE), SDPA_ERR_INVALID_ARG,
                    "%s is given but the plan has no %s", name, sdpa__fwd_info[src].name);
        SDPA__CHECK(ctx, x->dtype != SDPA_DTYPE_NONE, SDPA_ERR_INVALID_ARG,
                    "%s is required but absent", name);
        SDPA__TRY(check_call_tensor(ctx, name, src, x, want, key->shapes[src],
                                    sdpa__bwd_info[i].role == SDPA__ROLE_OUT));
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
        if (g && !sdpa__fwd_read_by_backward(i)) continue; /* e.g. stats */
        x[n] = sdpa__fwd_slot(t, i);
        name[n] = sdpa__fwd_info[i].name;
        output[n++] = sdpa__fwd_is_output(i, g != NULL);
    }
    for (int i = 0; g && i < SDPA__G_COUNT; i++) {
        x[n] = sdpa__bwd_slot(g, i);
        name[n] = sdpa__bwd_info[i].name;
        output[n++] = sdpa__bwd_info[i].role == SDPA__ROLE_OUT;
    }
    /* every pair with an output in it, once; inputs may share memory */
    for (int i = 0; i < n; i++)
        for (int j = 0; output[i] && j < n; j++)
            if (j != i && (!output[j] || j > i))
                SDPA__TRY(sdpa__check_disjoint(ctx, name[i], x[i], name[j], x[j]));
    return SDPA_OK;
}
