/*
 * testutil.c — see testutil.h. Inputs are deterministic per seed; every
 * output is poisoned with NaN before a run so an unwritten element shows up
 * as a non-finite mismatch.
 */
#include "testutil.h"

#include "platform.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifndef _WIN32
#include <sys/wait.h>
#include <unistd.h>
#endif

void trng_seed(trng *r, uint64_t seed) { r->s = seed * 0x9E3779B97F4A7C15ull + 1; }

uint64_t trng_next(trng *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return r->s * 0x2545F4914F6CDD1Dull;
}

double trng_uniform(trng *r) { return (double)(trng_next(r) >> 11) * (1.0 / 9007199254740992.0); }

double trng_normal(trng *r)
{
    double u1 = trng_uniform(r), u2 = trng_uniform(r);
    if (u1 < 1e-300) u1 = 1e-300;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void tcase_init(tcase *c, const char *name, int64_t B, int64_t Hq, int64_t Hkv, int64_t Sq,
                int64_t Skv, int64_t D, int64_t Dv)
{
    memset(c, 0, sizeof *c);
    c->name = name;
    c->B = B;
    c->Hq = Hq;
    c->Hkv = Hkv;
    c->Sq = Sq;
    c->Skv = Skv;
    c->D = D;
    c->Dv = Dv;
    c->dtype = SDPA_DTYPE_F32;
    c->scale = SDPA_SCALE_DEFAULT;
    c->window_left = -1;
    c->window_right = -1;
    c->input_scale = 1.0;
    c->seed = 1;
}

static uint16_t f32_to_half(float f)
{
    /* round to nearest even through the library-independent path */
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u);
    if (a < 0x38800000u) {
        float af;
        memcpy(&af, &a, 4);
        return (uint16_t)(sign | (uint32_t)nearbyintf(af * 16777216.0f));
    }
    uint32_t h = (((a >> 23) - 112) << 10) | ((a >> 13) & 0x3ffu);
    uint32_t rem = a & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static float half_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    float f;
    if (e == 0) {
        f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    uint32_t u = e == 31 ? (sign | 0x7f800000u | (m << 13)) : (sign | ((e + 112) << 23) | (m << 13));
    memcpy(&f, &u, 4);
    return f;
}

double tload(const void *base, sdpa_dtype dtype, size_t e)
{
    switch (dtype) {
    case SDPA_DTYPE_F16: return half_to_f32(((const uint16_t *)base)[e]);
    case SDPA_DTYPE_BF16: {
        uint32_t u = (uint32_t)((const uint16_t *)base)[e] << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    default: return ((const float *)base)[e];
    }
}

void tstore(void *base, sdpa_dtype dtype, size_t e, double v)
{
    float f = (float)v;
    switch (dtype) {
    case SDPA_DTYPE_F16: ((uint16_t *)base)[e] = f32_to_half(f); break;
    case SDPA_DTYPE_BF16: {
        uint32_t u;
        memcpy(&u, &f, 4);
        if ((u & 0x7fffffffu) > 0x7f800000u) {
            ((uint16_t *)base)[e] = (uint16_t)((u >> 16) | 0x40);
        } else {
            u += 0x7fff + ((u >> 16) & 1);
            ((uint16_t *)base)[e] = (uint16_t)(u >> 16);
        }
        break;
    }
    default: ((float *)base)[e] = f; break;
    }
}

static void *xalloc(size_t n, size_t esize)
{
    void *p = calloc(n ? n : 1, esize);
    ck_assert_msg(p != NULL, "out of memory");
    return p;
}

static void *rand_array(trng *r, size_t n, sdpa_dtype dt, double scale)
{
    void *p = xalloc(n, sdpa_dtype_size(dt));
    for (size_t e = 0; e < n; e++) {
        double v = trng_normal(r) * scale;
        if (v == 0.0) v = 0.25; /* never zeros */
        tstore(p, dt, e, v);
    }
    return p;
}

static void poison(void *p, size_t n, sdpa_dtype dt)
{
    for (size_t e = 0; e < n; e++) tstore(p, dt, e, NAN);
}

void tproblem_poison(tproblem *p)
{
    const tcase *c = &p->c;
    poison(p->out, p->n_out, c->dtype);
    if (p->lse) poison(p->lse, (size_t)(c->B * c->Hq * c->Sq), SDPA_DTYPE_F32);
    if (p->stats) poison(p->stats, (size_t)(c->B * c->Hq * SDPA_STAT_COUNT), SDPA_DTYPE_F32);
    poison(p->dq, p->n_q, c->dtype);
    poison(p->dk, p->n_k, c->dtype);
    poison(p->dv, p->n_v, c->dtype);
    if (p->dq_gain) poison(p->dq_gain, (size_t)c->D, SDPA_DTYPE_F32);
    if (p->dk_gain) poison(p->dk_gain, (size_t)c->D, SDPA_DTYPE_F32);
    if (p->dtemperature) poison(p->dtemperature, (size_t)c->Hq, SDPA_DTYPE_F32);
}

/* (B,H,S,D) tensor, optionally laid out as (B,S,H,D) in memory. */
static sdpa_tensor layout(void *host, sdpa_dtype dt, int64_t B, int64_t H, int64_t S, int64_t D,
                          bool bshd)
{
    sdpa_tensor t = sdpa_tensor_host(host, dt, B, H, S, D);
    if (bshd) {
        t.stride[0] = S * H * D;
        t.stride[1] = D;
        t.stride[2] = H * D;
        t.stride[3] = 1;
    }
    return t;
}

void tproblem_make(tproblem *p, const tcase *c)
{
    memset(p, 0, sizeof *p);
    p->c = *c;
    trng r;
    trng_seed(&r, c->seed);
    sdpa_dtype dt = c->dtype;
    p->n_q = (size_t)(c->B * c->Hq * c->Sq * c->D);
    p->n_k = (size_t)(c->B * c->Hkv * c->Skv * c->D);
    p->n_v = (size_t)(c->B * c->Hkv * c->Skv * c->Dv);
    p->n_out = (size_t)(c->B * c->Hq * c->Sq * c->Dv);
    double is = c->input_scale > 0 ? c->input_scale : 1.0;
    p->q = rand_array(&r, p->n_q, dt, is);
    p->k = rand_array(&r, p->n_k, dt, is);
    p->v = rand_array(&r, p->n_v, dt, 1.0);
    p->dout = rand_array(&r, p->n_out, dt, 1.0);
    p->out = xalloc(p->n_out, sdpa_dtype_size(dt));
    p->dq = xalloc(p->n_q, sdpa_dtype_size(dt));
    p->dk = xalloc(p->n_k, sdpa_dtype_size(dt));
    p->dv = xalloc(p->n_v, sdpa_dtype_size(dt));

    sdpa_attention_desc *d = &p->desc;
    sdpa_attention_desc_init(d);
    d->scale = c->scale;
    d->diagonal = c->diagonal;
    d->diagonal_offset = c->diagonal_offset;
    d->window_left = c->window_left;
    d->window_right = c->window_right;
    d->softcap = c->softcap;
    d->qk_norm = c->qk_norm;
    sdpa_forward_tensors *t = &d->tensors;
    t->q = layout(p->q, dt, c->B, c->Hq, c->Sq, c->D, c->bshd);
    t->k = sdpa_tensor_host(p->k, dt, c->B, c->Hkv, c->Skv, c->D);
    t->v = sdpa_tensor_host(p->v, dt, c->B, c->Hkv, c->Skv, c->Dv);
    t->out = layout(p->out, dt, c->B, c->Hq, c->Sq, c->Dv, c->bshd);
    if (c->mask) {
        int64_t mb = c->mask_broadcast ? 1 : c->B, mh = c->mask_broadcast ? 1 : c->Hq;
        p->n_mask = (size_t)(mb * mh * c->Sq * c->Skv);
        p->mask = xalloc(p->n_mask, 1);
        double keep = c->mask_keep > 0 ? c->mask_keep : 0.8;
        for (size_t e = 0; e < p->n_mask; e++) p->mask[e] = trng_uniform(&r) < keep;
        t->mask = sdpa_tensor_host(p->mask, SDPA_DTYPE_U8, mb, mh, c->Sq, c->Skv);
    }
    if (c->bias) {
        int64_t bh = c->bias_broadcast ? 1 : c->Hq;
        p->n_bias = (size_t)(c->B * bh * c->Sq * c->Skv);
        p->bias = xalloc(p->n_bias, 4);
        for (size_t e = 0; e < p->n_bias; e++)
            p->bias[e] = trng_uniform(&r) < 0.05 ? -INFINITY : (float)(0.5 * trng_normal(&r));
        t->bias = sdpa_tensor_host(p->bias, SDPA_DTYPE_F32, c->B, bh, c->Sq, c->Skv);
    }
    if (c->kv_len) {
        p->kv_len = xalloc((size_t)c->B, 4);
        for (int64_t b = 0; b < c->B; b++)
            p->kv_len[b] = (int32_t)(trng_next(&r) % (uint64_t)(c->Skv + 1));
        if (c->B > 1) p->kv_len[c->B - 1] = (int32_t)c->Skv; /* one full batch */
        t->kv_len = sdpa_tensor_host(p->kv_len, SDPA_DTYPE_I32, c->B, 1, 1, 1);
    }
    if (c->gains) {
        p->q_gain = xalloc((size_t)c->D, 4);
        p->k_gain = xalloc((size_t)c->D, 4);
        for (int64_t e = 0; e < c->D; e++) {
            p->q_gain[e] = (float)(0.5 + trng_uniform(&r));
            p->k_gain[e] = (float)(0.5 + trng_uniform(&r));
        }
        t->q_gain = sdpa_tensor_host(p->q_gain, SDPA_DTYPE_F32, 1, 1, 1, c->D);
        t->k_gain = sdpa_tensor_host(p->k_gain, SDPA_DTYPE_F32, 1, 1, 1, c->D);
        p->dq_gain = xalloc((size_t)c->D, 4);
        p->dk_gain = xalloc((size_t)c->D, 4);
        p->bwd.dq_gain = sdpa_tensor_host(p->dq_gain, SDPA_DTYPE_F32, 1, 1, 1, c->D);
        p->bwd.dk_gain = sdpa_tensor_host(p->dk_gain, SDPA_DTYPE_F32, 1, 1, 1, c->D);
    }
    if (c->temperature) {
        p->temperature = xalloc((size_t)c->Hq, 4);
        for (int64_t h = 0; h < c->Hq; h++)
            p->temperature[h] = (float)(0.5 + 1.5 * trng_uniform(&r));
        t->temperature = sdpa_tensor_host(p->temperature, SDPA_DTYPE_F32, 1, c->Hq, 1, 1);
        p->dtemperature = xalloc((size_t)c->Hq, 4);
        p->bwd.dtemperature = sdpa_tensor_host(p->dtemperature, SDPA_DTYPE_F32, 1, c->Hq, 1, 1);
    }
    if (c->lse) {
        p->lse = xalloc((size_t)(c->B * c->Hq * c->Sq), 4);
        t->lse = sdpa_tensor_host(p->lse, SDPA_DTYPE_F32, c->B, c->Hq, c->Sq, 1);
    }
    if (c->stats) {
        p->stats = xalloc((size_t)(c->B * c->Hq * SDPA_STAT_COUNT), 4);
        t->stats = sdpa_tensor_host(p->stats, SDPA_DTYPE_F32, c->B, c->Hq, 1, SDPA_STAT_COUNT);
    }
    p->bwd.dout = layout(p->dout, dt, c->B, c->Hq, c->Sq, c->Dv, c->bshd);
    p->bwd.dq = layout(p->dq, dt, c->B, c->Hq, c->Sq, c->D, c->bshd);
    p->bwd.dk = sdpa_tensor_host(p->dk, dt, c->B, c->Hkv, c->Skv, c->D);
    p->bwd.dv = sdpa_tensor_host(p->dv, dt, c->B, c->Hkv, c->Skv, c->Dv);
    tproblem_poison(p);
}

void tproblem_free(tproblem *p)
{
    void *ptrs[] = {p->q, p->k, p->v, p->out, p->dout, p->dq, p->dk, p->dv, p->mask,
                    p->bias, p->q_gain, p->k_gain, p->temperature, p->lse, p->stats,
                    p->dq_gain, p->dk_gain, p->dtemperature, p->kv_len};
    for (size_t i = 0; i < sizeof ptrs / sizeof ptrs[0]; i++) free(ptrs[i]);
    memset(p, 0, sizeof *p);
}

tcompare tcompare_arrays(const void *got, sdpa_dtype got_dtype, const void *want,
                         sdpa_dtype want_dtype, size_t n)
{
    tcompare r = {0, 0, 0, 0, n};
    double num = 0, den = 0;
    for (size_t e = 0; e < n; e++) {
        double g = tload(got, got_dtype, e), w = tload(want, want_dtype, e);
        if (!isfinite(w)) {
            bool same = isnan(w) ? isnan(g) : g == w;
            if (!same) r.bad_nonfinite++;
            continue;
        }
        if (!isfinite(g)) {
            if (!r.bad_nonfinite) r.worst = e;
            r.bad_nonfinite++;
            continue;
        }
        double err = fabs(g - w);
        if (err > r.max_abs) {
            r.max_abs = err;
            if (!r.bad_nonfinite) r.worst = e;
        }
        num += (g - w) * (g - w);
        den += w * w;
    }
    r.rel_l2 = den > 0 ? sqrt(num / den) : sqrt(num);
    return r;
}

double tbound(sdpa_dtype dtype)
{
    switch (dtype) {
    case SDPA_DTYPE_F16: return 4e-3;
    case SDPA_DTYPE_BF16: return 3e-2;
    default: return 2e-4;
    }
}

sdpa_context *tcontext(sdpa_backend_kind kind, sdpa_status *status)
{
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = kind;
    o.log_level = SDPA_LOG_ERROR;
    sdpa_context *ctx = NULL;
    sdpa_status st = sdpa_context_create(&o, &ctx);
    if (status) *status = st;
    return st == SDPA_OK ? ctx : NULL;
}

sdpa_context *tbackend_ctx(int i, const char *test)
{
    sdpa_status st;
    sdpa_context *ctx = tcontext(tkinds(i), &st);
    if (!ctx) {
        printf("%s on %s: skipped (%s)\n", test, sdpa_backend_name(tkinds(i)),
               sdpa_status_name(st));
        ck_assert(tkinds(i) == SDPA_BACKEND_OPENCL || tkinds(i) == SDPA_BACKEND_VULKAN);
    }
    return ctx;
}

sdpa_context *tcontext_cache(sdpa_backend_kind kind, const char *cache_dir, tlogcap *cap)
{
    sdpa_context_options o;
    sdpa_context_options_init(&o);
    o.backend = kind;
    o.cache_dir = cache_dir;
    o.log_level = SDPA_LOG_WARN;
    o.log_fn = tlog_capture;
    o.log_user = cap;
    sdpa_context *ctx = NULL;
    ck_assert_int_eq(sdpa_context_create(&o, &ctx), SDPA_OK);
    return ctx;
}

void texpect_close(const char *name, const char *what, const void *got, const void *want,
                   sdpa_dtype dt, size_t n, double bound)
{
    tcompare r = tcompare_arrays(got, dt, want, dt, n);
    double scale = 1.0;
    for (size_t e = 0; e < n; e++) {
        double w = fabs(tload(want, dt, e));
        if (isfinite(w) && w > scale) scale = w;
    }
    ck_assert_msg(r.bad_nonfinite == 0 && r.max_abs <= bound * scale,
                  "%s: %s differs from the reference: max_abs %.3g (bound %.3g), rel_l2 %.3g, "
                  "%zu non-finite mismatches, worst element %zu: got %.6g want %.6g",
                  name, what, r.max_abs, bound * scale, r.rel_l2, r.bad_nonfinite, r.worst,
                  tload(got, dt, r.worst), tload(want, dt, r.worst));
}

static void expect_close(const tcase *c, const char *what, const void *got, const void *want,
                         sdpa_dtype dt, size_t n, double bound)
{
    texpect_close(c->name, what, got, want, dt, n, bound);
}

void trun_problem(sdpa_context *ctx, tproblem *p, bool backward,
                  const sdpa_plan_options *plan_opts)
{
    sdpa_plan_options o;
    if (plan_opts) {
        o = *plan_opts;
    } else {
        sdpa_plan_options_init(&o);
    }
    if (backward) o.flags |= SDPA_PLAN_BACKWARD;
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(ctx, &p->desc, &o, &plan);
    sdpa_error_info info;
    sdpa_context_last_error(ctx, &info);
    ck_assert_msg(st == SDPA_OK, "%s: sdpa_plan_create on %s: %s (%s)", p->c.name,
                  sdpa_backend_name(sdpa_context_backend(ctx)), sdpa_status_name(st), info.message);
    st = sdpa_plan_forward(plan, &p->desc.tensors);
    sdpa_context_last_error(ctx, &info);
    ck_assert_msg(st == SDPA_OK, "%s: forward: %s (%s)", p->c.name, sdpa_status_name(st), info.message);
    if (backward) {
        st = sdpa_plan_backward(plan, &p->desc.tensors, &p->bwd);
        sdpa_context_last_error(ctx, &info);
        ck_assert_msg(st == SDPA_OK, "%s: backward: %s (%s)", p->c.name, sdpa_status_name(st),
                      info.message);
    }
    ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    sdpa_plan_destroy(plan);
}

static tcompare parity(sdpa_context *ctx, sdpa_context *ref, const tcase *c0,
                       const sdpa_plan_options *plan_opts, bool backward)
{
    tcase c = *c0;
    if (backward) c.lse = true;
    tproblem got, want;
    tproblem_make(&got, &c);
    tproblem_make(&want, &c);
    trun_problem(ctx, &got, backward, plan_opts);
    trun_problem(ref, &want, backward, NULL);
    texpect_parity(&got, &want, backward);
    tcompare r = tcompare_arrays(got.out, c.dtype, want.out, c.dtype, got.n_out);
    tproblem_free(&got);
    tproblem_free(&want);
    return r;
}

void texpect_parity(const tproblem *got, const tproblem *want, bool backward)
{
    const tcase c = got->c;
    double b = tbound(c.dtype);
    expect_close(&c, "out", got->out, want->out, c.dtype, got->n_out, b);
    if (c.lse) expect_close(&c, "lse", got->lse, want->lse, SDPA_DTYPE_F32,
                            (size_t)(c.B * c.Hq * c.Sq), b < 1e-3 ? 1e-4 : b);
    if (c.stats) expect_close(&c, "stats", got->stats, want->stats, SDPA_DTYPE_F32,
                              (size_t)(c.B * c.Hq * SDPA_STAT_COUNT), b < 2e-3 ? 2e-3 : b);
    if (backward) {
        double gb = c.dtype == SDPA_DTYPE_F32 ? 1e-3 : 4 * b;
        expect_close(&c, "dq", got->dq, want->dq, c.dtype, got->n_q, gb);
        expect_close(&c, "dk", got->dk, want->dk, c.dtype, got->n_k, gb);
        expect_close(&c, "dv", got->dv, want->dv, c.dtype, got->n_v, gb);
        if (c.gains) {
            expect_close(&c, "dq_gain", got->dq_gain, want->dq_gain, SDPA_DTYPE_F32,
                         (size_t)c.D, gb);
            expect_close(&c, "dk_gain", got->dk_gain, want->dk_gain, SDPA_DTYPE_F32,
                         (size_t)c.D, gb);
        }
        if (c.temperature)
            expect_close(&c, "dtemperature", got->dtemperature, want->dtemperature,
                         SDPA_DTYPE_F32, (size_t)c.Hq, gb);
    }
}

tcompare tparity_forward(sdpa_context *ctx, sdpa_context *ref, const tcase *c,
                         const sdpa_plan_options *plan_opts)
{
    return parity(ctx, ref, c, plan_opts, false);
}

tcompare tparity_backward(sdpa_context *ctx, sdpa_context *ref, const tcase *c,
                          const sdpa_plan_options *plan_opts)
{
    return parity(ctx, ref, c, plan_opts, true);
}

int trun_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- log capture and scratch folders ------------------------------------------- */

void tlog_capture(void *user, sdpa_log_level level, const char *msg)
{
    tlogcap *c = user;
    if (level == SDPA_LOG_WARN) c->warns++;
    if (level == SDPA_LOG_ERROR) c->errors++;
    if (level <= SDPA_LOG_WARN) snprintf(c->last, sizeof c->last, "%s", msg);
}

char *tmkdtemp(const char *prefix)
{
    char tmpl[1024];
    ck_assert_msg(sdpa__os_make_temp_dir(prefix, tmpl, sizeof tmpl), "mkdtemp %s", prefix);
    char *out = strdup(tmpl);
    ck_assert_ptr_nonnull(out);
    return out;
}

bool tdevice_present(sdpa_backend_kind kind)
{
    if (!sdpa_backend_compiled(kind)) return false;
#ifdef _WIN32
    int count = 0;
    return sdpa_device_count(kind, &count) == SDPA_OK && count > 0;
#else
    pid_t pid = fork();
    if (pid == 0) {
        int count = 0;
        sdpa_device_count(kind, &count);
        _exit(count > 0 ? 0 : 1);
    }
    int status = 0;
    return pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) &&
           WEXITSTATUS(status) == 0;
#endif
}

int64_t tmax_len(void)
{
    const char *v = getenv("SDPA_TEST_MAX_LEN");
    long long max = v && *v ? strtoll(v, NULL, 10) : 0;
    return max > 0 ? (int64_t)max : 0;
}

sdpa_plan_info tplan_info(sdpa_context *ctx, const tcase *c)
{
    tproblem p;
    tproblem_make(&p, c);
    sdpa_plan_info info = tplan_info_of(ctx, &p, NULL, false);
    tproblem_free(&p);
    return info;
}

sdpa_plan_info tplan_info_of(sdpa_context *ctx, tproblem *p, const sdpa_plan_options *o,
                             bool run)
{
    sdpa_plan *plan = NULL;
    ck_assert_int_eq(sdpa_plan_create(ctx, &p->desc, o, &plan), SDPA_OK);
    if (run) {
        ck_assert_int_eq(sdpa_plan_forward(plan, &p->desc.tensors), SDPA_OK);
        ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
    }
    sdpa_plan_info info;
    memset(&info, 0, sizeof info);
    info.struct_size = sizeof info;
    ck_assert_int_eq(sdpa_plan_get_info(plan, &info), SDPA_OK);
    sdpa_plan_destroy(plan);
    return info;
}
