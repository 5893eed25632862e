/*
 * measure.c — what the tuner runs: instances of the problem being tuned
 * (same dtypes, optional tensors and broadcast axes as the user's
 * description, at a size the tuner picks), the check of a candidate against
 * the float64 reference, and the timing of one call.
 *
 * Invariants: inputs are random normal (never zeros); outputs are poisoned
 * with NaN before every checked run, so a kernel that skips rows fails the
 * check; timing instances live in device buffers so host copies are never
 * timed; a plan made for timing must run on the backend being tuned (an AUTO
 * CPU fallback is refused, it would be recorded under the wrong device).
 * Called by tune.c and search.c.
 */
#include "measure.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* The slot-table row of instance slot i (forward slots, then backward). */
static const sdpa__slot_info *row(int i)
{
    return i < SDPA__TI_FWD ? &sdpa__fwd_info[i] : &sdpa__bwd_info[i - SDPA__TI_FWD];
}
/* The forward row whose dtype and axes instance slot i has. */
static int rule_of(int i) { return i < SDPA__TI_FWD ? i : sdpa__bwd_of[i - SDPA__TI_FWD]; }

/* Extent of axis letter a (slots.h): the instance's own sizes for the
 * batch, head and sequence axes, the template's for the rest. */
static int64_t extent(char a, const sdpa__problem *p, const sdpa__tune_dims *d, bool tmpl)
{
    switch (tmpl ? 0 : a) {
    case 'B': return d->B;
    case 'Q': return d->Hq;
    case 'K': return d->Hkv;
    case 's': return d->Sq;
    case 'k': return d->Skv;
    default: return sdpa__axis_extent(a, p);
    }
}

