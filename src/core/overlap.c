/*
 * overlap.c — see overlap.h. Both questions become one: does a sum of
 * positive terms c_i * x_i (0 <= x_i <= ub_i) land in an interval [lo, hi]?
 * For a pair (a, b) the terms are a's byte strides and b's (b's index
 * reflected, x -> ub - x) and the interval allows for the element sizes; for
 * one tensor they are the differences of two index tuples whose first
 * non-zero component is positive. solve() answers by depth-first search,
 * largest coefficient first, keeping only the x_i for which the remaining
 * terms can still reach the interval and whose remainder the gcd of the
 * remaining coefficients can divide; a step budget bounds the work.
 */
#include "overlap.h"
#include "validate.h"

#define MAX_TERMS 9     /* 4 axes per tensor, two tensors, one slack term */
#define STEP_BUDGET 100000

typedef struct term {
    int64_t c, ub; /* coefficient > 0, bound >= 0 */
} term;

typedef struct lattice {
    term t[MAX_TERMS];
    int n;
    int64_t reach[MAX_TERMS + 1]; /* sum of c * ub over terms i.. */
    int64_t gcd[MAX_TERMS + 1];   /* gcd of c over terms i.. (0 past the end) */
    int64_t steps;
    bool overflow;
} lattice;

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }
static int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

static void add_term(lattice *l, int64_t c, int64_t ub)
{
    if (c == 0 || ub == 0) return;
    if (l->n == MAX_TERMS) {
        l->overflow = true;
        return;
    }
    l->t[l->n++] = (term){c, ub};
}

/* Sorts by coefficient, largest first, merges equal coefficients (c x + c y
 * reaches exactly the values c z does, z <= ub_x + ub_y: without this, two
 * tensors with the same strides would cost a step per index) and fills the
 * suffix tables. */
static void prepare(lattice *l)
{
    for (int i = 1; i < l->n; i++)
        for (int j = i; j > 0 && l->t[j].c > l->t[j - 1].c; j--) {
            term x = l->t[j];
            l->t[j] = l->t[j - 1];
            l->t[j - 1] = x;
        }
    int m = 0;
    for (int i = 0; i < l->n; i++) {
        if (m > 0 && l->t[m - 1].c == l->t[i].c) {
            if (!sdpa__add_i64(l->t[m - 1].ub, l->t[i].ub, &l->t[m - 1].ub)) l->overflow = true;
        } else {
            l->t[m++] = l->t[i];
        }
    }
    l->n = m;
    l->reach[l->n] = 0;
    l->gcd[l->n] = 0;
    for (int i = l->n - 1; i >= 0; i--) {
        int64_t r;
        if (!sdpa__mul_i64(l->t[i].c, l->t[i].ub, &r) ||
            !sdpa__add_i64(r, l->reach[i + 1], &l->reach[i]))
            l->overflow = true;
        l->gcd[i] = gcd64(l->t[i].c, l->gcd[i + 1]);
    }
    l->steps = 0;
}

/* 1: some choice of x_i, i >= k, puts the sum in [lo, hi]; 0: none;
 * -1: the step budget ran out. */
static int solve(lattice *l, int k, int64_t lo, int64_t hi)
{
    if (lo < 0) lo = 0;
    if (hi > l->reach[k]) hi = l->reach[k];
    if (lo > hi) return 0;
    if (k == l->n) return 1; /* lo <= 0 <= hi */
    int64_t g = l->gcd[k];
    if (floor_div(hi, g) * g < lo) return 0;
    if (++l->steps > STEP_BUDGET) return -1;
    const term *t = &l->t[k];
    int64_t x0 = ceil_div(lo - l->reach[k + 1], t->c), x1 = floor_div(hi, t->c);
    if (x0 < 0) x0 = 0;
    if (x1 > t->ub) x1 = t->ub;
    for (int64_t x = x0; x <= x1; x++) {
        int r = solve(l, k + 1, lo - t->c * x, hi - t->c * x);
        if (r != 0) return r;
    }
    return 0;
}

static sdpa__overlap settle(lattice *l, int64_t lo, int64_t hi)
{
    prepare(l);
    if (l->overflow) return SDPA__MAYBE;
    int r = solve(l, 0, lo, hi);
    return r < 0 ? SDPA__MAYBE : r ? SDPA__OVERLAP : SDPA__DISJOINT;
}

/* Where t's first element lies: a memory space (NULL = the host address
 * space) and a byte address in it. Buffers of host-memory backends are host
 * memory; device buffers are spaces of their own. */
static void locate(const sdpa_tensor *t, const void **space, uint64_t *byte)
{
    uint64_t base;
    if (t->host) {
        *space = NULL;
        base = (uint64_t)(uintptr_t)t->host;
    } else if (t->buf->ctx->primary.backend->host_memory) {
        *space = NULL;
        base = (uint64_t)(uintptr_t)t->buf->handle;
    } else {
        *space = t->buf->handle;
        base = 0;
    }
    *byte = base + (uint64_t)t->offset * sdpa_dtype_size(t->dtype);
}

/* Adds t's axes (extent > 1, stride > 0) as terms; returns the byte reach
 * sum c * ub, or -1 on overflow. */
static int64_t add_axes(lattice *l, const sdpa_tensor *t)
{
    int64_t es = (int64_t)sdpa_dtype_size(t->dtype), reach = 0;
    for (int a = 0; a < 4; a++) {
        if (t->shape[a] <= 1 || t->stride[a] == 0) continue;
        int64_t c, r;
        if (!sdpa__mul_i64(t->stride[a], es, &c) || !sdpa__mul_i64(c, t->shape[a] - 1, &r) ||
            !sdpa__add_i64(reach, r, &reach))
            return -1;
        add_term(l, c, t->shape[a] - 1);
    }
    return reach;
}

