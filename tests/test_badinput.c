/*
 * test_badinput.c — inputs at and past the edges of what the API accepts, on
 * every backend that starts here (reference, cpu, and opencl / vulkan when
 * compiled in with a device), each against the float64 reference
 * (docs/reliability.md, "Bad-input classes"):
 *   - kv_len values -5, 0, Skv, Skv + 1 and 10^6, forward and backward, given
 *     in host memory (out-of-range values refused with SDPA_ERR_INVALID_ARG
 *     naming tensors.kv_len) and in a device buffer (never checked on the
 *     host: the kernels clamp to [0, Skv], so the result is the reference's
 *     with the clamped value; an unclamped kernel reads past K/V);
 *   - softcap from 1e-3 to FLT_MAX, forward and backward;
 *   - scalar attributes at the ends of their accepted range (scale, softcap
 *     and qk_norm_eps at FLT_MIN and FLT_MAX, window and diagonal offset
 *     near 2^62): accepted, and equal to the reference;
 *   - |v| near FLT_MAX / Skv: the documented bound (docs/semantics.md) below
 *     which out is finite and accurate; past it only the overflowing column
 *     may be non-finite.
 *   - the optional capabilities (ALiBi, sinks, a K/V dtype other than q's,
 *     q8_0 K/V, paged K/V, the backward with ALiBi or sinks;
 *     src/core/capabilities.h): a backend that declares one computes it
 *     (equal to the reference), one that does not refuses the plan with
 *     SDPA_ERR_UNSUPPORTED naming the first capability it lacks.
 * Values past the f32 range are refused by validation (tests/test_validate.c,
 * bad_scalars). Run time: ~1 s on the host backends, a few minutes with
 * OpenCL (PoCL) and Vulkan (lavapipe).
 */
#include "testutil.h"

#include "capabilities.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- kv_len outside [0, Skv] ---------------------------------------------- */

enum { KB = 2, KSKV = 6 };

/* Kernel paths that read kv_len, forced through the experimental tile
 * config (0 = left to the backend): the default fused forward, decode
 * (Sq = 1), decode with key splits (and their combine), K/V staged in local
 * memory, several rows per invocation (Vulkan), scores materialised
 * (OpenCL; forward only, so it runs without the backward). A backend
 * without the path refuses the plan with SDPA_ERR_UNSUPPORTED, which is
 * noted and skipped. */
typedef struct kv_path {
    const char *name;
    int64_t Sq;
    int q_tile, stage_kv, split_kv, unfused;
    bool backward;
} kv_path;
static const kv_path k_paths[] = {
    {"default", 5, 0, 0, 0, 0, true}, {"decode", 1, 0, 0, 0, 0, true},
    {"split", 1, 0, 0, 3, 0, true},   {"staged", 5, 0, 1, 0, 0, true},
    {"rows", 5, 4, 0, 0, 0, true},    {"unfused", 5, 0, 0, 0, 1, false}};

/* Plan options forcing path k (tile points at tc). */
static sdpa_plan_options path_opts(const kv_path *k, sdpa_tile_config *tc)
{
    sdpa_plan_options po;
    sdpa_plan_options_init(&po);
    po.flags = k->backward ? SDPA_PLAN_BACKWARD : 0;
    sdpa_tile_config_init(tc);
    if (k->q_tile) sdpa_tile_config_set(tc, SDPA_TILE_Q_TILE, k->q_tile);
    if (k->stage_kv) sdpa_tile_config_set(tc, SDPA_TILE_STAGE_KV, k->stage_kv);
    if (k->split_kv) sdpa_tile_config_set(tc, SDPA_TILE_SPLIT_KV, k->split_kv);
    if (k->unfused) sdpa_tile_config_set(tc, SDPA_TILE_UNFUSED, k->unfused);
    if (k->q_tile || k->stage_kv || k->split_kv || k->unfused) po.tile = tc;
    return po;
}

/* Whether ctx has the path po forces for p's problem (a plan is created and
 * destroyed); SDPA_ERR_UNSUPPORTED is noted, any other failure fails. */
static bool path_supported(sdpa_context *ctx, const tproblem *p, const sdpa_plan_options *po)
{
    sdpa_plan *plan = NULL;
    sdpa_status st = sdpa_plan_create(ctx, &p->desc, po, &plan);
    sdpa_plan_destroy(plan);
    if (st == SDPA_ERR_UNSUPPORTED) {
        printf("%s: no such path (SDPA_ERR_UNSUPPORTED), skipped\n", p->c.name);
        return false;
    }
    ck_assert_msg(st == SDPA_OK, "%s: plan: %s", p->c.name, sdpa_status_name(st));
    return true;
}