static sdpa_tensor *slot(sdpa__tune_instance *ti, int i)
{
    if (i < SDPA__TI_FWD) return sdpa_forward_tensors_get_slot(&ti->desc.tensors, i);
    return sdpa_backward_tensors_get_slot(&ti->bwd, i - SDPA__TI_FWD);
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}
static double rng_uniform(uint64_t *s) { return (double)(rng_next(s) >> 11) * 0x1p-53; }
static double rng_normal(uint64_t *s)
{
    double u = rng_uniform(s), v = rng_uniform(s);
    if (u < 1e-300) u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

static bool is_output(int i)
{
    return i < SDPA__TI_FWD ? sdpa__fwd_is_output(i, false) : row(i)->role == SDPA__ROLE_OUT;
}

/* The outputs the check compares: out, lse, dq, dk, dv (not the stats,
 * which have their own tolerances, nor the optional gradients). */
static bool is_checked(int i)
{
    return i < SDPA__TI_FWD ? sdpa__fwd_info[i].role == SDPA__ROLE_SAVED
                            : is_output(i) && !row(i)->optional;
}

static void fill(sdpa__tune_instance *ti, int i, const sdpa__problem *p,
                 const sdpa__tune_dims *d, bool ragged, uint64_t *rng)
{
    void *h = ti->host[i];
    size_t n = ti->count[i];
    sdpa_dtype dt = ti->dtype[i];
    if (is_output(i)) {
        for (size_t e = 0; e < n; e++) sdpa__store_float(h, dt, (int64_t)e, NAN);
        return;
    }
    sdpa__dtype_rule rule = sdpa__fwd_info[rule_of(i)].dtype;
    if (rule == SDPA__DT_U8) { /* a mask: keep 80% */
        for (size_t e = 0; e < n; e++) ((uint8_t *)h)[e] = rng_uniform(rng) < 0.8;
        return;
    }
    if (i == SDPA__T_BLOCK_TABLE) { /* pages of the pool, in any order */
        for (size_t e = 0; e < n; e++)
            ((int32_t *)h)[e] = (int32_t)(rng_next(rng) % (uint64_t)(p->pages > 0 ? p->pages : 1));
        return;
    }
    if (sdpa_dtype_block_elems(dt) > 1) { /* q8_0 / q4_0 K/V: random blocks */
        const size_t ub = sdpa_dtype_size(dt);
        unsigned char *u = h;
        for (size_t b = 0; b < n / (size_t)sdpa_dtype_block_elems(dt); b++) {
            sdpa__store_float(u + b * ub, SDPA_DTYPE_F16, 0, (float)(0.05 * (1 + 0.1 * rng_normal(rng))));
            for (size_t t = 2; t < ub; t++) u[b * ub + t] = (unsigned char)(rng_next(rng) >> 56);
        }
        return;
    }
    if (rule == SDPA__DT_I32) { /* valid keys per batch */
        for (size_t e = 0; e < n; e++)
            ((int32_t *)h)[e] = ragged ? (int32_t)(1 + rng_next(rng) % (uint64_t)d->Skv)
                                       : (int32_t)d->Skv;
        return;
    }
    switch (i) {
    case SDPA__T_Q_GAIN: case SDPA__T_K_GAIN:
        for (size_t e = 0; e < n; e++) ((float *)h)[e] = (float)(1.0 + 0.1 * rng_normal(rng));
        break;
    case SDPA__T_TEMPERATURE: /* a positive scale near 1/sqrt(D) */
        for (size_t e = 0; e < n; e++)
            ((float *)h)[e] = (float)((0.5 + rng_uniform(rng)) / sqrt((double)p->D));
        break;
    default: /* q, k, v, bias, dout */
        for (size_t e = 0; e < n; e++) sdpa__store_float(h, dt, (int64_t)e, (float)rng_normal(rng));
        break;
    }
}

sdpa_status sdpa__tune_instance_make(sdpa_context *ctx, sdpa_context *dev,
                                     const sdpa_attention_desc *tmpl, const sdpa__problem *p,
                                     const sdpa__tune_dims *d, bool backward, bool ragged,
                                     uint64_t seed, sdpa__tune_instance *ti)
{
    memset(ti, 0, sizeof *ti);
    ti->desc = *tmpl;
    ti->backward = backward;
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 12345;
    for (int i = 0; i < SDPA__TI_ALL; i++) {
        sdpa_tensor *t = slot(ti, i);
        const sdpa_tensor *src = i < SDPA__TI_FWD ? t : NULL; /* desc copy = template */
        bool present;
        sdpa_dtype dt;
        if (i < SDPA__TI_FWD) {
            present = src->dtype != SDPA_DTYPE_NONE;
            dt = src->dtype;
            if (row(i)->role == SDPA__ROLE_SAVED && backward && !present) {
                present = true; /* the backward needs lse */
                dt = sdpa__slot_dtype(i, p->dtype, p->kv_dtype);
            }
        } else { /* the gradients the backward must have */
            present = backward && !row(i)->optional;
            dt = sdpa__slot_dtype(rule_of(i), p->dtype, p->kv_dtype); /* dk, dv: K/V's */
        }
        const char *axes = sdpa__fwd_info[rule_of(i)].axes;
        int64_t shape[4];
        for (int a = 0; a < 4; a++) {
            int64_t full = extent(axes[a], p, d, true);
            int64_t want = extent(axes[a], p, d, false);
            /* keep broadcast axes broadcast */
            shape[a] = (src && src->dtype != SDPA_DTYPE_NONE && src->shape[a] == 1 && full > 1)
                           ? 1 : want;
        }
        memset(t, 0, sizeof *t);
        if (!present) continue;
        size_t n = 1;
        for (int a = 0; a < 4; a++)
            SDPA__CHECK(ctx, sdpa__mul_size(n, (size_t)shape[a], &n), SDPA_ERR_SHAPE,
                        "tune: instance too large");
        size_t bytes;
        /* bytes of n elements (block types: n / 32 blocks) */
        SDPA__CHECK(ctx, sdpa__mul_size(n / (size_t)sdpa_dtype_block_elems(dt), sdpa_dtype_size(dt),
                                        &bytes), SDPA_ERR_SHAPE, "tune: instance too large");
        ti->count[i] = n;
        ti->dtype[i] = dt;
        ti->host[i] = malloc(bytes ? bytes : 1);
        if (!ti->host[i]) {
            sdpa__tune_instance_free(ti);
            return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "tune: %zu bytes of inputs", bytes);
        }
        fill(ti, i, p, d, ragged, &rng);
        if (dev) {
            sdpa_status st = sdpa_buffer_create(dev, bytes, &ti->buf[i]);
            if (st == SDPA_OK) st = sdpa_buffer_write(ti->buf[i], 0, ti->host[i], bytes);
            if (st != SDPA_OK) {
                sdpa__tune_instance_free(ti);
                return st;
            }
            *t = sdpa_tensor_buffer(ti->buf[i], 0, dt, shape[0], shape[1], shape[2], shape[3]);
        } else {
            *t = sdpa_tensor_host(ti->host[i], dt, shape[0], shape[1], shape[2], shape[3]);
        }
    }
    return SDPA_OK;
}

void sdpa__tune_instance_free(sdpa__tune_instance *ti)
{
    for (int i = 0; i < SDPA__TI_ALL; i++) {
        sdpa_buffer_destroy(ti->buf[i]);
        free(ti->host[i]);
        ti->buf[i] = NULL;
        ti->host[i] = NULL;
    }
}