sdpa__overlap sdpa__tensors_overlap(const sdpa_tensor *a, const sdpa_tensor *b)
{
    if (a->dtype == SDPA_DTYPE_NONE || b->dtype == SDPA_DTYPE_NONE) return SDPA__DISJOINT;
    sdpa_tensor ua = sdpa__tensor_units(a), ub = sdpa__tensor_units(b); /* block types */
    a = &ua;
    b = &ub;
    const void *sa, *sb;
    uint64_t pa, pb;
    locate(a, &sa, &pa);
    locate(b, &sb, &pb);
    if (sa != sb) return SDPA__DISJOINT;
    int64_t ea = (int64_t)sdpa_dtype_size(a->dtype), eb = (int64_t)sdpa_dtype_size(b->dtype);
    lattice l = {.n = 0};
    int64_t ra = add_axes(&l, a), rb = add_axes(&l, b);
    if (ra < 0 || rb < 0) return SDPA__MAYBE;
    /* byte intervals [pa, pa + ra + ea) and [pb, pb + rb + eb) */
    if (pa >= pb + (uint64_t)rb + (uint64_t)eb || pb >= pa + (uint64_t)ra + (uint64_t)ea)
        return SDPA__DISJOINT;
    /* pa + sum ca x + u = pb + sum cb y + v, u < ea, v < eb; with y' = ub - y:
     * sum ca x + sum cb y' = (pb - pa) + rb + (v - u), v - u in [1 - ea, eb - 1]. */
    int64_t d = (int64_t)(pb - pa); /* |pb - pa| < the spans: fits */
    int64_t mid;
    if (!sdpa__add_i64(d, rb, &mid)) return SDPA__MAYBE;
    return settle(&l, mid - (ea - 1), mid + (eb - 1));
}

sdpa__overlap sdpa__tensor_self_overlap(const sdpa_tensor *t)
{
    sdpa_tensor units = sdpa__tensor_units(t); /* block types */
    t = &units;
    int64_t es = (int64_t)sdpa_dtype_size(t->dtype);
    term ax[4];
    int n = 0;
    for (int a = 0; a < 4; a++) {
        if (t->shape[a] <= 1) continue;
        if (t->stride[a] == 0) return SDPA__OVERLAP;
        int64_t c;
        if (!sdpa__mul_i64(t->stride[a], es, &c)) return SDPA__MAYBE;
        ax[n++] = (term){c, t->shape[a] - 1};
    }
    /* Two index tuples differ by d != 0, |d_i| <= ub_i; by symmetry its first
     * non-zero component k is positive: d_k = 1 + f, f in [0, ub_k - 1], and
     * d_j = e_j - ub_j, e_j in [0, 2 ub_j], for j > k. Overlap when
     * |sum c_i d_i| < es. */
    for (int k = 0; k < n; k++) {
        lattice l = {.n = 0};
        add_term(&l, ax[k].c, ax[k].ub - 1);
        int64_t m = 0;
        for (int j = k + 1; j < n; j++) {
            int64_t r;
            if (ax[j].ub > INT64_MAX / 2 || !sdpa__mul_i64(ax[j].c, ax[j].ub, &r) ||
                !sdpa__add_i64(m, r, &m))
                return SDPA__MAYBE;
            add_term(&l, ax[j].c, 2 * ax[j].ub);
        }
        int64_t base = m - ax[k].c;
        sdpa__overlap o = settle(&l, base - (es - 1), base + (es - 1));
        if (o != SDPA__DISJOINT) return o;
    }
    return SDPA__DISJOINT;
}

bool sdpa__tensors_same_view(const sdpa_tensor *a, const sdpa_tensor *b)
{
    if (a->buf != b->buf || a->host != b->host || a->offset != b->offset ||
        a->dtype != b->dtype)
        return false;
    for (int i = 0; i < 4; i++)
        if (a->shape[i] != b->shape[i] || (a->shape[i] > 1 && a->stride[i] != b->stride[i]))
            return false;
    return true;
}

static const char *certainty(sdpa__overlap o)
{
    return o == SDPA__OVERLAP ? "" : " (or may: the overlap search ran out of steps; refused to be safe)";
}

sdpa_status sdpa__check_no_self_overlap(sdpa_context *ctx, const char *name,
                                        const sdpa_tensor *t)
{
    if (t->dtype == SDPA_DTYPE_NONE) return SDPA_OK;
    sdpa__overlap o = sdpa__tensor_self_overlap(t);
    SDPA__CHECK(ctx, o == SDPA__DISJOINT, SDPA_ERR_STRIDE,
                "%s: strides [%lld, %lld, %lld, %lld] map two elements to the same memory%s; "
                "an output's elements must be distinct",
                name, (long long)t->stride[0], (long long)t->stride[1], (long long)t->stride[2],
                (long long)t->stride[3], certainty(o));
    return SDPA_OK;
}

sdpa_status sdpa__check_disjoint(sdpa_context *ctx, const char *name_a, const sdpa_tensor *a,
                                 const char *name_b, const sdpa_tensor *b)
{
    sdpa__overlap o = sdpa__tensors_overlap(a, b);
    SDPA__CHECK(ctx, o == SDPA__DISJOINT, SDPA_ERR_INVALID_ARG,
                "%s overlaps %s in memory%s; an output may not share memory with another "
                "tensor of the call", name_a, name_b, certainty(o));
    return SDPA_OK;
}