/* kv_len v in every batch on path k, in host memory and in a buffer. Returns
 * false when the backend has no such path. */
static bool kv_len_run(sdpa_context *ctx, sdpa_context *ref, int kind, const kv_path *k,
                       int32_t v)
{
    const int32_t vc = v < 0 ? 0 : v > KSKV ? KSKV : v;
    char name[96];
    snprintf(name, sizeof name, "kv_len %d, %s path on %s", (int)v, k->name,
             sdpa_backend_name(tkinds(kind)));
    sdpa_tile_config tc;
    sdpa_plan_options po = path_opts(k, &tc);
    tcase c;
    /* bottom-right causal: the clamped kv_len also sets the diagonal */
    tcase_init(&c, name, KB, 2, 1, k->Sq, KSKV, 16, 8);
    c.kv_len = true;
    c.diagonal = SDPA_DIAGONAL_BOTTOM_RIGHT;
    c.window_right = 0;
    c.lse = true;
    c.seed = 31;
    tproblem got, want;
    tproblem_make(&got, &c);
    tproblem_make(&want, &c);
    for (int b = 0; b < KB; b++) {
        got.kv_len[b] = v;
        want.kv_len[b] = vc;
    }
    if (!path_supported(ctx, &want, &po)) {
        tproblem_free(&got);
        tproblem_free(&want);
        return false;
    }
    trun_problem(ref, &want, k->backward, NULL);

    /* host memory: checked on every call */
    if (v == vc) {
        trun_problem(ctx, &got, k->backward, &po);
        texpect_parity(&got, &want, k->backward);
    } else {
        sdpa_plan *plan = NULL;
        ck_assert_int_eq(sdpa_plan_create(ctx, &got.desc, &po, &plan), SDPA_OK);
        ck_assert_int_eq(sdpa_plan_forward(plan, &got.desc.tensors), SDPA_ERR_INVALID_ARG);
        sdpa_error_info info;
        sdpa_context_last_error(ctx, &info);
        ck_assert_msg(info.message && strstr(info.message, "tensors.kv_len"),
                      "%s: message '%s'", name, info.message ? info.message : "");
        sdpa_plan_destroy(plan);
    }

    /* a device buffer: not checked on the host, clamped by the kernels */
    sdpa_buffer *buf = NULL;
    ck_assert_int_eq(sdpa_buffer_create(ctx, KB * sizeof(int32_t), &buf), SDPA_OK);
    ck_assert_int_eq(sdpa_buffer_write(buf, 0, got.kv_len, KB * sizeof(int32_t)), SDPA_OK);
    got.desc.tensors.kv_len = sdpa_tensor_buffer(buf, 0, SDPA_DTYPE_I32, KB, 1, 1, 1);
    tproblem_poison(&got);
    trun_problem(ctx, &got, k->backward, &po);
    texpect_parity(&got, &want, k->backward);
    sdpa_buffer_destroy(buf);
    tproblem_free(&got);
    tproblem_free(&want);
    return true;
}

START_TEST(kv_len_clamped)
{
    sdpa_context *ctx = tbackend_ctx(_i, "kv_len_clamped");
    if (!ctx) return;
    sdpa_context *ref = tcontext(SDPA_BACKEND_REFERENCE, NULL);
    ck_assert_ptr_nonnull(ref);
    const int32_t values[] = {-5, 0, KSKV, KSKV + 1, 1000000};
    for (size_t k = 0; k < sizeof k_paths / sizeof k_paths[0]; k++)
        for (size_t n = 0; n < sizeof values / sizeof values[0]; n++)
            if (!kv_len_run(ctx, ref, _i, &k_paths[k], values[n])) break;
    sdpa_context_destroy(ref);
    sdpa_context_destroy(ctx);
}
END_TEST

/* ---- softcap over the whole accepted range -------------------------------- */