void sdpa__tune_outputs_free(sdpa__tune_outputs *o)
{
    for (int i = 0; i < SDPA__TI_ALL; i++) {
        free(o->v[i]);
        o->v[i] = NULL;
        o->n[i] = 0;
    }
}

sdpa_status sdpa__tune_run_host(sdpa_context *ctx, sdpa__tune_instance *ti, unsigned flags,
                                const sdpa_tile_config *tile, sdpa__tune_outputs *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < SDPA__TI_ALL; i++)
        if (is_output(i) && ti->host[i])
            for (size_t e = 0; e < ti->count[i]; e++)
                sdpa__store_float(ti->host[i], ti->dtype[i], (int64_t)e, NAN);
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = flags;
    po.tile = tile;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(ctx, &ti->desc, &po, &plan);
    if (st == SDPA_OK) st = sdpa_plan_forward(plan, &ti->desc.tensors);
    if (st == SDPA_OK && ti->backward) st = sdpa_plan_backward(plan, &ti->desc.tensors, &ti->bwd);
    if (st == SDPA_OK) st = sdpa_context_finish(ctx);
    sdpa_plan_destroy(plan);
    if (st != SDPA_OK) return st;
    for (int i = 0; i < SDPA__TI_ALL; i++) {
        if (!is_checked(i) || !ti->host[i]) continue;
        out->v[i] = malloc(ti->count[i] * sizeof(double));
        if (!out->v[i]) {
            sdpa__tune_outputs_free(out);
            return SDPA__FAIL(ctx, SDPA_ERR_OUT_OF_MEMORY, "tune: outputs");
        }
        out->n[i] = ti->count[i];
        for (size_t e = 0; e < ti->count[i]; e++)
            out->v[i][e] = sdpa__load_float(ti->host[i], ti->dtype[i], (int64_t)e);
    }
    return SDPA_OK;
}

bool sdpa__tune_compare(const sdpa__tune_outputs *got, const sdpa__tune_outputs *want,
                        sdpa_dtype dtype, char *why, size_t why_size)
{
    double base = dtype == SDPA_DTYPE_BF16 ? 6e-2 : dtype == SDPA_DTYPE_F16 ? 1e-2 : 2e-3;
    for (int k = 0; k < SDPA__TI_ALL; k++) {
        const char *name = row(k)->field;
        if (got->n[k] != want->n[k]) {
            snprintf(why, why_size, "%s: %zu elements, expected %zu", name, got->n[k],
                     want->n[k]);
            return false;
        }
        double tol = k >= SDPA__TI_FWD ? 4 * base : base; /* gradients */
        for (size_t e = 0; e < got->n[k]; e++) {
            double g = got->v[k][e], w = want->v[k][e];
            bool ok;
            if (isnan(w)) ok = isnan(g);
            else if (isinf(w)) ok = g == w;
            else ok = isfinite(g) && fabs(g - w) <= tol * (1.0 + fabs(w));
            if (!ok) {
                snprintf(why, why_size, "wrong results: %s[%zu] = %.6g, reference %.6g",
                         name, e, g, w);
                return false;
            }
        }
    }
    return true;
}

sdpa_status sdpa__tune_plan(sdpa_context *ctx, const sdpa__backend *be,
                            sdpa__tune_instance *ti, unsigned flags,
                            const sdpa_tile_config *tile, sdpa_plan **plan)
{
    *plan = NULL;
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = flags;
    po.tile = tile;
    SDPA__TRY(sdpa_plan_create(ctx, &ti->desc, &po, plan));
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    sdpa_status st = sdpa_plan_get_info(*plan, &info);
    if (st == SDPA_OK && info.backend != be->kind)
        st = SDPA__FAIL(ctx, SDPA_ERR_UNSUPPORTED,
                        "tune: %s cannot run this problem (the plan fell back to %s); "
                        "nothing to tune on this device",
                        be->name, sdpa_backend_name(info.backend));
    if (st != SDPA_OK) {
        sdpa_plan_destroy(*plan);
        *plan = NULL;
    }
    return st;
}

sdpa_status sdpa__tune_time(sdpa_context *ctx, sdpa_plan *plan, sdpa__tune_instance *ti,
                            double *ms)
{
    double t0 = sdpa__now();
    SDPA__TRY(sdpa_plan_forward(plan, &ti->desc.tensors));
    if (ti->backward) SDPA__TRY(sdpa_plan_backward(plan, &ti->desc.tensors, &ti->bwd));
    SDPA__TRY(sdpa_context_finish(ctx));
    *ms = (sdpa__now() - t0) * 1e3;
    return SDPA_OK;
}