START_TEST(softcap_range)
{
    sdpa_context *ctx = tbackend_ctx(_i, "softcap_range");
    if (!ctx) return;
    sdpa_context *ref = tcontext(SDPA_BACKEND_REFERENCE, NULL);
    ck_assert_ptr_nonnull(ref);
    const double caps[] = {1e-3, 0.1, 0.7, 3, 20, 1e3, 1e6, 1e12, 1e20, 1e30, 3e38, FLT_MAX};
    for (size_t k = 0; k < sizeof k_paths / sizeof k_paths[0]; k++) {
        sdpa_tile_config tc;
        sdpa_plan_options po = path_opts(&k_paths[k], &tc);
        for (size_t n = 0; n < sizeof caps / sizeof caps[0]; n++) {
            char name[96];
            snprintf(name, sizeof name, "softcap %g, %s path on %s", caps[n], k_paths[k].name,
                     sdpa_backend_name(tkinds(_i)));
            tcase c;
            tcase_init(&c, name, 1, 2, 2, k_paths[k].Sq == 1 ? 1 : 7, 37, 16, 16);
            c.softcap = caps[n];
            c.input_scale = 2.5; /* scores ~ +-10: every branch of tanh(s / c) */
            c.window_right = 0;
            c.lse = true;
            c.seed = 5;
            tproblem probe;
            tproblem_make(&probe, &c);
            bool ok = path_supported(ctx, &probe, &po);
            tproblem_free(&probe);
            if (!ok) break;
            if (k_paths[k].backward)
                tparity_backward(ctx, ref, &c, &po);
            else
                tparity_forward(ctx, ref, &c, &po);
        }
    }
    sdpa_context_destroy(ref);
    sdpa_context_destroy(ctx);
}
END_TEST

/* ---- scalar attributes at the ends of their range ------------------------- */

typedef struct attr_case {
    const char *name;
    double scale, softcap, eps;
    sdpa_diagonal diagonal;
    int64_t off, left, right;
    /* |q|, |k| entries in [1.1e-19, 1.65e-19]: every product q_d k_d is a
     * normal f32 and scale FLT_MAX makes scores of a few tens. Forward only:
     * the backward forms dS * scale, which overflows f32 here (the
     * intermediate bound of docs/semantics.md). */
    bool tiny_qk;
} attr_case;

START_TEST(scalar_attr_limits)
{
    sdpa_context *ctx = tbackend_ctx(_i, "scalar_attr_limits");
    if (!ctx) return;
    sdpa_context *ref = tcontext(SDPA_BACKEND_REFERENCE, NULL);
    ck_assert_ptr_nonnull(ref);
    const int64_t big = ((int64_t)1 << 62) - 1;
    const attr_case cases[] = {
        {"scale FLT_MIN", FLT_MIN, 0, 1e-6, SDPA_DIAGONAL_TOP_LEFT, 0, -1, -1, false},
        {"scale FLT_MAX", FLT_MAX, 0, 1e-6, SDPA_DIAGONAL_TOP_LEFT, 0, -1, -1, true},
        {"softcap FLT_MIN", SDPA_SCALE_DEFAULT, FLT_MIN, 1e-6, SDPA_DIAGONAL_TOP_LEFT, 0, -1,
         -1, false},
        {"eps FLT_MIN", SDPA_SCALE_DEFAULT, 0, FLT_MIN, SDPA_DIAGONAL_TOP_LEFT, 0, -1, -1,
         false},
        {"eps FLT_MAX", SDPA_SCALE_DEFAULT, 0, FLT_MAX, SDPA_DIAGONAL_TOP_LEFT, 0, -1, -1,
         false},
        {"offset 2^62-1", SDPA_SCALE_DEFAULT, 0, 1e-6, SDPA_DIAGONAL_EXPLICIT, big, big, 0,
         false},
        {"offset -(2^62-1)", SDPA_SCALE_DEFAULT, 0, 1e-6, SDPA_DIAGONAL_EXPLICIT, -big, 0,
         big, false},
        {"windows 2^62-1", SDPA_SCALE_DEFAULT, 0, 1e-6, SDPA_DIAGONAL_BOTTOM_RIGHT, 0, big,
         big, false},
    };
    for (size_t n = 0; n < sizeof cases / sizeof cases[0]; n++) {
        const attr_case *a = &cases[n];
        char name[96];
        snprintf(name, sizeof name, "%s on %s", a->name, sdpa_backend_name(tkinds(_i)));
        tcase c;
        tcase_init(&c, name, 1, 2, 1, 6, 9, 16, 8);
        c.lse = true;
        c.seed = 17;
        c.diagonal = a->diagonal;
        c.diagonal_offset = a->off;
        c.window_left = a->left;
        c.window_right = a->right;
        /* the norm is where eps matters; a zero q row divides by sqrt(eps) */
        c.qk_norm = a->eps != 1e-6 ? SDPA_QK_NORM_RMS : SDPA_QK_NORM_NONE;
        tproblem got, want;
        tproblem_make(&got, &c);
        tproblem_make(&want, &c);
        for (tproblem *p = &got; p; p = p == &got ? &want : NULL) {
            p->desc.scale = a->scale;
            p->desc.softcap = a->softcap;
            p->desc.qk_norm_eps = a->eps;
            float *q = p->q, *k = p->k;
            if (c.qk_norm != SDPA_QK_NORM_NONE) memset(q, 0, (size_t)c.D * sizeof *q);
            for (size_t e = 0; a->tiny_qk && e < p->n_q; e++)
                q[e] = copysignf(1.1e-19f * (1.0f + 0.25f * fminf(fabsf(q[e]), 2.0f)), q[e]);
            for (size_t e = 0; a->tiny_qk && e < p->n_k; e++)
                k[e] = copysignf(1.1e-19f * (1.0f + 0.25f * fminf(fabsf(k[e]), 2.0f)), k[e]);
        }
        trun_problem(ctx, &got, !a->tiny_qk, NULL);
        trun_problem(ref, &want, !a->tiny_qk, NULL);
        texpect_parity(&got, &want, !a->tiny_qk);
        tproblem_free(&got);
        tproblem_free(&want);
    }
    sdpa_context_destroy(ref);
    sdpa_context_destroy(ctx);
}
END_TEST

/* ---- |v| near FLT_MAX / Skv ----------------------------------------------- */

enum { VSQ = 4, VSKV = 8, VD = 16, VDV = 8 };

/* Runs q = 0 (uniform p = 1 / Skv) with v column 0 = top * (1 + j) / Skv
 * and checks out / lse against the reference. Below the documented bound
 * (Skv max|v| <= FLT_MAX / 2) everything must match; past it column 0 may be
 * non-finite, every other output must still match. Returns how many outputs
 * of column 0 were non-finite. */
static int v_overflow_run(sdpa_context *ctx, sdpa_context *ref, int kind, float top,
                          bool within)
{
    tcase c;
    tcase_init(&c, "v_overflow", 1, 1, 1, VSQ, VSKV, VD, VDV);
    c.lse = true;
    c.seed = 3;
    tproblem got, want;
    tproblem_make(&got, &c);
    tproblem_make(&want, &c);
    for (tproblem *p = &got; p; p = p == &got ? &want : NULL) {
        memset(p->q, 0, p->n_q * sizeof(float));
        for (int j = 0; j < VSKV; j++)
            ((float *)p->v)[j * VDV] = top * ((float)(1 + j) / (float)VSKV);
    }
    trun_problem(ctx, &got, false, NULL);
    trun_problem(ref, &want, false, NULL);
    int nonfinite = 0;
    for (size_t e = 0; e < got.n_out; e++) {
        double g = ((float *)got.out)[e], w = ((float *)want.out)[e];
        ck_assert_msg(isfinite(w), "reference out[%zu] = %g", e, w);
        if (!within && e % VDV == 0 && !isfinite(g)) {
            nonfinite++;
            continue;
        }
        ck_assert_msg(fabs(g - w) <= 1e-5 * fabs(w) + 1e-4,
                      "v top %g on %s: out[%zu] = %.9g, reference %.9g", (double)top,
                      sdpa_backend_name(tkinds(kind)), e, g, w);
    }
    for (int i = 0; i < VSQ; i++)
        ck_assert_msg(fabs(got.lse[i] - log((double)VSKV)) <= 1e-6, "lse[%d] = %g", i,
                      got.lse[i]);
    tproblem_free(&got);
    tproblem_free(&want);
    return nonfinite;
}

START_TEST(v_magnitude_bound)
{
    sdpa_context *ctx = tbackend_ctx(_i, "v_magnitude_bound");
    if (!ctx) return;
    sdpa_context *ref = tcontext(SDPA_BACKEND_REFERENCE, NULL);
    ck_assert_ptr_nonnull(ref);
    v_overflow_run(ctx, ref, _i, FLT_MAX / (2.0f * VSKV), true);
    int n = v_overflow_run(ctx, ref, _i, FLT_MAX / 2.0f, false);
    if (tkinds(_i) == SDPA_BACKEND_REFERENCE) ck_assert_int_eq(n, 0);
    printf("v_magnitude_bound on %s: past the bound, %d of %d outputs of the column "
           "non-finite\n", sdpa_backend_name(tkinds(_i)), n, VSQ);
    sdpa_context_destroy(ref);
    sdpa_context_destroy(ctx);
}
END_TEST

/* ---- optional capabilities: computed, or refused by name ------------------- */

enum { CB = 2, CH = 2, CHK = 1, CSQ = 3, CSK = 40, CD = 32, CPG = 8, CT = CSK / CPG,
       CP = CB * CT };

START_TEST(capabilities_computed_or_named)
{
    sdpa_context *ctx = tbackend_ctx(_i, "capabilities_computed_or_named");
    if (!ctx) return;
    sdpa_context *ref = tcontext(SDPA_BACKEND_REFERENCE, NULL);
    ck_assert_ptr_nonnull(ref);
    const sdpa__backend *be = sdpa__backend_get(tkinds(_i));
    trng r;
    trng_seed(&r, 19);
    static float q[CB * CH * CSQ * CD], k[CB * CHK * CSK * CD], v[CB * CHK * CSK * CD],
        out[CB * CH * CSQ * CD], want[CB * CH * CSQ * CD], lse[CB * CH * CSQ], slopes[CH],
        sinks[CH];
    static uint16_t kh[CB * CHK * CSK * CD], vh[CB * CHK * CSK * CD];
    static uint8_t kq[CB * CHK * CSK * CD / 32 * 34], vq[CB * CHK * CSK * CD / 32 * 34];
    static int32_t table[CB * CT], lens[CB] = {CSK, CSK - 11};
    for (size_t e = 0; e < sizeof q / sizeof *q; e++) q[e] = (float)trng_normal(&r);
    for (size_t e = 0; e < sizeof k / sizeof *k; e++) {
        k[e] = (float)trng_normal(&r);
        v[e] = (float)trng_normal(&r);
        kh[e] = sdpa__f32_to_f16(k[e]);
        vh[e] = sdpa__f32_to_f16(v[e]);
    }
    for (size_t e = 0; e < sizeof kq; e++) kq[e] = vq[e] = (uint8_t)(trng_next(&r) >> 40);
    for (size_t blk = 0; blk < sizeof kq / 34; blk++) { /* finite f16 scales */
        const uint16_t d = sdpa__f32_to_f16(0.01f * (float)(blk % 5 + 1));
        memcpy(kq + 34 * blk, &d, 2);
        memcpy(vq + 34 * blk, &d, 2);
    }
    for (int e = 0; e < CB * CT; e++) table[e] = (e * 3 + 1) % CP;
    for (int h = 0; h < CH; h++) {
        slopes[h] = 0.25f * (float)(h + 1);
        sinks[h] = (float)h - 0.5f;
    }
    /* scenario -> the capabilities it needs, in capabilities.h's order */
    static const char *const names[] = {"alibi", "sinks", "f16 K/V", "q8_0 K/V", "paged",
                                        "alibi backward", "sinks backward"};
    const unsigned needs[] = {SDPA__FEAT_ALIBI, SDPA__FEAT_SINKS, SDPA__FEAT_KV_DTYPE,
                              SDPA__FEAT_KV_DTYPE | SDPA__FEAT_KV_BLOCK, SDPA__FEAT_PAGED,
                              SDPA__FEAT_ALIBI | SDPA__FEAT_ALIBI_BACKWARD,
                              SDPA__FEAT_SINKS | SDPA__FEAT_SINKS_BACKWARD};
    for (int sc = 0; sc < (int)(sizeof needs / sizeof *needs); sc++) {
        sdpa_attention_desc d;
        sdpa_attention_desc_init(&d);
        sdpa_attention_desc_set_causal(&d, SDPA_DIAGONAL_BOTTOM_RIGHT);
        sdpa_forward_tensors *t = &d.tensors;
        t->q = sdpa_tensor_host(q, SDPA_DTYPE_F32, CB, CH, CSQ, CD);
        t->k = sdpa_tensor_host(k, SDPA_DTYPE_F32, CB, CHK, CSK, CD);
        t->v = sdpa_tensor_host(v, SDPA_DTYPE_F32, CB, CHK, CSK, CD);
        t->lse = sdpa_tensor_host(lse, SDPA_DTYPE_F32, CB, CH, CSQ, 1);
        if (needs[sc] & SDPA__FEAT_ALIBI)
            t->alibi_slopes = sdpa_tensor_host(slopes, SDPA_DTYPE_F32, 1, CH, 1, 1);
        if (needs[sc] & SDPA__FEAT_SINKS)
            t->sinks = sdpa_tensor_host(sinks, SDPA_DTYPE_F32, 1, CH, 1, 1);
        if (needs[sc] == SDPA__FEAT_KV_DTYPE) {
            t->k = sdpa_tensor_host(kh, SDPA_DTYPE_F16, CB, CHK, CSK, CD);
            t->v = sdpa_tensor_host(vh, SDPA_DTYPE_F16, CB, CHK, CSK, CD);
        }
        if (needs[sc] & SDPA__FEAT_KV_BLOCK) {
            t->k = sdpa_tensor_host(kq, SDPA_DTYPE_Q8_0, CB, CHK, CSK, CD);
            t->v = sdpa_tensor_host(vq, SDPA_DTYPE_Q8_0, CB, CHK, CSK, CD);
        }
        if (needs[sc] & SDPA__FEAT_PAGED) { /* the same arrays as a pool of CP pages */
            t->k.dtype = t->v.dtype = SDPA_DTYPE_NONE;
            t->k_pages = sdpa_tensor_host(k, SDPA_DTYPE_F32, CP, CHK, CPG, CD);
            t->v_pages = sdpa_tensor_host(v, SDPA_DTYPE_F32, CP, CHK, CPG, CD);
            t->block_table = sdpa_tensor_host(table, SDPA_DTYPE_I32, CB, 1, 1, CT);
            t->kv_len = sdpa_tensor_host(lens, SDPA_DTYPE_I32, CB, 1, 1, 1);
        }
        const bool backward = needs[sc] & (SDPA__FEAT_ALIBI_BACKWARD | SDPA__FEAT_SINKS_BACKWARD);
        sdpa_plan_options po;
        sdpa_plan_options_init(&po);
        if (backward) po.flags = SDPA_PLAN_BACKWARD;
        sdpa_plan *plan = NULL;
        t->out = sdpa_tensor_host(want, SDPA_DTYPE_F32, CB, CH, CSQ, CD);
        ck_assert_int_eq(sdpa_attention_forward(ref, &d), SDPA_OK);
        t->out = sdpa_tensor_host(out, SDPA_DTYPE_F32, CB, CH, CSQ, CD);
        sdpa_status st = sdpa_plan_create(ctx, &d, &po, &plan);
        const unsigned missing = needs[sc] & ~be->features;
        if (missing) {
            int first = __builtin_ctz(missing);
            sdpa_error_info info;
            ck_assert_msg(st == SDPA_ERR_UNSUPPORTED, "%s: %s lacks %s but got %s", names[sc],
                          be->name, sdpa__feature_name(first), sdpa_status_name(st));
            ck_assert_int_eq(sdpa_context_last_error(ctx, &info), SDPA_OK);
            ck_assert_msg(strstr(info.message, sdpa__feature_name(first)) != NULL,
                          "%s: message '%s' does not name %s", names[sc], info.message,
                          sdpa__feature_name(first));
            ck_assert_ptr_null(plan);
            fprintf(stderr, "note: %s: %s: unsupported (%s)\n", be->name, names[sc],
                    info.message);
            continue;
        }
        ck_assert_msg(st == SDPA_OK, "%s on %s: %s", names[sc], be->name, sdpa_status_name(st));
        for (size_t e = 0; e < sizeof out / sizeof *out; e++) out[e] = NAN;
        ck_assert_int_eq(sdpa_plan_forward(plan, t), SDPA_OK);
        ck_assert_int_eq(sdpa_context_finish(ctx), SDPA_OK);
        for (size_t e = 0; e < sizeof out / sizeof *out; e++)
            ck_assert_msg(fabsf(out[e] - want[e]) <= 2e-4f * (1 + fabsf(want[e])),
                          "%s on %s: out[%zu] %g vs %g", names[sc], be->name, e, out[e],
                          want[e]);
        sdpa_plan_destroy(plan);
    }
    sdpa_context_destroy(ref);
    sdpa_context_destroy(ctx);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("badinput");
    TCase *t = tcase_create("badinput");
    tcase_set_timeout(t, 600);
    tcase_add_loop_test(t, kv_len_clamped, 0, TKINDS);
    tcase_add_loop_test(t, softcap_range, 0, TKINDS);
    tcase_add_loop_test(t, scalar_attr_limits, 0, TKINDS);
    tcase_add_loop_test(t, v_magnitude_bound, 0, TKINDS);
    tcase_add_loop_test(t, capabilities_computed_or_named, 0, TKINDS);
    suite_add_tcase(s, t);
    return trun_suite(s);
}
